"""SQuAD's evaluation units for the paired bootstrap (:mod:`elmo_repro.significance`): paragraphs
(a paragraph's questions share its text and are not independent), each with ``[Σ F1, questions]``
where a question's F1 is the best token F1 over its references (``evaluate-v1.1.py``), so
:func:`~elmo_repro.tasks.units.mean_percent` of their sum is the task's F1. Each run writes them beside its metrics
(``units.csv``)."""

from __future__ import annotations

import numpy as np

from ..units import mean_percent as reduce  # noqa: F401  (the metric of the summed statistics)
from ..units import grouped
from .metric import token_f1
from .reader import span_text

UNIT = "paragraph"
METRIC = "f1"
COLUMNS = ("f1_sum", "questions")   # the statistics, as units.csv names them


def statistics(examples: list[dict], predictions: list[list[int]]) -> tuple[list[str], np.ndarray]:
    """``(unit keys, [units, 2])`` of a split's questions and their predicted token spans.

    Raises:
        ValueError: different numbers of questions and predictions, or a question without references.
    """
    if len(examples) != len(predictions):
        raise ValueError(f"{len(predictions)} predictions for {len(examples)} questions")
    def row(example: dict, first: int, last: int) -> list[float]:
        if not example["answers"]:
            raise ValueError(f"question {example['id']} has no reference answer")
        answer = span_text(example["paragraph_text"], example["offsets"], first, last)
        return [max(token_f1(answer, reference) for reference in example["answers"]), 1.0]

    return grouped(((str(e["paragraph"]), row(e, first, last)) for e, (first, last) in zip(examples, predictions)), 2)
