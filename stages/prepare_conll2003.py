"""Stage prepare_conll2003: CoNLL-2003 English NER files -> one JSON sentence per line.

Reads ``conll2003/eng.{train,testa,testb}`` from the data mirror (original 4-column IOB1 files,
see ``elmo_repro.data.conll``); writes ``data/conll2003/{train,dev,test}.jsonl`` with one
``{"text_ids": {"tokens": id}, "pos", "chunk", "ner"}`` object per sentence in file order, and
each split's unique sentences to ``<split>.texts.jsonl`` (``elmo_repro.data.examples``: the
features stage embeds each once). A sentence's line index is its index everywhere downstream. Sentence, token and
entity counts per split are logged as MLflow metrics (they equal the official statistics).
"""

from pathlib import Path

from elmo_repro.console import log
from elmo_repro.data.conll import read_conll2003, split_stats
from elmo_repro.data.examples import write_split
from elmo_repro.params import load_params, mirror_path
from elmo_repro.tracking import stage_run
from stages import stage_args

SECTIONS = ["data"]
OUT_DIR = Path("data/conll2003")
FILES = {"train": "eng.train", "dev": "eng.testa", "test": "eng.testb"}


def prepare(source_dir: Path, out_dir: Path = OUT_DIR) -> dict[str, dict[str, int]]:
    """Convert the three files; return each split's counts (see ``split_stats``) and its number of
    unique sentences (``texts``)."""
    stats = {}
    for split, name in FILES.items():
        sentences = read_conll2003(source_dir / name)
        written = write_split(out_dir, split, sentences, ("tokens",))
        stats[split] = {**split_stats(sentences), "texts": written["texts"]}
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
                f"{counts['entities']} entities, {counts['texts']} unique sentences")


if __name__ == "__main__":
    main()
