"""SST-5's evaluation units for the paired bootstrap (:mod:`elmo_repro.significance`): sentences
(one example each), each with ``[correct, examples]``. Not imported by the task: a run does not
depend on this file."""

from __future__ import annotations

import numpy as np

from ...significance import mean_percent as reduce  # noqa: F401  (the metric of the summed statistics)
from ..classification_units import grouped_accuracy
from . import TASK

UNIT = "sentence"
METRIC = "accuracy"


def statistics(examples: list[dict], predictions: list[int]) -> tuple[list[str], np.ndarray]:
    """``(unit keys, [units, 2])`` (:func:`..classification_units.grouped_accuracy`)."""
    return grouped_accuracy(TASK.labels, "tokens", examples, predictions)
