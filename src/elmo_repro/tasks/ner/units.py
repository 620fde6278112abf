"""NER's evaluation units for the paired bootstrap (:mod:`elmo_repro.significance`): sentences
(identical sentences, which share a text id, are one unit), each with its entity counts ``[true positives, predicted, gold]`` (conlleval's exact type-and-
boundary match on IOB2, seqeval's chunking), so :func:`~elmo_repro.tasks.units.span_f1` of their
sum is the task's span F1. Each run writes them beside its metrics
(``units.csv``)."""

from __future__ import annotations

import numpy as np
from seqeval.metrics.sequence_labeling import get_entities

from ..units import span_f1 as reduce  # noqa: F401  (the metric of the summed statistics)
from ..units import grouped
from .reader import to_iob2

UNIT = "sentence"
METRIC = "f1"
COLUMNS = ("true_positives", "predicted", "gold")   # the statistics, as units.csv names them


def statistics(examples: list[dict], predictions: list[list[str]]) -> tuple[list[str], np.ndarray]:
    """``(unit keys, [units, 3])`` of a split's sentences and their IOB2 predictions.

    Raises:
        ValueError: different numbers of sentences and predictions.
    """
    if len(examples) != len(predictions):
        raise ValueError(f"{len(predictions)} predictions for {len(examples)} sentences")
    def row(example: dict, predicted: list[str]) -> list[int]:
        gold, guess = set(get_entities(to_iob2(example["ner"]))), set(get_entities(list(predicted)))
        return [len(gold & guess), len(guess), len(gold)]

    return grouped(((str(e["text_ids"]["tokens"]), row(e, p)) for e, p in zip(examples, predictions)), 3)
