"""SRL's evaluation units for the paired bootstrap (:mod:`elmo_repro.significance`): sentences of
the primary (WSJ) test set, each with the argument counts of all its propositions ``[correct,
correct + excess, correct + missed]`` (``srl-eval.pl``'s ok, op, ms; ``V`` excluded), so
:func:`~elmo_repro.tasks.units.span_f1` of their sum, 2·ok / (2·ok + op + ms), is the task's F1.
Each run writes them beside its metrics
(``units.csv``)."""

from __future__ import annotations

import numpy as np

from ..units import span_f1 as reduce  # noqa: F401  (the metric of the summed statistics)
from ..units import grouped
from .metric import arguments, bio_to_spans, score_proposition

UNIT = "sentence"
METRIC = "f1"
COLUMNS = ("correct", "predicted", "gold")   # the statistics, as units.csv names them
DOMAIN = "wsj"              # the task's primary domain (its unprefixed metrics); Brown is scored apart


def statistics(examples: list[dict], predictions: list[list[str]]) -> tuple[list[str], np.ndarray]:
    """``(unit keys, [units, 3])`` of a split's WSJ propositions, grouped by sentence (text id).

    Raises:
        ValueError: different numbers of propositions and predictions, or none in the domain.
    """
    if len(examples) != len(predictions):
        raise ValueError(f"{len(predictions)} predictions for {len(examples)} propositions")
    def row(example: dict, predicted: list[str]) -> list[int]:
        scored, _ = score_proposition(arguments(bio_to_spans(example["tags"])), arguments(bio_to_spans(predicted)))
        return [scored.ok, scored.ok + scored.op, scored.ok + scored.ms]

    keys, statistics = grouped(((str(e["text_ids"]["tokens"]), row(e, p)) for e, p in zip(examples, predictions)
                                if e["domain"] == DOMAIN), 3)
    if not keys:
        raise ValueError(f"no {DOMAIN} proposition to score")
    return keys, statistics
