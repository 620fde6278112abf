"""What the sentence- and pair-classification tasks (SST-5, SNLI) share: reading the prepared
examples, the word vocabulary, accuracy, the majority-class floor (:class:`ClassificationTask`),
and the models' cross-entropy loss and argmax prediction (:class:`ClassifierHead`)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Hashable, Iterable, Sequence

import numpy as np
import torch
from torch import nn

from ..data.examples import read_split
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


class ClassificationTask:
    """The parts of the task contract (:class:`elmo_repro.tasks.base.Task`) that a classification
    task derives from its ``labels`` and token ``fields``: ``read``, ``build_vocab``, ``score`` and
    ``floor``. Predictions are label indices into ``labels``."""

    labels: ClassVar[tuple[Hashable, ...]]
    data_dir: ClassVar[Path]
    fields: ClassVar[tuple[str, ...]]

    def read(self, split: str, data_dir: Path | None = None) -> list[dict]:
        """The prepared split, checked, token fields filled in (:func:`elmo_repro.data.examples.read_split`)."""
        return read_split(data_dir or self.data_dir, split, self.fields, "label", self.labels)

    def build_vocab(self, train: list[dict], splits: dict[str, list[dict]],
                    vectors: tuple[list[str], np.ndarray], seed: int) -> WordVocab:
        """The words of every split's token fields and the task's fixed label set."""
        tokens = (t for part in splits.values() for e in part for field in self.fields for t in e[field])
        return build_word_vocab(vectors, tokens, self.labels, seed)

    def score(self, examples: list[dict], predictions: list[int]) -> dict[str, float]:
        """Accuracy (percent); predictions are label indices."""
        return accuracy([self.labels.index(e["label"]) for e in examples], predictions)

    def floor(self, train: list[dict], examples: list[dict]) -> list[int]:
        """The training part's majority label (ties: the first in ``labels``) for every example,
        as a label index."""
        label = majority_label((e["label"] for e in train), self.labels)
        return [self.labels.index(label)] * len(examples)


class ClassifierHead:
    """Loss and prediction of a classifier ``nn.Module`` with ``logits(batch) -> (B, n_classes)``
    and an optional ``elmo`` injection: mean cross-entropy (+ the ScalarMix L2 penalty), argmax."""

    elmo: Any

    def logits(self, batch: dict) -> torch.Tensor:
        raise NotImplementedError

    def loss(self, batch: dict) -> torch.Tensor:
        """Mean cross-entropy over the batch's ``labels`` (B,) + the ScalarMix L2 penalty."""
        ce = nn.functional.cross_entropy(self.logits(batch), batch["labels"])
        return ce + self.elmo.penalty() if self.elmo is not None else ce

    @torch.no_grad()
    def predict(self, batch: dict) -> list[int]:
        """Argmax label index per example."""
        return self.logits(batch).argmax(dim=-1).tolist()
