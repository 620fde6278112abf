"""Part-of-speech tagging by a linear probe on one frozen layer (paper §5.3, Table 6).

As the paper: the biLM (or CoVe) is frozen and a linear classifier, a softmax over the tag set on
one layer's vector per token (no context beyond what the layer holds), is trained with
cross-entropy. Here with Adam on shuffled mini-batches of tokens until dev accuracy has not improved
for ``patience`` epochs (at most ``max_epochs``); the epoch with the best dev accuracy (the first on
ties) is kept and scored once on test. A probe that reaches ``max_epochs`` while still improving is
reported as not converged (Table 6 marks it †). The seed fixes the initialisation and the batch
order, so the spread over seeds is the probe's, not the layer's.

The most-frequent-tag baseline tags each word with its most frequent training tag (ties: the tag
first in sorted order) and an unseen word with the most frequent tag of all training tokens.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Sequence

import torch
from torch import nn

from ..checks import check_count


@dataclass
class ProbeResult:
    dev_accuracy: float                       # percent, the kept epoch's
    test_accuracy: float                      # percent
    best_epoch: int                           # 1-based
    converged: bool                           # dev accuracy stopped improving for `patience` epochs
    history: list[dict[str, float]]           # per epoch: epoch, train_loss, dev_accuracy
    test_predictions: list[int] = field(repr=False, default_factory=list)   # tag ids


def accuracy(predicted: torch.Tensor, gold: torch.Tensor) -> float:
    """Percent of positions where ``predicted`` equals ``gold`` (both ``(n,)`` integer tensors)."""
    if predicted.shape != gold.shape or gold.numel() == 0:
        raise ValueError(f"expected two equal, non-empty shapes, got {tuple(predicted.shape)} and {tuple(gold.shape)}")
    return 100.0 * (predicted == gold).double().mean().item()


def train_linear_probe(train: tuple[torch.Tensor, torch.Tensor], dev: tuple[torch.Tensor, torch.Tensor],
                       test: tuple[torch.Tensor, torch.Tensor], n_tags: int, *, max_epochs: int,
                       patience: int, batch_size: int, lr: float, seed: int) -> ProbeResult:
    """Train a softmax classifier on ``(vectors, tag ids)`` pairs and score the best dev epoch on test.

    Args:
        train, dev, test: ``(vectors (n, dim) float, tags (n,) int64)`` each, one row per token.
        n_tags: the size of the tag set; tag ids are ``0 .. n_tags - 1``.
        max_epochs: the most passes over ``train``.
        patience: stop after this many epochs without a better dev accuracy.

    Raises:
        ValueError: non-positive counts or mismatched shapes.
    """
    for name, value in {"max_epochs": max_epochs, "patience": patience, "batch_size": batch_size,
                        "n_tags": n_tags}.items():
        check_count(value, f"train_linear_probe: {name}")
    for name, (x, y) in {"train": train, "dev": dev, "test": test}.items():
        if x.dim() != 2 or y.shape != (x.shape[0],) or x.shape[1] != train[0].shape[1]:
            raise ValueError(f"{name}: expected vectors (n, {train[0].shape[1]}) and tags (n,), got "
                             f"{tuple(x.shape)} and {tuple(y.shape)}")
    generator = torch.Generator().manual_seed(seed)
    probe = nn.Linear(train[0].shape[1], n_tags)
    with torch.no_grad():                       # nn.Linear's default init, from the seeded generator
        bound = 1.0 / train[0].shape[1] ** 0.5
        probe.weight.uniform_(-bound, bound, generator=generator)
        probe.bias.uniform_(-bound, bound, generator=generator)
    optimizer = torch.optim.Adam(probe.parameters(), lr=lr)
    history, best = [], (-1.0, 0, None)
    x_train, y_train = train
    for epoch in range(1, max_epochs + 1):
        order = torch.randperm(len(y_train), generator=generator)
        total = 0.0
        for start in range(0, len(order), batch_size):
            rows = order[start:start + batch_size]
            loss = nn.functional.cross_entropy(probe(x_train[rows]), y_train[rows])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total += loss.item() * len(rows)
        with torch.no_grad():
            dev_accuracy = accuracy(probe(dev[0]).argmax(-1), dev[1])
        history.append({"epoch": epoch, "train_loss": total / len(order), "dev_accuracy": dev_accuracy})
        if dev_accuracy > best[0]:
            best = (dev_accuracy, epoch, {k: v.clone() for k, v in probe.state_dict().items()})
        if epoch - best[1] >= patience:
            break
    probe.load_state_dict(best[2])
    with torch.no_grad():
        predicted = probe(test[0]).argmax(-1)
    converged = len(history) - best[1] >= patience
    return ProbeResult(best[0], accuracy(predicted, test[1]), best[1], converged, history, predicted.tolist())


def most_frequent_tags(words: Sequence[str], tags: Sequence[str]) -> tuple[dict[str, str], str]:
    """Each training word's most frequent tag (ties: first in sorted order), and the most frequent
    tag overall (the unseen words' tag)."""
    counts: dict[str, Counter] = defaultdict(Counter)
    for word, tag in zip(words, tags, strict=True):
        counts[word][tag] += 1
    best = {word: min(c, key=lambda tag: (-c[tag], tag)) for word, c in counts.items()}
    overall = Counter(tags)
    return best, min(overall, key=lambda tag: (-overall[tag], tag))
