"""Evaluation units of the accuracy tasks (SST-5, SNLI) for the paired bootstrap
(:mod:`elmo_repro.significance`): examples grouped by a text, each group with ``[correct,
examples]``, so :func:`~elmo_repro.tasks.units.mean_percent` of their sum is the accuracy."""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from .units import grouped


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
    index = list(labels)
    return grouped(((str(e["text_ids"][field]), [float(index.index(e["label"]) == p), 1.0])
                    for e, p in zip(examples, predictions)), 2)
