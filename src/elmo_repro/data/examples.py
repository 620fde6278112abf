"""Prepared task splits: the texts a biLM embeds, and the examples that point at them.

A split of a task is two JSONL files in ``data/<task>/``:

* ``<split>.texts.jsonl``: the split's unique token sequences (sentences, paragraphs), one
  ``{"id": i, "tokens": [...]}`` a line, ``i`` = the line index. The features stage embeds each
  text once, keyed by its id, however many examples share it (SNLI: ~3 hypotheses per premise;
  SRL: one example per predicate; SQuAD: one per question).
* ``<split>.jsonl``: one example a line (the line index is the example index: a blank line is an
  error, never skipped); each token field the biLM embeds (a task's ``fields``) is stored as its
  text id under ``"text_ids"``, e.g. ``{"text_ids": {"premise": 0, "hypothesis": 1}, "label": ...}``;
  a field holding several texts in order (coreference: a document's sentences) is stored as a list
  of ids, ``{"text_ids": {"sentences": [0, 1, 2]}, ...}``, and read back as a list of token lists.

:func:`write_split` writes both (the ``prepare_<data set>`` stages); :func:`read_split` reads them
back with each field's tokens filled in (the tasks, fine-tuning and the features stage).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Iterable, Sequence

from ..io import InputError, atomic_open, iter_lines

TEXT_IDS = "text_ids"


def texts_path(data_dir: str | os.PathLike, split: str) -> Path:
    """``<data_dir>/<split>.texts.jsonl``: the split's unique texts."""
    return Path(data_dir) / f"{split}.texts.jsonl"


def examples_path(data_dir: str | os.PathLike, split: str) -> Path:
    """``<data_dir>/<split>.jsonl``: the split's examples."""
    return Path(data_dir) / f"{split}.jsonl"


class TextIndex:
    """Unique token sequences in first-seen order; :meth:`add` returns a text's id (its position)."""

    def __init__(self) -> None:
        self.texts: list[list[str]] = []
        self._ids: dict[tuple[str, ...], int] = {}

    def add(self, tokens: Sequence[str]) -> int:
        key = tuple(tokens)
        if key not in self._ids:
            self._ids[key] = len(self.texts)
            self.texts.append(list(tokens))
        return self._ids[key]


def holds_texts(value: Sequence[Any]) -> bool:
    """Whether a token field's value is a list of texts (a document's sentences), not one text."""
    return bool(value) and isinstance(value[0], (list, tuple))


def field_texts(value: Sequence[Any]) -> list[list[str]]:
    """The texts a token field holds: its one token list, or a document's token lists."""
    return [list(t) for t in value] if holds_texts(value) else [list(value)]


def write_split(data_dir: str | os.PathLike, split: str, examples: Iterable[dict[str, Any]],
                fields: Sequence[str]) -> dict[str, int]:
    """Write a split's texts and examples atomically (see the module docstring).

    Each example's ``fields`` (a token list, or a list of token lists: a document's sentences) are
    replaced by their text ids (an id, or a list of ids), texts numbered in order of first
    appearance (example by example, field by field). Returns the counts ``{"examples", "texts",
    "references"}`` (references: the texts the examples' fields hold, what the features stage
    would embed without the ids).

    Raises:
        KeyError: an example without one of ``fields``.
    """
    index, stored, references = TextIndex(), [], 0
    for example in examples:
        ids: dict[str, int | list[int]] = {}
        for field in fields:
            value = example[field]
            ids[field] = [index.add(t) for t in value] if holds_texts(value) else index.add(value)
            references += len(value) if holds_texts(value) else 1
        stored.append({TEXT_IDS: ids, **{k: v for k, v in example.items() if k not in fields}})
    with atomic_open(texts_path(data_dir, split)) as handle:
        for i, tokens in enumerate(index.texts):
            handle.write(json.dumps({"id": i, "tokens": tokens}, ensure_ascii=False) + "\n")
    write_examples(examples_path(data_dir, split), stored)
    return {"examples": len(stored), "texts": len(index.texts), "references": references}


def count_references(data_dir: str | os.PathLike, split: str) -> int:
    """How many texts a split's examples reference, counting a shared text each time (what
    embedding per example would cost): the ids in the examples' ``text_ids``."""
    total = 0
    for _, line in iter_lines(examples_path(data_dir, split)):
        if line.strip():
            for ids in json.loads(line).get(TEXT_IDS, {}).values():
                total += len(ids) if isinstance(ids, list) else 1
    return total


