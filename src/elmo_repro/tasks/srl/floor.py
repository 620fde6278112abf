"""The SRL floor: each token's most frequent training tag given only where it sits relative to the
predicate (before it, the predicate itself, after it; the distance clipped at ``max_distance``).

A tagger that reads no word and no context scores this; scored by the same scorer as the model
(:mod:`elmo_repro.tasks.srl.metric`). Its sequences are read as the scorer reads any BIO tags (a
stray ``I-X`` starts a phrase).
"""

from __future__ import annotations

from collections import Counter
from typing import Iterable

MAX_DISTANCE = 10


def relative_position(token: int, predicate: int, max_distance: int = MAX_DISTANCE) -> int:
    """The signed distance ``token - predicate`` clipped to [-max_distance, max_distance]
    (0 = the predicate; the sign says before or after)."""
    return max(-max_distance, min(max_distance, token - predicate))


def fit_position_tags(instances: Iterable[tuple[int, list[str]]], max_distance: int = MAX_DISTANCE) -> dict[int, str]:
    """The most frequent tag at each clipped relative position (ties: the tag seen first).

    Args:
        instances: ``(predicate index, BIO tags)`` of the training propositions.
    """
    counts: dict[int, Counter] = {}
    for predicate, tags in instances:
        for i, tag in enumerate(tags):
            counts.setdefault(relative_position(i, predicate, max_distance), Counter())[tag] += 1
    return {position: c.most_common(1)[0][0] for position, c in counts.items()}


def predict_position_tags(table: dict[int, str], predicate: int, length: int,
                          max_distance: int = MAX_DISTANCE) -> list[str]:
    """Tags of a ``length``-token proposition from a :func:`fit_position_tags` table (``O`` at
    a position never seen in training)."""
    return [table.get(relative_position(i, predicate, max_distance), "O") for i in range(length)]
