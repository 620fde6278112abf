"""Reading the language-model text: one tokenized sentence per line, tokens separated by whitespace.

This is the format of ``data/lm/train.txt`` and ``data/lm/heldout.txt`` (and of the 1B Word
``*.tokens`` files). Rules for awkward input:

* UTF-8 whatever the locale; a byte-order mark is dropped, ``\\r\\n`` endings are accepted and invalid
  UTF-8 is an :class:`~elmo_repro.io.InputError` naming the file and line (see ``iter_lines``).
* Blank lines are skipped. LM text has no sentence index (training shuffles the sentences and
  perplexity sums over all of them), so nothing downstream refers to a sentence by its position.
* The sentence boundaries ``<S>`` and ``</S>`` are added by the LM itself. A literal ``<S>`` or
  ``</S>`` token inside a line is rejected with an ``InputError`` naming the file and line: the
  vocabulary reserves those strings for the boundaries, so such a token would be fed to the char
  CNN as a boundary and trained as a boundary target. A literal ``<UNK>`` is accepted and is the
  unknown word (it counts towards ``<UNK>`` and its target is the ``<UNK>`` id).
* A file without any sentence (empty, or only blank lines) is an ``InputError``: an empty training
  or held-out text would otherwise give an empty vocabulary or a division by zero much later.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

from ..io import InputError, iter_lines
from .character_ids import BOS_TOKEN, EOS_TOKEN

BOUNDARY_TOKENS = (BOS_TOKEN, EOS_TOKEN)


def check_no_boundary_tokens(path: str | Path, tokens: list[str], line: int) -> None:
    """Raise :class:`InputError` (file and line) if ``tokens`` holds a literal ``<S>`` or ``</S>``."""
    for boundary in BOUNDARY_TOKENS:
        if boundary in tokens:
            raise InputError(path, f"token {tokens.index(boundary) + 1} is a literal {boundary!r}, which is "
                             "reserved for the sentence boundaries the LM adds itself", line=line)


def iter_sentences(path: str | Path) -> Iterator[list[str]]:
    """Yield each non-blank line's tokens, in file order (see the module docstring for the rules).

    Raises:
        InputError: missing file, invalid UTF-8, a literal ``<S>``/``</S>``, or no sentence at all.
    """
    empty = True
    for number, line in iter_lines(path):
        tokens = line.split()
        if tokens:
            check_no_boundary_tokens(path, tokens, number)
            empty = False
            yield tokens
    if empty:
        raise InputError(path, "no sentences (the file is empty or has only blank lines)")


def read_sentences(path: str | Path) -> list[list[str]]:
    return list(iter_sentences(path))
