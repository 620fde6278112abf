"""What the sentence- and pair-classification tasks (SST-5, SNLI) share: the word vocabulary,
accuracy and the majority-class floor."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any, Hashable, Iterable, Sequence

import numpy as np

from .word_embeddings import build_embeddings


@dataclass
class WordVocab:
    """Word index and (2 + V, dim) matrix (:func:`~.word_embeddings.build_embeddings`), and the labels."""

    word_index: dict[str, int]
    embeddings: np.ndarray
    labels: tuple[Hashable, ...]


def build_word_vocab(vectors: tuple[list[str], np.ndarray], tokens: Iterable[str], labels: Sequence[Hashable],
                     seed: int) -> WordVocab:
    """The vocabulary of every split's ``tokens`` and the task's fixed label set."""
    word_index, embeddings = build_embeddings(vectors, tokens, seed)
    return WordVocab(word_index, embeddings, tuple(labels))


def pad_ids(sequences: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Right-pad (T_i,) id arrays with 0: ids (B, T), mask (B, T) bool, lengths (B,)."""
    lengths = np.array([len(s) for s in sequences], dtype=np.int64)
    ids = np.zeros((len(sequences), int(lengths.max())), dtype=np.int64)
    for row, s in enumerate(sequences):
        ids[row, :len(s)] = s
    return ids, np.arange(ids.shape[1])[None, :] < lengths[:, None], lengths


def accuracy(gold: Sequence[Any], predicted: Sequence[Any]) -> dict[str, float]:
    """``{"accuracy": percent of predictions equal to the gold label}``.

    Raises:
        ValueError: different numbers of gold labels and predictions, or none.
    """
    if len(gold) != len(predicted) or not gold:
        raise ValueError(f"{len(predicted)} predictions for {len(gold)} examples")
    return {"accuracy": 100.0 * sum(g == p for g, p in zip(gold, predicted)) / len(gold)}


def majority_label(labels: Iterable[Hashable], order: Sequence[Hashable]) -> Hashable:
    """The most frequent label; ties go to the one first in ``order`` (the task's label order)."""
    counts = Counter(labels)
    return max(order, key=lambda label: (counts[label], -order.index(label)))
