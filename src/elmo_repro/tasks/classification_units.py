"""Evaluation units of the accuracy tasks (SST-5, SNLI) for the paired bootstrap
(:mod:`elmo_repro.significance`): examples grouped by a text, each group with ``[correct,
examples]``, so :func:`~elmo_repro.significance.mean_percent` of their sum is the accuracy. Not
imported by the tasks: a run does not depend on this file."""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np


def grouped_accuracy(labels: Sequence[Any], field: str, examples: list[dict],
                     predictions: list[int]) -> tuple[list[str], np.ndarray]:
    """``(unit keys, [units, 2])``: the examples sharing the text id of ``field`` form one unit
    (SNLI: a premise and its hypotheses; SST-5: one sentence), in order of first appearance.
    ``labels`` maps a gold label to the index the predictions use (the task's ``labels``).

    Raises:
        ValueError: different numbers of examples and predictions.
    """
    if len(examples) != len(predictions):
        raise ValueError(f"{len(predictions)} predictions for {len(examples)} examples")
    units: dict[str, list[float]] = {}
    for example, predicted in zip(examples, predictions):
        row = units.setdefault(str(example["text_ids"][field]), [0.0, 0.0])
        row[0] += float(list(labels).index(example["label"]) == predicted)
        row[1] += 1.0
    return list(units), np.array(list(units.values()), dtype=float)
