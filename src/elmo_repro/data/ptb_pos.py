r"""Gold part-of-speech tags of Penn Treebank WSJ trees, for the POS probe (paper §5.3, Table 6).

The mirror holds NLTK's 10% sample of PTB-3 WSJ (``ptb_wsj_sample_nltk/corpora/treebank.zip``:
``treebank/combined/wsj_0001.mrg`` .. ``wsj_0199.mrg``, 3,914 trees). Each tree's leaves are
``(TAG word)``; ``-NONE-`` leaves are traces and empty elements, not words, and are dropped (94,084
tokens remain). The full PTB-3 (LDC99T42) has the same ``.mrg`` layout under ``wsj/<section>/``.

The sample covers WSJ sections 00-01 only, so the paper's split (sections 0-18 / 19-21 / 22-24)
does not exist here; :func:`split_documents` splits by document instead (:data:`DEFAULT_SPLIT`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from ..io import InputError
from .lm_corpus import _zip_members, read_member

_LEAF = re.compile(r"\(([^()\s]+) ([^()\s]+)\)")
_MEMBER = re.compile(r"treebank/combined/wsj_\d+\.mrg")

# WSJ document number ranges (inclusive) of each split of the sample, whole documents in file
# order: 3,167 / 358 / 389 sentences (81 / 9 / 10%).
DEFAULT_SPLIT = {"train": (1, 142), "dev": (143, 172), "test": (173, 199)}

# PTB escapes brackets and slashes; the biLM read running text with the plain characters
_UNESCAPE = {"-LRB-": "(", "-RRB-": ")", "-LCB-": "{", "-RCB-": "}", "-LSB-": "[", "-RSB-": "]"}


@dataclass(frozen=True)
class TaggedSentence:
    location: str            # archive member and the tree's first line, e.g. ``.../wsj_0001.mrg:2``
    document: int            # the WSJ document number (wsj_0001 -> 1)
    words: list[str]         # as written in the treebank (``-LRB-``, ``1\/2``)
    tags: list[str]


def _tree_files(path: Path) -> Iterator[tuple[str, str]]:
    """``(location, text)`` of each ``wsj_*.mrg``: the members of the NLTK sample's zip, or the
    files under a directory (the full treebank's ``parsed/mrg/wsj``), in name order."""
    if path.is_dir():
        files = sorted(path.rglob("wsj_*.mrg"), key=lambda f: f.name)
        if not files:
            raise InputError(path, "no wsj_*.mrg file under this directory (PTB trees)")
        for file in files:
            try:
                yield str(file), file.read_text(encoding="utf-8")
            except UnicodeDecodeError as err:
                raise InputError(file, f"not valid UTF-8 (byte {err.start})") from None
        return
    archive, members = _zip_members(path, _MEMBER, "PTB trees (treebank/combined/wsj_*.mrg)")
    with archive:
        for member in members:
            try:
                yield f"{path}/{member}", read_member(archive, member).decode("utf-8")
            except UnicodeDecodeError as err:
                raise InputError(f"{path}/{member}", f"not valid UTF-8 (byte {err.start})") from None


def iter_tagged_trees(path: str | Path) -> Iterator[TaggedSentence]:
    """Every tree of the ``wsj_*.mrg`` files, in order, without ``-NONE-`` leaves.

    Args:
        path: the NLTK sample's ``treebank.zip`` (``treebank/combined/wsj_*.mrg``) or a directory
            holding ``wsj_*.mrg`` files at any depth (the full Penn Treebank).

    Raises:
        InputError: a missing or invalid zip or directory, no ``.mrg`` file, unbalanced brackets
            (naming the file and line), or a tree with no word.
    """
    for where, text in _tree_files(Path(path)):
        document = int(re.findall(r"wsj_(\d+)", where)[-1])
        # A tree starts at a line opening at bracket depth 0; it ends where the depth is 0 again.
        depth, words, tags, start = 0, [], [], 0
        for number, line in enumerate(text.splitlines(), start=1):
            if depth == 0 and line.strip():
                start = number
            for tag, word in _LEAF.findall(line):
                if tag != "-NONE-":
                    words.append(word)
                    tags.append(tag)
            depth += line.count("(") - line.count(")")
            if depth < 0:
                raise InputError(where, "unbalanced brackets: ')' closes no tree", line=number)
            if depth == 0 and line.strip():
                if not words:
                    raise InputError(where, "a tree with no word", line=start)
                yield TaggedSentence(f"{where}:{start}", document, words, tags)
                words, tags = [], []
        if depth != 0:
            raise InputError(where, "unbalanced brackets: the last tree is not closed")


def bilm_word(word: str) -> str:
    r"""The word as running text spells it: ``-LRB-`` -> ``(``, ``1\/2`` -> ``1/2``, ``\*`` -> ``*``."""
    return _UNESCAPE.get(word, word.replace("\\/", "/").replace("\\*", "*"))


def split_documents(sentences: list[TaggedSentence], split: dict[str, tuple[int, int]] = DEFAULT_SPLIT
                    ) -> dict[str, list[TaggedSentence]]:
    """The sentences of each split by document number ranges (inclusive, not overlapping).

    Raises:
        ValueError: overlapping ranges, or a document in no range.
    """
    ranges = sorted(split.values())
    if any(a[1] >= b[0] for a, b in zip(ranges, ranges[1:])):
        raise ValueError(f"document ranges overlap: {split}")
    parts: dict[str, list[TaggedSentence]] = {name: [] for name in split}
    for sentence in sentences:
        name = next((n for n, (lo, hi) in split.items() if lo <= sentence.document <= hi), None)
        if name is None:
            raise ValueError(f"{sentence.location}: document {sentence.document} is in no split {split}")
        parts[name].append(sentence)
    return parts
