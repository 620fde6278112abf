"""SST-5's evaluation units for the paired bootstrap (:mod:`elmo_repro.significance`): sentences
(one example each), each with ``[correct, examples]``. Each run writes them beside its metrics
(``units.csv``)."""

from __future__ import annotations

import numpy as np

from ..classification_units import grouped_accuracy
from ..units import mean_percent as reduce  # noqa: F401  (the metric of the summed statistics)
from .reader import LABELS

UNIT = "sentence"
METRIC = "accuracy"
COLUMNS = ("correct", "examples")   # the statistics, as units.csv names them


def statistics(examples: list[dict], predictions: list[int]) -> tuple[list[str], np.ndarray]:
    """``(unit keys, [units, 2])`` (:func:`..classification_units.grouped_accuracy`)."""
    return grouped_accuracy(LABELS, "tokens", examples, predictions)
