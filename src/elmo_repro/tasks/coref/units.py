"""Coreference's evaluation units for the paired bootstrap (:mod:`elmo_repro.significance`):
documents, each with its 12 MUC, B³ and CEAFφ4 counts (:func:`~elmo_repro.tasks.coref.metric.
document_counts`; singletons removed from the key, as the task's primary score), so
:func:`~elmo_repro.tasks.units.coref_average_f1` of their sum is the task's average F1.
Each run writes them beside its metrics (``units.csv``)."""

from __future__ import annotations

import numpy as np

from ..units import coref_average_f1 as reduce  # noqa: F401  (the metric of the summed statistics)
from .metric import clusters_of, document_counts, remove_singletons

UNIT = "document"
METRIC = "avg_f1"
# the statistics, as units.csv names them: recall and precision numerators and denominators per metric
COLUMNS = tuple(f"{m}_{part}" for m in ("muc", "b3", "ceafe")
                for part in ("recall_num", "recall_den", "precision_num", "precision_den"))


def statistics(examples: list[dict], predictions: list) -> tuple[list[str], np.ndarray]:
    """``(unit keys, [documents, 12])`` of a split's documents and their predicted clusters.

    Raises:
        ValueError: different numbers of documents and predictions.
    """
    if len(examples) != len(predictions):
        raise ValueError(f"{len(predictions)} predictions for {len(examples)} documents")
    keys = [str(d["doc_key"]) for d in examples]
    rows = [document_counts(remove_singletons(clusters_of(d["clusters"])), clusters_of(p))
            for d, p in zip(examples, predictions)]
    return keys, np.array(rows, dtype=float)
