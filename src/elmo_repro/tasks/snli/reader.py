"""SNLI 1.0 (Bowman et al. 2015): premise-hypothesis pairs with a three-way label.

Two layouts are read:

* the InferSent line files of the mirror (``snli/esnli_infersent_format/{s1,s2,labels}.<split>``):
  premise, hypothesis and label on the same line number of three files, tokens separated by
  spaces; dev and test only, the pairs without a gold label already removed;
* the official JSONL (``snli_1.0_<split>.jsonl``, the paper profile): tokens are the leaves of
  ``sentence{1,2}_binary_parse`` (the tokenization of the line files); pairs whose ``gold_label``
  is ``-`` (no annotator majority) are dropped, as the official evaluation does.

Without the training split, :func:`split_by_premise` carves a training part and a selection slice
out of dev with no premise on both sides (three hypotheses share each premise).
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

from ...io import InputError, iter_lines

LABELS = ("entailment", "neutral", "contradiction")
NO_GOLD = "-"


def _lines(path: Path) -> list[tuple[int, str]]:
    return [(number, line.strip()) for number, line in iter_lines(path)]


def read_line_files(directory: str | os.PathLike, split: str) -> list[dict[str, Any]]:
    """Pairs ``{"premise", "hypothesis", "label"}`` of ``s1.<split>``, ``s2.<split>`` and
    ``labels.<split>``, in file order.

    Raises:
        InputError: a missing file; files of different lengths (naming both and their counts);
            naming the file and line, an empty sentence or a label outside entailment / neutral /
            contradiction.
    """
    directory = Path(directory)
    paths = [directory / f"{name}.{split}" for name in ("s1", "s2", "labels")]
    columns = [_lines(path) for path in paths]
    for path, column in zip(paths[1:], columns[1:]):
        if len(column) != len(columns[0]):
            raise InputError(path, f"has {len(column)} lines but {paths[0]} has {len(columns[0])}: "
                                   "the line files must be parallel")
    pairs = []
    for (number, premise), (_, hypothesis), (_, label) in zip(*columns):
        for path, text in ((paths[0], premise), (paths[1], hypothesis)):
            if not text:
                raise InputError(path, "empty sentence", line=number)
        if label not in LABELS:
            raise InputError(paths[2], f"unknown label {label!r}; expected one of {', '.join(LABELS)}",
                             line=number)
        pairs.append({"premise": premise.split(), "hypothesis": hypothesis.split(), "label": label})
    if not pairs:
        raise InputError(paths[0], "no pairs")
    return pairs


def parse_leaves(binary_parse: str) -> list[str]:
    """The tokens of an SNLI ``*_binary_parse`` string (its leaves: everything but brackets)."""
    return [token for token in binary_parse.split() if token not in ("(", ")")]


def read_jsonl(path: str | os.PathLike) -> list[dict[str, Any]]:
    """Pairs of an official ``snli_1.0_<split>.jsonl`` file, without the ``-`` (no gold label) ones.

    Raises:
        InputError: naming the file and line, for malformed JSON, a missing key, an empty
            sentence or an unknown label.
    """
    pairs = []
    for number, line in iter_lines(path):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
            label = record["gold_label"]
            premise = parse_leaves(record["sentence1_binary_parse"])
            hypothesis = parse_leaves(record["sentence2_binary_parse"])
        except json.JSONDecodeError as err:
            raise InputError(path, f"malformed JSON ({err.msg})", line=number) from None
        except (KeyError, TypeError, AttributeError) as err:
            raise InputError(path, f"missing or malformed key {err}", line=number) from None
        if label == NO_GOLD:
            continue
        if label not in LABELS:
            raise InputError(path, f"unknown gold_label {label!r}", line=number)
        if not premise or not hypothesis:
            raise InputError(path, "empty sentence", line=number)
        pairs.append({"premise": premise, "hypothesis": hypothesis, "label": label})
    if not pairs:
        raise InputError(path, "no labelled pairs")
    return pairs


def premise_key(pair: dict[str, Any]) -> str:
    """A fixed pseudo-random rank of a pair's premise (sha256 of its text): the selection slice
    does not depend on file order or on Python's hash seed."""
    return hashlib.sha256(" ".join(pair["premise"]).encode("utf-8")).hexdigest()


def split_by_premise(pairs: list[dict[str, Any]], n_premises: int
                     ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """``(rest, slice)``: the pairs of the ``n_premises`` premises ranked first by
    :func:`premise_key` form the slice, all other pairs the rest; both keep file order and no
    premise is on both sides.

    Raises:
        ValueError: ``n_premises`` not below the number of distinct premises (nothing would remain).
    """
    keys = [premise_key(p) for p in pairs]                       # one hash per pair
    premises = sorted(set(keys))
    if not 0 < n_premises < len(premises):
        raise ValueError(f"selection premises must be in 1..{len(premises) - 1}, got {n_premises}")
    chosen = set(premises[:n_premises])
    rest, selection = [], []
    for pair, key in zip(pairs, keys):
        (selection if key in chosen else rest).append(pair)
    return rest, selection
