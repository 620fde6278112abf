"""The NER floor: each token's most frequent training tag, whatever its context.

What a tagger that reads one word and no context scores; scored by the same span F1 as the model
(:mod:`.metric`).
"""

from __future__ import annotations

from collections import Counter

from .reader import to_iob2


def most_frequent_tags(train: list[dict], examples: list[dict]) -> list[list[str]]:
    """Each token of ``examples`` tagged with its most frequent tag in ``train`` (ties: the tag
    first seen), unseen tokens ``O``; the IOB1 sequences converted to IOB2 as the model's
    predictions are. ``train`` and ``examples``: sentences with ``tokens`` (and ``ner`` for train)."""
    counts: dict[str, Counter] = {}
    for s in train:
        for token, tag in zip(s["tokens"], s["ner"]):
            counts.setdefault(token, Counter())[tag] += 1
    best = {token: c.most_common(1)[0][0] for token, c in counts.items()}
    return [to_iob2([best.get(t, "O") for t in s["tokens"]]) for s in examples]
