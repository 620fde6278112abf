"""Stage prepare_sst5: SST-5 trees -> one JSON example per line.

Reads ``sst5/trees/{train,dev,test}.txt`` from the data mirror (``elmo_repro.data.sst``) and writes
``data/sst5/{train,dev,test}.jsonl``, one ``{"text_ids": {"tokens": id}, "label"}`` object per
example (label 0-4), and each split's unique token sequences to ``<split>.texts.jsonl``
(``elmo_repro.data.examples``).
Dev and test hold one example per sentence (the root label: the paper reports sentence-level
accuracy); train holds one per sentence, or with ``tasks.sst5.data.phrases`` one per phrase (every
subtree, each embedded by the biLM on its own). Counts go to ``results/metrics/sst5_data.json``.
"""

from collections import Counter
from pathlib import Path

from elmo_repro.console import log
from elmo_repro.data.examples import write_split
from elmo_repro.data.sst import read_trees
from elmo_repro.io import write_json
from elmo_repro.params import load_params, mirror_path
from elmo_repro.tracking import stage_run
from stages import stage_args

SECTIONS = ["data", "tasks.sst5.data"]
OUT_DIR = Path("data/sst5")
STATS = Path("results/metrics/sst5_data.json")


def prepare(trees_dir: Path, phrases: bool, out_dir: Path = OUT_DIR) -> dict[str, int]:
    """Convert the three files; return the examples, tokens and per-label counts of each split."""
    stats: dict[str, int] = {}
    for split in ("train", "dev", "test"):
        examples = read_trees(trees_dir / f"{split}.txt", subtrees=phrases and split == "train")
        stats[f"{split}_texts"] = write_split(out_dir, split, examples, ("tokens",))["texts"]
        stats[f"{split}_examples"] = len(examples)
        stats[f"{split}_tokens"] = sum(len(e["tokens"]) for e in examples)
        for label, count in sorted(Counter(e["label"] for e in examples).items()):
            stats[f"{split}_label_{label}"] = count
    return stats


def main(argv: list[str] | None = None) -> None:
    stage_args(__doc__, argv)
    params = load_params()
    with stage_run("prepare_sst5", params, SECTIONS) as run:
        stats = prepare(mirror_path(params, "sst5", "trees"), params["tasks"]["sst5"]["data"]["phrases"])
        write_json(STATS, stats)
        run.log_metrics(stats)
        log("[prepare_sst5] " + ", ".join(f"{split} {stats[f'{split}_examples']} examples"
                                          for split in ("train", "dev", "test")))


if __name__ == "__main__":
    main()
