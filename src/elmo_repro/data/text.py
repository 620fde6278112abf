"""Reading tokenized text: one sentence per line, tokens separated by whitespace."""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

from ..io import iter_lines


def iter_sentences(path: str | Path) -> Iterator[list[str]]:
    """Yield each non-blank line's tokens (UTF-8; BOM and CRLF tolerated, see ``iter_lines``)."""
    for _, line in iter_lines(path):
        tokens = line.split()
        if tokens:
            yield tokens


def read_sentences(path: str | Path) -> list[list[str]]:
    return list(iter_sentences(path))
