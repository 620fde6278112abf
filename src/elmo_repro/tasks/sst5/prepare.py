"""SST-5 trees -> one JSON example per line (stage ``prepare_sst5``).

Reads ``sst5/trees/{train,dev,test}.txt`` from the data mirror (:mod:`.reader`) and writes
``<out_dir>/{train,dev,test}.jsonl``, one ``{"text_ids": {"tokens": id}, "label"}`` object per
example (label 0-4), and each split's unique token sequences to ``<split>.texts.jsonl``
(:mod:`elmo_repro.data.examples`).

Dev and test hold one example per sentence (the root label: the paper reports sentence-level
accuracy); train holds one per sentence, or with ``tasks.sst5.data.phrases`` one per phrase (every
subtree, each embedded by the biLM on its own).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from ...data.examples import write_split
from .reader import read_trees

SPLITS = ("train", "dev", "test")


def prepare(cfg: dict[str, Any], mirror: Path, out_dir: Path) -> dict[str, int]:
    """Convert the three files (``cfg``: ``tasks.sst5.data``); returns the examples, tokens,
    unique texts and per-label counts of each split.

    Raises:
        InputError: a missing or malformed tree file (its path and line).
    """
    stats: dict[str, int] = {}
    for split in SPLITS:
        examples = read_trees(mirror / "sst5" / "trees" / f"{split}.txt", subtrees=cfg["phrases"] and split == "train")
        stats[f"{split}_texts"] = write_split(out_dir, split, examples, ("tokens",))["texts"]
        stats[f"{split}_examples"] = len(examples)
        stats[f"{split}_tokens"] = sum(len(e["tokens"]) for e in examples)
        for label, count in sorted(Counter(e["label"] for e in examples).items()):
            stats[f"{split}_label_{label}"] = count
    return stats


def summary(stats: dict[str, int]) -> str:
    """One log line of the counts."""
    return ", ".join(f"{split} {stats[f'{split}_examples']} examples" for split in SPLITS)
