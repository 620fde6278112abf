"""SNLI pairs -> one JSON example per line (stage ``prepare_snli``).

Writes ``<out_dir>/{train,dev,test}.jsonl``, one ``{"text_ids": {"premise": id, "hypothesis": id},
"label"}`` object per pair, and each split's unique sentences (premises and hypotheses together; a
premise has ~3 hypotheses) to ``<split>.texts.jsonl`` (:mod:`elmo_repro.data.examples`: the features
stage embeds each once). Where the splits come from is ``tasks.snli.data.train_from``:

* ``dev`` (the mirror, which has no training split): train = SNLI dev minus a selection slice,
  dev = that slice, the pairs of ``selection_premises`` premises chosen by a fixed hash of the
  premise text (:func:`.reader.split_by_premise`: no premise on both sides), test = SNLI
  test. The "dev" numbers of this profile are that slice, not SNLI dev.
* ``official``: ``snli/snli_1.0/snli_1.0_{train,dev,test}.jsonl`` (``python -m elmo_repro.fetch
  --only snli``), pairs without a gold label dropped.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from ...data.examples import write_split
from .reader import read_jsonl, read_line_files, split_by_premise


def splits(snli_dir: Path, train_from: str, selection_premises: int) -> dict[str, list[dict]]:
    """The three splits (see the module doc)."""
    if train_from == "official":
        return {split: read_jsonl(snli_dir / "snli_1.0" / f"snli_1.0_{split}.jsonl")
                for split in ("train", "dev", "test")}
    line_files = snli_dir / "esnli_infersent_format"
    train, selection = split_by_premise(read_line_files(line_files, "dev"), selection_premises)
    return {"train": train, "dev": selection, "test": read_line_files(line_files, "test")}


def prepare(cfg: dict[str, Any], mirror: Path, out_dir: Path) -> dict[str, int]:
    """Write the three splits (``cfg``: ``tasks.snli.data``); returns each split's pairs,
    premises, unique sentences and per-label counts.

    Raises:
        InputError: a missing or malformed file (its path and line).
    """
    stats: dict[str, int] = {}
    for split, pairs in splits(mirror / "snli", cfg["train_from"], cfg["selection_premises"]).items():
        stats[f"{split}_texts"] = write_split(out_dir, split, pairs, ("premise", "hypothesis"))["texts"]
        stats[f"{split}_pairs"] = len(pairs)
        stats[f"{split}_premises"] = len({" ".join(p["premise"]) for p in pairs})
        stats.update({f"{split}_{label}": n for label, n in sorted(Counter(p["label"] for p in pairs).items())})
    return stats


def summary(stats: dict[str, int]) -> str:
    """One log line of the counts."""
    return ", ".join(f"{split} {stats[f'{split}_pairs']} pairs ({stats[f'{split}_premises']} premises, "
                     f"{stats[f'{split}_texts']} unique sentences)" for split in ("train", "dev", "test"))
