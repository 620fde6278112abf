"""Character ids exactly as the original ELMo (bilm-tf ``UnicodeCharsVocabulary``, allennlp
``ELMoCharacterMapper``).

A token becomes 50 slots: begin-of-word (258), its UTF-8 bytes truncated to 48 bytes (even in the
middle of a multi-byte character, as the originals do), end-of-word (259), then padding (260).
The sentence boundary tokens ``<S>``/``</S>`` are the single "characters" 256/257 between the
word markers. At inference every id is shifted by +1 so that 0 can mark padding tokens; this
project uses the shifted ids everywhere (``char_embed`` has 262 rows, row 0 fixed at zero).
"""

from __future__ import annotations

import numpy as np

from ..checks import check_batch

MAX_CHARS = 50
BOS_CHAR, EOS_CHAR, BOW_CHAR, EOW_CHAR, PAD_CHAR = 256, 257, 258, 259, 260
BOS_TOKEN, EOS_TOKEN, UNK_TOKEN = "<S>", "</S>", "<UNK>"
N_CHARACTERS = 262  # 261 original ids + the padding id 0 introduced by the +1 shift


def _boundary(char: int) -> list[int]:
    return [BOW_CHAR, char, EOW_CHAR] + [PAD_CHAR] * (MAX_CHARS - 3)


_SPECIAL = {BOS_TOKEN: _boundary(BOS_CHAR), EOS_TOKEN: _boundary(EOS_CHAR)}


def token_to_char_ids(token: str, max_chars: int = MAX_CHARS) -> list[int]:
    """Shifted (+1) character ids of one token, length ``max_chars``.

    ``"a"`` -> ``[259, 98, 260, 261, 261, ...]``; ``"<S>"`` -> ``[259, 257, 260, 261, ...]``.
    Source: bilm-tf ``UnicodeCharsVocabulary._convert_word_to_char_ids``.
    """
    if token in _SPECIAL:
        ids = _SPECIAL[token][:max_chars]
    else:
        encoded = token.encode("utf-8", "ignore")[: max_chars - 2]
        ids = [BOW_CHAR, *encoded, EOW_CHAR] + [PAD_CHAR] * (max_chars - 2 - len(encoded))
    return [i + 1 for i in ids]


def batch_to_char_ids(sentences: list[list[str]], add_boundaries: bool = True,
                      max_chars: int = MAX_CHARS) -> np.ndarray:
    """Char ids of a padded batch, shape (B, T, max_chars), int64; padding tokens are all zeros.

    With ``add_boundaries`` each sentence is wrapped as ``<S> tokens </S>`` (T = longest + 2).
    Literal ``<S>``/``</S>`` strings inside a sentence get the boundary ids, as in the original.

    Raises:
        TypeError: ``sentences`` is not a list of token lists (e.g. a list of str).
    """
    return char_ids_of(check_batch(sentences, "batch_to_char_ids"), add_boundaries, max_chars)


def char_ids_of(sentences: list[list[str]], add_boundaries: bool = True, max_chars: int = MAX_CHARS) -> np.ndarray:
    """:func:`batch_to_char_ids` for a batch its caller has already checked (no second pass)."""
    rows = [[BOS_TOKEN, *s, EOS_TOKEN] if add_boundaries else list(s) for s in sentences]
    width = max((len(r) for r in rows), default=0)
    out = np.zeros((len(rows), width, max_chars), dtype=np.int64)
    for b, row in enumerate(rows):
        for t, token in enumerate(row):
            out[b, t] = token_to_char_ids(token, max_chars)
    return out
