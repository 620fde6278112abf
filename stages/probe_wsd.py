"""Stage probe_wsd@<source>: Table 5's rows of one layer source, word sense disambiguation by
1-nearest-neighbour per layer (paper §5.3), ``python -m stages.probe_wsd --source <bilm|cove>``.

For each layer of ``probes.sources.<source>.layers``: a sense's vector is the mean of its training
tokens' vectors (the ``probes.wsd.train`` data sets; a multi-word target's vector is the mean over
its words); a test word takes the nearest training sense
of its lemma and POS by cosine, else the WordNet 3.0 first sense (``probes.wordnet``)
(:mod:`elmo_repro.probes.wsd`). Reads ``data/features/probes/<source>/wsd/``; writes
``results/probes/wsd/<source>/layer<L>.json`` per layer: F1 per test set, overall and on the
instances whose gold sense was seen in training and how each answer was made; the answers (sense
keys by instance id) go to ``results/probes/predictions/wsd/<source>/layer<L>.json``.
"""


import torch

from elmo_repro.io import InputError, write_json
from elmo_repro.params import load_params
from elmo_repro.probes.corpora import (answers_by_id, correct_bits, layer_name, probe_source, read_layer, wsd_datasets,
                                       wsd_feature_path)
from elmo_repro.probes.wordnet import read_first_senses
from elmo_repro.probes.wsd import evaluate_layer
from elmo_repro.tracking import stage_run
from stages import stage_args, stage_parser

SECTIONS = ["data", "probes.wordnet", "probes.sources.${key}", "probes.wsd"]
OUT = "results/probes/wsd/{source}/layer{layer}.json"
ANSWERS = "results/probes/predictions/wsd/{source}/layer{layer}.json"


def instance_vectors(source: str, dataset, layer: int) -> torch.Tensor:
    """``(n_instances, dim)``: the layer's vector of each instance's target, the mean over its words
    for a multi-word target.

    Raises:
        InputError: a feature file whose sentences or their lengths are not the data set's.
    """
    path = wsd_feature_path(source, dataset.name)
    sentences = read_layer(path, source, layer)
    lengths = [len(s) for s in dataset.sentences]
    if [len(s) for s in sentences] != lengths:
        raise InputError(path, f"{len(sentences)} sentences of other lengths than {dataset.name}'s "
                         f"{len(lengths)}: re-run probe_features@{source}")
    return torch.stack([sentences[i.sentence][i.token:i.token + i.n_words].mean(0) for i in dataset.instances])


def main(argv: list[str] | None = None) -> None:
    parser = stage_parser(__doc__)
    parser.add_argument("--source", required=True, help="a key of params probes.sources (bilm or cove)")
    known = stage_args(parser, argv)
    params = load_params()
    entry = probe_source(params, known.source)
    sections = [section.replace("${key}", known.source) for section in SECTIONS]
    with stage_run(f"probe_wsd@{known.source}", params, sections) as run:
        first_senses = read_first_senses(params["probes"]["wordnet"])
        train, test = wsd_datasets(params, "train"), wsd_datasets(params, "test")
        for layer in entry["layers"]:
            train_vectors = torch.cat([instance_vectors(known.source, d, layer) for d in train.values()])
            train_instances = [i for d in train.values() for i in d.instances]
            metrics, answers = evaluate_layer(
                (train_vectors, train_instances),
                {name: (instance_vectors(known.source, d, layer), d.instances) for name, d in test.items()},
                first_senses)
            write_json(OUT.format(source=known.source, layer=layer), {
                "row": layer_name(known.source, layer), "source": known.source, "layer": layer,
                "train": list(train), "test": list(test), "metrics": metrics,
                "correct": correct_bits(test, answers)})
            write_json(ANSWERS.format(source=known.source, layer=layer), answers_by_id(test, answers))
            run.log_metrics({f"layer{layer}_{k}": v for k, v in metrics.items()})


if __name__ == "__main__":
    main()
