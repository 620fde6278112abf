"""Prepared task examples: one JSON object per line (``data/<task>/{train,dev,test}.jsonl``).

The line index is the example index everywhere downstream (ELMo feature files are keyed by it), so
a blank line is an error, never skipped. Written by the ``prepare_<data set>`` stages, read by the
tasks and the feature stage.
"""

from __future__ import annotations

import json
import os
from typing import Any, Iterable, Sequence

from ..io import InputError, atomic_open, iter_lines


def write_examples(path: str | os.PathLike, examples: Iterable[dict[str, Any]]) -> int:
    """Write examples atomically, one JSON object a line (UTF-8 kept as is); returns how many."""
    n = 0
    with atomic_open(path) as handle:
        for example in examples:
            handle.write(json.dumps(example, ensure_ascii=False) + "\n")
            n += 1
    return n


def read_examples(path: str | os.PathLike, token_fields: Sequence[str], label_key: str | None = None,
                  labels: Sequence[Any] | None = None) -> list[dict[str, Any]]:
    """Read prepared examples, checking each one.

    Args:
        path: the JSONL file.
        token_fields: keys that must hold a non-empty list of non-empty strings (the biLM's input).
        label_key: a key that must be present; with ``labels``, its value must be one of them.

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
