"""Nearest neighbours of a polysemous word, static and contextual (paper §5.3, Table 4).

The paper's Table 4 sets GloVe's nearest neighbours of "play" (one vector for every sense and part
of speech: playing, game, games, played, ...) beside, for two sentences holding "play", the
nearest other sentences by the biLM's vector of "play" in context, which group by sense and part
of speech. Here the static vectors are the pipeline's word vectors, and the sentences come from a
fixed corpus with no evaluation data in it (the caller's choice, documented with the table).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from ..checks import check_count


def _unit(matrix: np.ndarray) -> np.ndarray:
    matrix = np.asarray(matrix, dtype=np.float64)
    norms = np.linalg.norm(matrix, axis=-1, keepdims=True)
    return matrix / np.where(norms == 0, 1.0, norms)


def static_neighbours(words: Sequence[str], matrix: np.ndarray, query: str, k: int) -> list[tuple[str, float]]:
    """The ``k`` words whose vectors are nearest to ``query``'s by cosine similarity (the query
    itself excluded), best first, ties by word.

    Args:
        words: V words; matrix: ``(V, D)``, row i the vector of ``words[i]``.

    Raises:
        KeyError: ``query`` has no vector; ValueError: ``k`` < 1.
    """
    check_count(k, "k")
    index = {w: i for i, w in enumerate(words)}
    if query not in index:
        raise KeyError(f"{query!r} has no static vector")
    unit = _unit(matrix)
    similarity = unit @ unit[index[query]]
    ranked = sorted((i for i in range(len(words)) if i != index[query]), key=lambda i: (-similarity[i], words[i]))
    return [(words[i], float(similarity[i])) for i in ranked[:k]]


@dataclass(frozen=True)
class Occurrence:
    sentence: int            # index into the corpus
    token: int               # the word's position in that sentence


def occurrences(sentences: Sequence[Sequence[str]], word: str) -> list[Occurrence]:
    """Every position of ``word`` (exact, case-sensitive) in ``sentences``, in order."""
    return [Occurrence(s, t) for s, tokens in enumerate(sentences) for t, token in enumerate(tokens) if token == word]


def contextual_neighbours(vectors: np.ndarray, query: int, k: int, exclude_sentence: Sequence[int] | None = None
                          ) -> list[tuple[int, float]]:
    """The ``k`` occurrences whose contextual vectors are nearest to occurrence ``query``'s by
    cosine similarity, best first (ties by index), never one from the query's own sentence.

    Args:
        vectors: ``(n_occurrences, D)``, one layer's (or the ELMo mix's) vector of each occurrence.
        exclude_sentence: per occurrence its sentence index; occurrences sharing the query's are
            skipped (default: only the query itself).
    """
    check_count(k, "k")
    unit = _unit(vectors)
    similarity = unit @ unit[query]
    same = (np.asarray(exclude_sentence) == exclude_sentence[query]) if exclude_sentence is not None else None
    ranked = sorted((i for i in range(len(unit)) if i != query and (same is None or not same[i])),
                    key=lambda i: (-similarity[i], i))
    return [(i, float(similarity[i])) for i in ranked[:k]]
