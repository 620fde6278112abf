"""The loss of knowing nothing: what a classifier's training loss must fall below to have learned
anything from its input.

A classifier that ignores its input does best by predicting the training label frequencies; its
mean cross-entropy is then their entropy, -Σ p_c ln p_c (ln 5 = 1.609 for five balanced classes,
ln 3 = 1.099 for three). The floor stage records it (``prior_train_loss``) and the tables flag a
run whose training loss never fell clearly below it (:mod:`elmo_repro.views.runs`). NER's CRF loss has
no such closed form (and its runs never sit there), so it has none.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Hashable, Iterable


def prior_loss(labels: Iterable[Hashable]) -> float:
    """The entropy (nats) of the labels' empirical distribution.

    Raises:
        ValueError: no labels.
    """
    counts = Counter(labels)
    total = sum(counts.values())
    if total == 0:
        raise ValueError("prior_loss: no labels")
    return -sum(n / total * math.log(n / total) for n in counts.values())
