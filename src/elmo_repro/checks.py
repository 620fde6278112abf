"""Argument checks at the public entry points (API and CLI): tokenized input and counts.

A sentence is a sequence of str tokens (a list or tuple, not a str: a str would be embedded
character by character); a batch is a sequence of sentences. The checks name the entry point, the
sentence's position and what was found, so a caller who passed ``"the cat sat"`` instead of
``["the", "cat", "sat"]`` learns it at once rather than from silently wrong vectors.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence


def _kind(value: object) -> str:
    if isinstance(value, str):
        text = value if len(value) <= 30 else value[:27] + "..."
        return f"a str ({text!r}; split it into tokens first, e.g. text.split())"
    return f"a {type(value).__name__}"


def check_sentence(tokens: object, where: str, index: int | None = None) -> list[str]:
    """``tokens`` as a list of str.

    Args:
        tokens: the sentence.
        where: the entry point, for the message (e.g. ``"ElmoEmbedder.embed_sentence"``).
        index: the sentence's position in its batch or stream, for the message.

    Raises:
        TypeError: ``tokens`` is a str or bytes, not a list/tuple, or holds a token that is not a str.
    """
    at = f"{where}: sentence {index}" if index is not None else where
    if isinstance(tokens, (str, bytes)) or not isinstance(tokens, Sequence):
        raise TypeError(f"{at}: expected a tokenized sentence (a list of str), got {_kind(tokens)}")
    for position, token in enumerate(tokens):
        if not isinstance(token, str):
            raise TypeError(f"{at}: token {position} is {_kind(token)}, expected a str")
    return list(tokens)


def check_batch(sentences: object, where: str) -> list[list[str]]:
    """``sentences`` as a list of token lists (:func:`check_sentence` on each).

    Raises:
        TypeError: ``sentences`` is a str or not a list/tuple, or one of its sentences is not a
            list of str (naming its index).
    """
    if isinstance(sentences, (str, bytes)) or not isinstance(sentences, Sequence):
        raise TypeError(f"{where}: expected a batch of tokenized sentences (a list of lists of str), "
                        f"got {_kind(sentences)}")
    return [check_sentence(s, where, i) for i, s in enumerate(sentences)]


def checked_stream(sentences: Iterable[object], where: str) -> Iterator[list[str]]:
    """Lazily :func:`check_sentence` each item of an iterable of sentences (a str as the whole
    stream is refused at once: iterating it would give one-character sentences).

    Raises:
        TypeError: as :func:`check_batch`, when the offending item is reached.
    """
    if isinstance(sentences, (str, bytes)) or not isinstance(sentences, Iterable):
        raise TypeError(f"{where}: expected an iterable of tokenized sentences (lists of str), "
                        f"got {_kind(sentences)}")
    for i, sentence in enumerate(sentences):
        yield check_sentence(sentence, where, i)


def check_count(value: object, name: str, minimum: int = 1) -> int:
    """``value`` as an int of at least ``minimum`` (a batch size, a window, a number of outputs).

    Raises:
        ValueError: not an integer (bools refused) or below ``minimum``, naming ``name``.
    """
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return value


def check_fraction(value: object, name: str) -> float:
    """``value`` as a float in [0, 1) (a dropout probability).

    Raises:
        ValueError: not a number in [0, 1), naming ``name``.
    """
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < 1:
        raise ValueError(f"{name} must be a number in [0, 1), got {value!r}")
    return float(value)
