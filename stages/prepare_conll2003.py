"""Stage prepare_conll2003: CoNLL-2003 English NER files -> one JSON sentence per line.

Reads ``conll2003/eng.{train,testa,testb}`` from the data mirror (original 4-column IOB1 files,
see ``elmo_repro.data.conll``); writes ``data/conll2003/{train,dev,test}.jsonl`` with one
``{"tokens", "pos", "chunk", "ner"}`` object per sentence in file order. A sentence's line index
is its index everywhere downstream (ELMo feature files are keyed by it). Sentence, token and
entity counts per split are logged as MLflow metrics (they equal the official statistics).
"""

from pathlib import Path

from elmo_repro.console import log
from elmo_repro.data.conll import read_conll2003, split_stats, write_jsonl
from elmo_repro.io import atomic_open
from elmo_repro.params import load_params, mirror_path
from elmo_repro.tracking import stage_run
from stages import stage_args

SECTIONS = ["data"]
OUT_DIR = Path("data/conll2003")
FILES = {"train": "eng.train", "dev": "eng.testa", "test": "eng.testb"}


def prepare(source_dir: Path, out_dir: Path = OUT_DIR) -> dict[str, dict[str, int]]:
    """Convert the three files; return each split's counts (see ``split_stats``)."""
    stats = {}
    for split, name in FILES.items():
        sentences = read_conll2003(source_dir / name)
        with atomic_open(out_dir / f"{split}.jsonl") as handle:
            write_jsonl(handle, sentences)
        stats[split] = split_stats(sentences)
    return stats


def main(argv: list[str] | None = None) -> None:
    stage_args(__doc__, argv)
    params = load_params()
    with stage_run("prepare_conll2003", params, SECTIONS) as run:
        stats = prepare(mirror_path(params, "conll2003"))
        run.log_metrics({f"{split}_{key}": value for split, counts in stats.items()
                         for key, value in counts.items()})
        for split, counts in stats.items():
            log(f"[prepare_conll2003] {split}: {counts['sentences']} sentences, {counts['tokens']} tokens, "
                f"{counts['entities']} entities")


if __name__ == "__main__":
    main()
