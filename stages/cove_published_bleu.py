"""Stage cove_published_bleu: CoVe's test 2016 translations scored as published Multi30k scores are
(Moses-tokenized, lower-cased; :mod:`elmo_repro.cove.published_bleu`), beside the model's own
sacrebleu score in ``cove.md``.

Reads ``models/cove/test_2016.translations.de`` (stage train_cove, one detokenized line per test
pair) and ``data/multi30k/test.jsonl`` (the raw references); writes
``results/metrics/cove_published_bleu.json`` (BLEU, sacrebleu's score line and signature).
"""

from pathlib import Path

from elmo_repro.console import log
from elmo_repro.cove.published_bleu import tokenized_lowercased_bleu
from elmo_repro.data.examples import read_examples
from elmo_repro.io import InputError, write_json
from elmo_repro.params import load_params
from elmo_repro.tracking import stage_run
from stages import stage_args

SECTIONS: list[str] = []          # no params: a score of train_cove's translations
TRANSLATIONS = Path("models/cove/test_2016.translations.de")
TEST = Path("data/multi30k/test.jsonl")
OUT = Path("results/metrics/cove_published_bleu.json")


def main(argv: list[str] | None = None) -> None:
    stage_args(__doc__, argv)
    params = load_params()
    with stage_run("cove_published_bleu", params, SECTIONS) as run:
        if not TRANSLATIONS.is_file():
            raise InputError(TRANSLATIONS, "no translations: run stage train_cove")
        hypotheses = TRANSLATIONS.read_text(encoding="utf-8").split("\n")[:-1]
        references = [e["reference"] for e in read_examples(TEST, ("source", "target"), label_key="reference")]
        if len(hypotheses) != len(references):
            raise InputError(TRANSLATIONS, f"{len(hypotheses)} translations for the {len(references)} test pairs "
                                           f"of {TEST}: re-run train_cove")
        bleu, line, signature = tokenized_lowercased_bleu(hypotheses, references)
        write_json(OUT, {"test_bleu": bleu, "score": line, "signature": signature})
        run.log_metrics({"test_bleu_tokenized_lc": bleu})
        run.set_tags({"sacrebleu_signature": signature})
        log(f"[cove_published_bleu] test 2016 BLEU {bleu:.2f} tokenized, lower-cased ({signature})")


if __name__ == "__main__":
    main()
