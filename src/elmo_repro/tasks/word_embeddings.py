"""The static word vectors of a task model: one matrix, built the same way for every task.

A token takes the pretrained vector of its exact form, else of its lowercased form, else the UNK
row (random, scaled like the pretrained vectors). Row 0 is padding (zeros). The matrix keeps only
pretrained words that occur in some split: equivalent to keeping them all, since a row never looked
up gets no gradient (and Adam leaves it unchanged) or, for a frozen matrix, is never read.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterable

import numpy as np
import torch
from torch import nn

if TYPE_CHECKING:
    from ..experiments.specs import ElmoSpec

PAD, UNK = 0, 1                 # word indices; rows 2.. are pretrained vectors


def build_embeddings(vectors: tuple[list[str], np.ndarray], words: Iterable[str], seed: int
                     ) -> tuple[dict[str, int], np.ndarray]:
    """Word index and (2 + V, dim) float32 matrix: PAD (zeros), UNK (random), pretrained rows.

    Args:
        vectors: ``(words, matrix)`` as :func:`elmo_repro.vectors.load_text_vectors` returns them.
        words: every token of every split (exact forms; repeats allowed).
        seed: the UNK row's generator seed.
    """
    names, matrix = vectors
    row_of = {word: i for i, word in enumerate(names)}
    needed = sorted({key for token in words for key in (token, token.lower()) if key in row_of})
    index = {word: i + 2 for i, word in enumerate(needed)}
    out = np.zeros((len(needed) + 2, matrix.shape[1]), dtype=np.float32)
    scale = float(matrix.std()) if matrix.size else 1.0
    out[UNK] = np.random.default_rng(seed).normal(0.0, scale, matrix.shape[1])
    if needed:
        out[2:] = matrix[[row_of[word] for word in needed]]
    return index, out


def word_id(token: str, index: dict[str, int]) -> int:
    """Exact form, else lowercased form, else UNK."""
    return index.get(token, index.get(token.lower(), UNK))


def word_ids(tokens: list[str], index: dict[str, int]) -> np.ndarray:
    """(T,) int64 ids of a token list."""
    return np.array([word_id(t, index) for t in tokens], dtype=np.int64)


def word_lookup(embeddings: np.ndarray, freeze: bool, elmo: "ElmoSpec | None") -> nn.Embedding:
    """The task model's static word-vector lookup: (..., T) ids -> (..., T, D) vectors, D =
    ``lookup.embedding_dim``.

    With ``elmo.word_vectors`` off (Table 7's "ELMo only" and "char layer instead of the vectors"),
    the lookup has width 0: the model's concatenations stay as written, and the vectors add nothing
    to its input and no trainable entry.

    Args:
        embeddings: (V, word_dim) matrix from :func:`build_embeddings`.
        freeze: keep the vectors fixed (no gradient).
        elmo: the run's ELMo spec, or None (a baseline always reads the vectors).
    """
    matrix = torch.from_numpy(embeddings)
    if elmo is not None and not elmo.word_vectors:
        matrix = matrix[:, :0]
    return nn.Embedding.from_pretrained(matrix, freeze=freeze, padding_idx=PAD)
