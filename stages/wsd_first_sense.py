"""Stage wsd_first_sense: Table 5's WordNet first-sense row (paper §5.3).

Every test word of ``probes.wsd.test`` takes the first WordNet 3.0 sense (``probes.wordnet``) of
its lemma and POS (:func:`elmo_repro.probes.wsd.first_sense_baseline`); the training sets only
define which instances count as seen, so its seen-sense F1 is on the layers' rows' instances.
Writes ``results/probes/wsd/wordnet/first_sense.json`` and the answers to
``results/probes/predictions/wsd/wordnet/first_sense.json``.
"""

from elmo_repro.io import write_json
from elmo_repro.params import load_params
from elmo_repro.probes.corpora import answers_by_id, correct_bits, wsd_datasets
from elmo_repro.probes.wordnet import read_first_senses
from elmo_repro.probes.wsd import first_sense_baseline
from elmo_repro.tracking import stage_run
from stages import stage_args

SECTIONS = ["data", "probes.wordnet", "probes.wsd"]
OUT = "results/probes/wsd/wordnet/first_sense.json"
ANSWERS = "results/probes/predictions/wsd/wordnet/first_sense.json"


def main(argv: list[str] | None = None) -> None:
    stage_args(__doc__, argv)
    params = load_params()
    with stage_run("wsd_first_sense", params, SECTIONS) as run:
        first_senses = read_first_senses(params["probes"]["wordnet"])
        train, test = wsd_datasets(params, "train"), wsd_datasets(params, "test")
        metrics, answers = first_sense_baseline([i for d in train.values() for i in d.instances],
                                                {name: d.instances for name, d in test.items()}, first_senses)
        write_json(OUT, {"row": "WordNet first sense", "source": "wordnet", "layer": None,
                         "train": list(train), "test": list(test), "metrics": metrics,
                         "correct": correct_bits(test, answers)})
        write_json(ANSWERS, answers_by_id(test, answers))
        run.log_metrics(metrics)


if __name__ == "__main__":
    main()
