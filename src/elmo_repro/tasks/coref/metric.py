"""Coreference metrics MUC, B³ and CEAFφ4 and their average (the CoNLL F1), with the semantics of
the reference CoNLL scorer v8.01 (Pradhan et al. 2014, "Scoring coreference partitions of
predicted mentions: a reference implementation").

A document's key and response are lists of clusters, a cluster a collection of mentions (any
hashable: here ``(start, end)`` token spans). Mentions match only exactly. A mention listed twice
in the response is counted once (its first cluster keeps it). Scores are summed over documents
(numerators and denominators), then divided, as the scorer does for a corpus.

* **MUC** (Vilain et al. 1995), link-based: recall = Σ_K (|K| − |p(K)|) / Σ_K (|K| − 1), p(K) the
  parts the response splits K into (a key mention the response lacks is a part of its own);
  precision swaps key and response.
* **B³** (Bagga & Baldwin 1998), mention-based: recall = Σ_K Σ_R |K∩R|² / |K| over Σ_K |K|;
  precision = Σ_R Σ_K |K∩R|² / |R| over Σ_R |R| (a response mention not in the key counts in
  the denominator and scores 0, v8's handling of predicted mentions).
* **CEAFφ4** (Luo 2005), entity-based: φ4(K, R) = 2|K∩R| / (|K| + |R|); the one-to-one alignment
  of key and response clusters that maximises Σφ4 (Kuhn-Munkres, :func:`scipy.optimize.
  linear_sum_assignment`); recall = Σφ4 / #key clusters, precision = Σφ4 / #response clusters.
"""

from __future__ import annotations

from typing import Hashable, Iterable, Sequence

import numpy as np
from scipy.optimize import linear_sum_assignment

Cluster = Sequence[Hashable]
Span = tuple[int, int]                      # inclusive token indices over the document
METRICS = ("muc", "b3", "ceafe")


def _dedupe(clusters: Iterable[Cluster]) -> list[set]:
    """Clusters as sets, a mention kept only in the first cluster listing it; empty ones dropped."""
    seen: set = set()
    out = []
    for cluster in clusters:
        kept = {m for m in cluster if m not in seen}
        seen |= kept
        if kept:
            out.append(kept)
    return out


def remove_singletons(clusters: Iterable[Cluster]) -> list[list]:
    """The clusters with two or more mentions (OntoNotes keys have no singletons; LitBank's do)."""
    return [list(c) for c in clusters if len(set(c)) > 1]


def _muc_counts(key: list[set], response: list[set]) -> tuple[float, float]:
    where = {m: i for i, cluster in enumerate(response) for m in cluster}
    numerator = denominator = 0.0
    for cluster in key:
        parts = {where.get(m, ("missing", m)) for m in cluster}
        numerator += len(cluster) - len(parts)
        denominator += len(cluster) - 1
    return numerator, denominator


def _b3_counts(key: list[set], response: list[set]) -> tuple[float, float]:
    numerator = sum(len(k & r) ** 2 / len(k) for k in key for r in response)
    return numerator, float(sum(len(k) for k in key))


def _ceafe_counts(key: list[set], response: list[set]) -> tuple[float, float, float]:
    if not key or not response:
        return 0.0, float(len(key)), float(len(response))
    phi = np.array([[2 * len(k & r) / (len(k) + len(r)) for r in response] for k in key])
    rows, cols = linear_sum_assignment(phi, maximize=True)
    return float(phi[rows, cols].sum()), float(len(key)), float(len(response))


def _prf(recall_num: float, recall_den: float, precision_num: float, precision_den: float) -> dict[str, float]:
    r = recall_num / recall_den if recall_den else 0.0
    p = precision_num / precision_den if precision_den else 0.0
    return {"precision": 100 * p, "recall": 100 * r, "f1": 100 * 2 * p * r / (p + r) if p + r else 0.0}


def document_counts(key_clusters: Sequence[Cluster], response_clusters: Sequence[Cluster]) -> np.ndarray:
    """One document's additive counts, shape (12,): for MUC, B³ and CEAFφ4 in that order, recall
    numerator, recall denominator, precision numerator, precision denominator. A corpus score
    divides their sums over documents (:func:`coref_scores`; the paired bootstrap of
    :mod:`elmo_repro.significance` resamples documents with them)."""
    key, response = _dedupe(key_clusters), _dedupe(response_clusters)
    phi, n_key, n_response = _ceafe_counts(key, response)
    return np.array([*_muc_counts(key, response), *_muc_counts(response, key),
                     *_b3_counts(key, response), *_b3_counts(response, key),
                     phi, n_key, phi, n_response], dtype=float)


def coref_scores(documents: Iterable[tuple[Sequence[Cluster], Sequence[Cluster]]]) -> dict[str, float]:
    """MUC, B³ and CEAFφ4 over a corpus, and their average F1.

    Args:
        documents: ``(key clusters, response clusters)`` per document.

    Returns:
        ``{muc,b3,ceafe}_{precision,recall,f1}`` and ``avg_f1`` (the mean of the three F1s), all
        in percent; 0 where a denominator is 0.
    """
    total = np.zeros(4 * len(METRICS))
    for key_clusters, response_clusters in documents:
        total += document_counts(key_clusters, response_clusters)
    scores = {}
    for i, name in enumerate(METRICS):
        rn, rd, pn, pd = (float(v) for v in total[4 * i:4 * i + 4])
        scores.update({f"{name}_{k}": v for k, v in _prf(rn, rd, pn, pd).items()})
    scores["avg_f1"] = sum(scores[f"{name}_f1"] for name in METRICS) / len(METRICS)
    return scores


def clusters_of(value: Sequence[Sequence[Sequence[int]]]) -> list[list[Span]]:
    """Clusters with spans as tuples (JSON gives lists)."""
    return [[(int(s), int(e)) for s, e in cluster] for cluster in value]