def read_texts(path: str | os.PathLike) -> list[list[str]]:
    """A split's texts (``<split>.texts.jsonl``), text id = list index.

    Raises:
        InputError: naming the file and line, for a blank line, malformed JSON, an ``id`` that is
            not the line index, ``tokens`` not a non-empty list of non-empty strings; naming the
            file when it is missing or empty.
    """
    texts = []
    for number, line in iter_lines(path):
        if not line.strip():
            raise InputError(path, "blank line (each line holds one text: the line index is its id)", line=number)
        try:
            text = json.loads(line)
        except json.JSONDecodeError as err:
            raise InputError(path, f"malformed JSON ({err.msg})", line=number) from None
        if not isinstance(text, dict) or text.get("id") != number - 1:
            raise InputError(path, f"expected {{\"id\": {number - 1}, \"tokens\": [...]}} (a text's id is "
                                   "its line index from 0)", line=number)
        tokens = text.get("tokens")
        if not (isinstance(tokens, list) and tokens and all(isinstance(t, str) and t for t in tokens)):
            raise InputError(path, "'tokens' must be a non-empty list of non-empty strings", line=number)
        texts.append(tokens)
    if not texts:
        raise InputError(path, "no texts")
    return texts


def read_split(data_dir: str | os.PathLike, split: str, text_fields: Sequence[str], label_key: str | None = None,
               labels: Sequence[Any] | None = None, list_fields: Sequence[str] = ()) -> list[dict[str, Any]]:
    """A split's examples with each of ``text_fields`` filled in from its text (the examples keep
    ``text_ids``; examples sharing a text share one list, which callers must not modify).
    ``list_fields`` (e.g. NER's tags) must hold non-empty lists of non-empty strings too.

    Raises:
        InputError: as :func:`read_texts` and :func:`read_examples`, and naming the examples file
            and line for ``text_ids`` missing a field or holding an id no text has.
    """
    # the text fields' tokens were checked with the texts (read_texts)
    return read_examples(examples_path(data_dir, split), tuple(list_fields), label_key, labels,
                         texts=(texts_path(data_dir, split), read_texts(texts_path(data_dir, split)), text_fields))


def write_examples(path: str | os.PathLike, examples: Iterable[dict[str, Any]]) -> int:
    """Write examples atomically, one JSON object a line (UTF-8 kept as is); returns how many."""
    n = 0
    with atomic_open(path) as handle:
        for example in examples:
            handle.write(json.dumps(example, ensure_ascii=False) + "\n")
            n += 1
    return n


def read_examples(path: str | os.PathLike, token_fields: Sequence[str], label_key: str | None = None,
                  labels: Sequence[Any] | None = None,
                  texts: tuple[Path, list[list[str]], Sequence[str]] | None = None) -> list[dict[str, Any]]:
    """Read prepared examples, checking each one.

    Args:
        path: the JSONL file.
        token_fields: keys that must hold a non-empty list of non-empty strings (the biLM's input).
        label_key: a key that must be present; with ``labels``, its value must be one of them.
        texts: (the texts' file, the texts, the fields stored as text ids) (:func:`read_split`).

    Raises:
        InputError: naming the file and line, for a blank line, malformed JSON, a missing or
            malformed field, an unknown label; naming the file when it is missing or empty.
    """
    examples = []
    for number, line in iter_lines(path):
        if not line.strip():
            raise InputError(path, "blank line (each line holds one example: the line index is its "
                                   "feature key)", line=number)
        try:
            example = json.loads(line)
        except json.JSONDecodeError as err:
            raise InputError(path, f"malformed JSON ({err.msg})", line=number) from None
        if not isinstance(example, dict):
            raise InputError(path, "expected a JSON object", line=number)
        if texts is not None:
            _resolve_texts(example, texts, path, number)
        for field in token_fields:
            tokens = example.get(field)
            if not (isinstance(tokens, list) and tokens and all(isinstance(t, str) and t for t in tokens)):
                raise InputError(path, f"{field!r} must be a non-empty list of non-empty strings", line=number)
        if label_key is not None:
            if label_key not in example:
                raise InputError(path, f"missing {label_key!r}", line=number)
            if labels is not None and example[label_key] not in labels:
                raise InputError(path, f"unknown {label_key} {example[label_key]!r}; expected one of "
                                       f"{', '.join(map(str, labels))}", line=number)
        examples.append(example)
    if not examples:
        raise InputError(path, "no examples")
    return examples


def _resolve_texts(example: dict[str, Any], texts: tuple[Path, list[list[str]], Sequence[str]],
                   path: str | os.PathLike, number: int) -> None:
    """Fill ``example[field]`` from ``example["text_ids"][field]`` for every text field: a text's
    tokens for an id, a list of texts for a non-empty list of ids."""
    source, table, fields = texts
    ids = example.get(TEXT_IDS)
    if not isinstance(ids, dict):
        raise InputError(path, f"missing {TEXT_IDS!r} (an object of text ids, one per field: "
                               f"{', '.join(fields)})", line=number)

    def valid(text_id: Any) -> bool:
        return isinstance(text_id, int) and not isinstance(text_id, bool) and 0 <= text_id < len(table)

    for field in fields:
        text_id = ids.get(field)
        if isinstance(text_id, list) and text_id and all(valid(i) for i in text_id):
            example[field] = [table[i] for i in text_id]
            continue
        if not valid(text_id):
            raise InputError(path, f"{TEXT_IDS}.{field} is {text_id!r}, not a text id of {source} "
                                   f"(0..{len(table) - 1}) nor a non-empty list of them", line=number)
        example[field] = table[text_id]
