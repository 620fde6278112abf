"""CoNLL-2003 English NER files -> one JSON sentence per line (stage ``prepare_conll2003``).

Reads ``conll2003/eng.{train,testa,testb}`` from the data mirror (the original 4-column IOB1 files,
:mod:`.reader`); writes ``<out_dir>/{train,dev,test}.jsonl`` with one ``{"text_ids": {"tokens": id},
"pos", "chunk", "ner"}`` object per sentence in file order, and each split's unique sentences to
``<split>.texts.jsonl`` (:mod:`elmo_repro.data.examples`: the features stage embeds each once). A
sentence's line index is its index everywhere downstream. The sentence, token and entity counts of
each split equal the official statistics.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ...data.examples import write_split
from .reader import read_conll2003, split_stats

FILES = {"train": "eng.train", "dev": "eng.testa", "test": "eng.testb"}


def prepare(cfg: dict[str, Any], mirror: Path, out_dir: Path) -> dict[str, int]:
    """Convert the three files under ``mirror``/conll2003 (``cfg``: the task's ``data`` section,
    which NER does not have); returns ``<split>_<count>`` for :func:`~.reader.split_stats`' counts
    and the unique sentences (``texts``).

    Raises:
        InputError: a missing or malformed file (its path and line).
    """
    stats: dict[str, int] = {}
    for split, name in FILES.items():
        sentences = read_conll2003(mirror / "conll2003" / name)
        written = write_split(out_dir, split, sentences, ("tokens",))
        stats.update({f"{split}_{key}": value for key, value in
                      {**split_stats(sentences), "texts": written["texts"]}.items()})
    return stats


def summary(stats: dict[str, int]) -> str:
    """One log line of the counts."""
    return "; ".join(f"{split}: {stats[f'{split}_sentences']} sentences, {stats[f'{split}_tokens']} tokens, "
                     f"{stats[f'{split}_entities']} entities, {stats[f'{split}_texts']} unique sentences"
                     for split in FILES)
