"""Whether a difference between two settings of the run matrix is a finding: a paired bootstrap
over independent evaluation units, Holm's correction within a table, and the smallest difference
a comparison could have detected.

The paper compares single runs and reads 0.2-point differences as findings; these tools say
whether our seeds and test sets can resolve such a difference (issue 27, "Significance").

* **Evaluation units** are the groups a test set's examples are independent between: documents
  for coreference, paragraphs for SQuAD, premises for SNLI, sentences for span F1. Each unit gives
  a vector of *additive* statistics (span F1: true positives, predicted spans, gold spans), and a
  corpus metric is a function of their sums, so every resample recomputes the metric as the
  scorer does (a corpus F1, not a mean of per-unit F1s). The reducers below say which vector each
  metric reads.
* **Paired**: both settings are resampled with the same units and, over seeds, the same seed
  indices (seed i of one setting with seed i of the other). Seeds are resampled too by default, so
  the spread is that of training randomness and of the test sample together.
* **Test**: the bootstrap distribution of the difference, shifted to the null of no difference
  (Efron and Tibshirani 1993, *An Introduction to the Bootstrap*, §16.4), gives the two-sided
  p = (1 + #{|δ* − δ| ≥ |δ|}) / (B + 1).
* **Holm** (1979): step-down adjusted p-values, controlling the family-wise error within a table.
* **Detectable difference**: (z₁₋α/₂ + z_power) · SE, the smallest true difference a two-sided
  test at level α finds with the given power (normal approximation; α = 0.05, power 0.8 give
  2.80 SE).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np
from scipy.stats import norm

Metric = Callable[[np.ndarray], np.ndarray]


@dataclass(frozen=True)
class Comparison:
    """One setting against another (all in the metric's units, e.g. percentage points).

    ``difference`` = metric(treatment) − metric(control), each the mean over seeds on the whole
    test set; ``standard_error`` is the bootstrap standard deviation of that difference;
    ``detectable`` the smallest difference the comparison finds with ``power`` at ``alpha``.
    """

    difference: float
    p_value: float
    standard_error: float
    detectable: float
    resamples: int
    units: int
    seeds: int


def _ratio(numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    """numerator / denominator elementwise, 0 where the denominator is 0 (a scorer's convention)."""
    return np.divide(numerator, denominator, out=np.zeros(np.shape(numerator)), where=denominator > 0)


def mean_percent(totals: np.ndarray) -> np.ndarray:
    """100 · Σ score / Σ count, from unit vectors ``[score, count]``: accuracy (score = correct
    examples), SQuAD EM or F1 (score = the questions' best EM or token F1 in [0, 1], as the
    official v1.1 script averages them). Shape ``[..., 2]`` → ``[...]``; 0 where the count is 0."""
    return _ratio(100.0 * totals[..., 0], totals[..., 1])


def span_f1(totals: np.ndarray) -> np.ndarray:
    """Corpus span F1 in percent, from unit vectors ``[true positives, predicted, gold]`` (exact
    span matches, as conlleval and srl-eval.pl count them): 2·tp / (predicted + gold). Shape
    ``[..., 3]`` → ``[...]``; 0 where nothing was predicted or expected."""
    return _ratio(200.0 * totals[..., 0], totals[..., 1] + totals[..., 2])


def coref_average_f1(totals: np.ndarray) -> np.ndarray:
    """The CoNLL average F1 in percent (mean of MUC, B³ and CEAFφ4 F1) from unit (document)
    vectors of 12: for each metric in that order, recall numerator, recall denominator, precision
    numerator, precision denominator: the sums :func:`elmo_repro.metrics.coref.coref_scores`
    accumulates (the reference scorer v8.01 micro-averages over documents the same way). Shape
    ``[..., 12]`` → ``[...]``."""
    f1s = []
    for m in range(3):
        rn, rd, pn, pd = (totals[..., 4 * m + i] for i in range(4))
        recall, precision = _ratio(rn, rd), _ratio(pn, pd)
        f1s.append(_ratio(200.0 * recall * precision, recall + precision))
    return sum(f1s) / 3.0


def detectable_difference(standard_error: float, alpha: float = 0.05, power: float = 0.8) -> float:
    """The smallest true difference a two-sided test at level ``alpha`` detects with probability
    ``power`` when its estimate has ``standard_error``: (z₁₋α/₂ + z_power) · SE.

    Raises:
        ValueError: ``alpha`` or ``power`` outside (0, 1), or a negative standard error.
    """
    if not (0.0 < alpha < 1.0 and 0.0 < power < 1.0) or standard_error < 0:
        raise ValueError(f"need 0 < alpha, power < 1 and SE >= 0; got alpha={alpha}, power={power}, "
                         f"SE={standard_error}")
    return float((norm.ppf(1.0 - alpha / 2.0) + norm.ppf(power)) * standard_error)


def _checked(statistics: np.ndarray | Sequence, name: str) -> np.ndarray:
    array = np.asarray(statistics, dtype=float)
    if array.ndim == 2:                     # one seed
        array = array[None]
    if array.ndim != 3 or 0 in array.shape:
        raise ValueError(f"{name}: expected unit statistics of shape [seeds, units, k] (or [units, k]) "
                         f"with no empty axis; got shape {array.shape}")
    return array


def paired_bootstrap(control: np.ndarray | Sequence, treatment: np.ndarray | Sequence, metric: Metric, *,
                     resamples: int = 10_000, seed: int = 0, resample_seeds: bool = True,
                     alpha: float = 0.05, power: float = 0.8, chunk: int = 500) -> Comparison:
    """Paired bootstrap test of metric(treatment) − metric(control) over evaluation units.

    Args:
        control, treatment: per-unit statistics, shape ``[seeds, units, k]`` (``[units, k]`` for one
            seed); the same units in the same order on both sides, seed i paired with seed i.
        metric: the corpus metric of summed statistics, ``[..., k]`` → ``[...]`` (e.g.
            :func:`span_f1`).
        resamples: bootstrap resamples B.
        seed: the resampling generator's seed (the same seed gives the same result).
        resample_seeds: also resample the seed indices (paired) in every resample; without it only
            the units vary.
        alpha, power: for :attr:`Comparison.detectable`.
        chunk: resamples computed at once (memory: ``chunk × units`` counts).

    Returns:
        The :class:`Comparison` (difference of seed means on the whole test set, two-sided p,
        bootstrap SE, detectable difference).

    Raises:
        ValueError: shapes that differ between the sides or are not ``[seeds, units, k]``, or
            ``resamples`` < 1.
    """
    a, b = _checked(control, "control"), _checked(treatment, "treatment")
    if a.shape != b.shape:
        raise ValueError(f"paired settings need the same seeds, units and statistics: control has shape "
                         f"{a.shape} [seeds, units, k], treatment {b.shape}")
    if resamples < 1:
        raise ValueError(f"resamples must be >= 1, got {resamples}")
    n_seeds, n_units, _ = a.shape
    observed = float(metric(b.sum(axis=1)).mean() - metric(a.sum(axis=1)).mean())
    rng = np.random.Generator(np.random.PCG64(seed))
    uniform = np.full(n_units, 1.0 / n_units)
    deltas = np.empty(resamples)
    for start in range(0, resamples, chunk):
        size = min(chunk, resamples - start)
        counts = rng.multinomial(n_units, uniform, size=size).astype(float)          # [size, units]
        # each seed's metric on each resample: [size, seeds]
        per_seed = [metric(np.einsum("bu,suk->bsk", counts, side)) for side in (a, b)]
        if resample_seeds:
            drawn = rng.integers(0, n_seeds, size=(size, n_seeds))
            per_seed = [np.take_along_axis(values, drawn, axis=1) for values in per_seed]
        deltas[start:start + size] = per_seed[1].mean(axis=1) - per_seed[0].mean(axis=1)
    extreme = np.count_nonzero(np.abs(deltas - observed) >= abs(observed))
    se = float(deltas.std(ddof=1)) if resamples > 1 else 0.0
    return Comparison(difference=observed, p_value=(1 + extreme) / (resamples + 1), standard_error=se,
                      detectable=detectable_difference(se, alpha, power), resamples=resamples,
                      units=n_units, seeds=n_seeds)


def holm(p_values: Sequence[float | None]) -> list[float | None]:
    """Holm's (1979) step-down adjusted p-values of one family of comparisons (a table), in the
    given order: the i-th smallest of m is multiplied by m − i + 1, made non-decreasing and capped
    at 1. ``None`` (a comparison without a p-value) stays ``None`` and is not counted in m.

    Raises:
        ValueError: a p-value outside [0, 1].
    """
    present = [(p, i) for i, p in enumerate(p_values) if p is not None]
    for p, i in present:
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"p-value {i} is {p}, outside [0, 1]")
    adjusted: list[float | None] = [None] * len(p_values)
    running, m = 0.0, len(present)
    for rank, (p, i) in enumerate(sorted(present)):
        running = max(running, min(1.0, (m - rank) * p))
        adjusted[i] = running
    return adjusted
