"""Whether a difference between settings of the run matrix is a finding, with three seeds: a test
over both sources of variance (training seeds and test units), Holm's correction within a table,
the Monte-Carlo error of every p-value, and the smallest difference a comparison could detect at
the level its verdict uses.

The paper compares single runs and reads 0.2-point differences as findings; these tools say
whether our seeds and test sets can resolve such a difference (docs/results.md, "Significance").

* **Evaluation units** are the groups a test set's examples are independent between: documents
  for coreference, paragraphs for SQuAD, premises for SNLI, sentences for span F1. Each unit gives
  a vector of *additive* statistics (span F1: true positives, predicted spans, gold spans), and a
  corpus metric is a function of their sums (``tasks/units.py``), so every resample recomputes the
  metric as the scorer does (a corpus F1, not a mean of per-unit F1s).
* **The contrast** is Σₛ wₛ · (mean over seeds of the metric of setting s on the whole split): for
  two settings (control, treatment) with weights (−1, +1), the difference of seed means. Seeds are
  paired by index across settings (seed i of each).
* **Its variance is that of crossed random effects** (units × training seeds; a run's score
  varies with the test sample and with the seed), estimated from three quantities:
  - *units*: the variance of the contrast over a bootstrap of the units with the trained models
    fixed (every setting and seed resampled with the same units), ``V_u``;
  - *seeds*: the sample variance (n − 1 denominator) of the per-seed contrasts on the whole split,
    over n, ``V_s``. A bootstrap over three seeds instead would give the seed mean only (n − 1)/n of
    its variance and a tail no wider than the three per-seed values: it rejected true nulls in
    10-22% of simulated cases when seed noise dominated (docs/results.md);
  - *interaction*: both hold the seeds' disagreement unit by unit (σ²_ε / nU in the two-way model
    x[i, u] = μ + β_u + γ_i + ε_iu of the per-unit contributions, the metric linearised), ``V_e``,
    the residual mean square of that table over n · U (:func:`interaction_variance`).
  The variance is (V_u − V_e)⁺ + (V_s − V_e)⁺ + V_e: units, seeds, interaction, each counted once
  (the ANOVA estimator of σ²_β/U + σ²_γ/n + σ²_ε/nU). The calibration test
  (tests/unit/test_significance_level.py) proves the level by simulation.
* **Test**: t = contrast / √variance against Student's t with Satterthwaite's (1946) degrees of
  freedom over the three parts (U − 1, n − 1 and (n − 1)(U − 1) each): with seed noise dominant
  ν → n − 1 (three seeds: 2, a seed-level t-test), with unit noise dominant ν → U − 1. The seed
  part enters the degrees of freedom at its upper :data:`DF_CONFIDENCE` confidence bound
  (V_s · (n − 1) / χ²_{n−1}(1 − DF_CONFIDENCE), less V_e): with the estimate itself, three seeds
  that happen to agree give a small V_s, hence many degrees of freedom exactly when the seed
  variance is underestimated, and the test rejected 6.9% of true nulls at a seed SD of 6 unit SEs.
  With one seed V_s is unknown: the test covers the units only and says so (``seeds == 1``).
* **Monte-Carlo error**: only V_u is random (B resamples). The resamples are cut into
  :data:`BATCHES` batches; the p-value of each batch's V_u gives, by batch means, the Monte-Carlo
  SE of the p-value (and, batch by batch through Holm, of the Holm p-value).
* **Holm** (1979): step-down adjusted p-values, controlling the family-wise error within a table;
  a comparison ranked r-th smallest of m is tested at level α/(m − r + 1).
* **Detectable difference**: (t_ν(1 − α'/2) + t_ν(power)) · SE, the smallest true difference the
  test finds with the given power at level α' (normal approximation of the non-central t); the
  views take α' = the Holm level of the comparison's rank, the level its verdict uses.
* **Verdict**: significant when p + 2 · MC SE < α, not significant when p − 2 · MC SE > α, else
  not resolved (:func:`decide`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np
from scipy.stats import chi2
from scipy.stats import t as student_t

Metric = Callable[[np.ndarray], np.ndarray]

BATCHES = 20            # batch means for the Monte-Carlo SE of a p-value
DF_CONFIDENCE = 0.9     # the seed variance's upper confidence bound the degrees of freedom assume
SIGNIFICANT, NOT_SIGNIFICANT, NOT_RESOLVED = "significant", "not significant", "not resolved"


@dataclass(frozen=True)
class Comparison:
    """One contrast of settings (all in the metric's units, e.g. percentage points).

    ``difference``: Σₛ wₛ · seed mean of setting s (treatment − control for two);
    ``standard_error`` = √(``unit_se``² + ``seed_se``² − ``interaction_se``²) (each part floored,
    :func:`variance_parts`); ``unit_se``: over the unit bootstrap; ``seed_se``: over the per-seed
    contrasts, None with one seed; ``interaction_se``: the seed × unit part both hold;
    ``df``: the Satterthwaite degrees of freedom of the t reference; ``p_value``: two-sided;
    ``p_mc_se``: its Monte-Carlo SE; ``p_batches``: the p-value of each resampling batch (for
    Holm's Monte-Carlo SE); ``per_seed``: the contrast of each seed on the whole split.
    """

    difference: float
    standard_error: float
    unit_se: float
    seed_se: float | None
    interaction_se: float
    df: float
    p_value: float
    p_mc_se: float
    p_batches: tuple[float, ...]
    per_seed: tuple[float, ...]
    resamples: int
    units: int
    seeds: int


def _checked(statistics: np.ndarray | Sequence, name: str) -> np.ndarray:
    array = np.asarray(statistics, dtype=float)
    if array.ndim == 2:                     # one seed
        array = array[None]
    if array.ndim != 3 or 0 in array.shape:
        raise ValueError(f"{name}: expected unit statistics of shape [seeds, units, k] (or [units, k]) "
                         f"with no empty axis; got shape {array.shape}")
    return array


def variance_parts(unit_variance: float, seed_variance: float | None,
                   interaction_variance: float = 0.0) -> tuple[float, float, float]:
    """``(units, seeds, interaction)``: the variance of a contrast of seed means split into its
    crossed random effects (module doc). ``unit_variance`` (the unit bootstrap) and
    ``seed_variance`` (the per-seed contrasts) each hold the seed × unit interaction
    (``interaction_variance``, from the linearised per-seed, per-unit contributions) once; it is
    taken out of both, each part floored at 0. ``seed_variance`` None (one seed): no seed part."""
    shared = interaction_variance if seed_variance is not None else 0.0
    return (max(unit_variance - shared, 0.0), max((seed_variance or 0.0) - shared, 0.0), shared)


def t_test_p(difference: float, unit_variance: float, seed_variance: float | None, seeds: int,
             units: int, interaction_variance: float = 0.0) -> tuple[float, float, float]:
    """``(p, ν, variance)``: the two-sided p-value of ``difference`` / √variance against Student's t,
    the variance being the sum of :func:`variance_parts`, ν Satterthwaite's degrees of freedom of
    that sum with the seed variance at its upper :data:`DF_CONFIDENCE` bound (module doc).
    ``seed_variance`` None (one seed): the units' variance alone, ν = units − 1. No variance at
    all: p = 1 for no difference, else 0."""
    unit_part, seed_part, shared = variance_parts(unit_variance, seed_variance, interaction_variance)
    total = unit_part + seed_part + shared
    if total <= 0.0:
        return (1.0 if difference == 0.0 else 0.0), float("inf"), 0.0
    bound = 0.0
    if seed_variance is not None and seeds > 1:
        bound = max(seed_variance * (seeds - 1) / chi2.ppf(1.0 - DF_CONFIDENCE, seeds - 1) - shared, 0.0)
    parts = [(unit_part, units - 1), (bound, seeds - 1), (shared, (seeds - 1) * (units - 1))]
    denominator = sum(v ** 2 / dof for v, dof in parts if v > 0 and dof > 0)
    df = sum(v for v, _ in parts) ** 2 / denominator if denominator > 0 else float("inf")
    return float(2.0 * student_t.sf(abs(difference) / np.sqrt(total), df)), float(df), float(total)


def _gradient(metric: Metric, totals: np.ndarray) -> np.ndarray:
    """∂ metric / ∂ totals at ``totals`` ``[..., k]`` by central differences: ``[..., k]``."""
    k = totals.shape[-1]
    step = 1e-6 * np.maximum(1.0, np.abs(totals))                              # [..., k]
    eye = np.eye(k)
    plus = totals[..., None, :] + eye * step[..., None, :]                     # [..., k, k]
    minus = totals[..., None, :] - eye * step[..., None, :]
    return (metric(plus) - metric(minus)) / (2.0 * step)


def interaction_variance(arrays: Sequence[np.ndarray], weights: np.ndarray, metric: Metric) -> float:
    """The seed × unit interaction's share of the variance of the contrast of seed means: each
    setting's metric linearised at its seeds' mean totals, x[i, u] = U · Σₛ wₛ ∇fₛ · stats[s, i, u]
    (a unit's contribution to seed i's contrast), and the residual mean square of the two-way table
    x (seeds × units, no replication) over n · U. 0 with one seed."""
    n_seeds, n_units, _ = arrays[0].shape
    if n_seeds < 2 or n_units < 2:
        return 0.0
    x = np.zeros((n_seeds, n_units))
    for w, a in zip(weights, arrays):
        gradient = _gradient(metric, a.sum(axis=1).mean(axis=0))              # [k]
        x += w * n_units * (a @ gradient)                                     # [seeds, units]
    residual = x - x.mean(axis=1, keepdims=True) - x.mean(axis=0, keepdims=True) + x.mean()
    mean_square = float((residual ** 2).sum()) / ((n_seeds - 1) * (n_units - 1))
    return mean_square / (n_seeds * n_units)


def contrast_test(sides: Sequence[np.ndarray | Sequence], weights: Sequence[float], metric: Metric, *,
                  resamples: int = 10_000, seed: int = 0, batches: int = BATCHES, chunk: int = 500) -> Comparison:
    """The seed-and-unit t-test of the contrast Σₛ wₛ · metric(setting s) (module doc).

    Args:
        sides: per setting, unit statistics of shape ``[seeds, units, k]`` (``[units, k]`` for one
            seed); the same units in the same order everywhere, seed i paired with seed i.
        weights: the contrast's weight of each setting (``(-1, 1)``: the second minus the first).
        metric: the corpus metric of summed statistics, ``[..., k]`` → ``[...]``.
        resamples: bootstrap resamples B of the units (a multiple of ``batches`` is best).
        seed: the resampling generator's seed (the same seed gives the same result).
        batches: batches for the Monte-Carlo SE (at least 2, at most ``resamples``).
        chunk: resamples computed at once (memory: ``chunk × units`` counts).

    Returns:
        The :class:`Comparison`.

    Raises:
        ValueError: sides whose shapes differ or are not ``[seeds, units, k]``, weights not one per
            side, or ``resamples`` < ``batches`` < 2.
    """
    arrays = [_checked(side, f"setting {i}") for i, side in enumerate(sides)]
    if len(weights) != len(arrays) or not arrays:
        raise ValueError(f"one weight per setting: {len(arrays)} settings, {len(weights)} weights")
    if any(a.shape != arrays[0].shape for a in arrays):
        raise ValueError("paired settings need the same seeds, units and statistics: shapes [seeds, units, k] "
                         + ", ".join(str(a.shape) for a in arrays))
    if not 2 <= batches <= resamples:
        raise ValueError(f"need 2 <= batches <= resamples, got {batches} batches of {resamples} resamples")
    w = np.asarray(weights, dtype=float)
    n_seeds, n_units, _ = arrays[0].shape
    # each seed's contrast on the whole split: [seeds]
    per_seed = sum(wi * metric(a.sum(axis=1)) for wi, a in zip(w, arrays))
    observed = float(per_seed.mean())
    seed_variance = float(per_seed.var(ddof=1)) / n_seeds if n_seeds > 1 else None
    rng = np.random.Generator(np.random.PCG64(seed))
    uniform = np.full(n_units, 1.0 / n_units)
    deltas = np.empty(resamples)
    for start in range(0, resamples, chunk):
        size = min(chunk, resamples - start)
        counts = rng.multinomial(n_units, uniform, size=size).astype(float)          # [size, units]
        # the contrast of the seed means on each resample (the same units for every setting and seed)
        deltas[start:start + size] = sum(wi * metric(np.einsum("bu,suk->bsk", counts, a)).mean(axis=1)
                                         for wi, a in zip(w, arrays))
    unit_variance = float(deltas.var(ddof=1))
    shared = interaction_variance(arrays, w, metric)
    p, df, total = t_test_p(observed, unit_variance, seed_variance, n_seeds, n_units, shared)
    p_batches = tuple(t_test_p(observed, float(part.var(ddof=1)), seed_variance, n_seeds, n_units, shared)[0]
                      for part in np.array_split(deltas, batches))
    return Comparison(difference=observed, standard_error=float(np.sqrt(total)),
                      unit_se=float(np.sqrt(unit_variance)),
                      seed_se=None if seed_variance is None else float(np.sqrt(seed_variance)),
                      interaction_se=float(np.sqrt(shared)), df=df,
                      p_value=p, p_mc_se=batch_mc_se(p_batches), p_batches=p_batches,
                      per_seed=tuple(float(x) for x in per_seed), resamples=resamples, units=n_units, seeds=n_seeds)


def compare_settings(control: np.ndarray | Sequence, treatment: np.ndarray | Sequence, metric: Metric,
                     **options) -> Comparison:
    """:func:`contrast_test` of metric(treatment) − metric(control); ``options`` as there."""
    return contrast_test([control, treatment], (-1.0, 1.0), metric, **options)


def batch_mc_se(values: Sequence[float]) -> float:
    """The batch-means Monte-Carlo SE of an estimate computed on all batches together: the sample
    std of the per-batch estimates over √(batches)."""
    values = np.asarray(values, dtype=float)
    return float(values.std(ddof=1) / np.sqrt(len(values))) if len(values) > 1 else 0.0


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


def holm_levels(p_values: Sequence[float], alpha: float = 0.05) -> list[float]:
    """The level each comparison is tested at by Holm's procedure: α / (m − r + 1) for the one
    whose p-value ranks r-th smallest of m (ties in the given order)."""
    order = sorted(range(len(p_values)), key=lambda i: p_values[i])
    levels = [0.0] * len(p_values)
    for rank, i in enumerate(order):
        levels[i] = alpha / (len(p_values) - rank)
    return levels


def holm_mc_se(p_batches: Sequence[Sequence[float]]) -> list[float]:
    """The Monte-Carlo SE of each Holm-adjusted p-value of a family: Holm applied batch by batch
    (``p_batches[c][k]``: comparison c's p-value on resampling batch k), then batch means."""
    if not p_batches:
        return []
    per_batch = np.array([holm([float(p[k]) for p in p_batches]) for k in range(len(p_batches[0]))])
    return [batch_mc_se(per_batch[:, c]) for c in range(len(p_batches))]


def detectable_difference(standard_error: float, alpha: float = 0.05, power: float = 0.8,
                          df: float = float("inf")) -> float:
    """The smallest true difference a two-sided t-test with ``df`` degrees of freedom at level
    ``alpha`` detects with probability ``power`` when its estimate has ``standard_error``:
    (t(1 − α/2) + t(power)) · SE (with infinite ``df``: the normal's 1.96 + 0.84 = 2.80 at 0.05, 0.8).

    Raises:
        ValueError: ``alpha`` or ``power`` outside (0, 1), a negative standard error, or ``df`` <= 0.
    """
    if not (0.0 < alpha < 1.0 and 0.0 < power < 1.0) or standard_error < 0 or not df > 0:
        raise ValueError(f"need 0 < alpha, power < 1, SE >= 0 and df > 0; got alpha={alpha}, power={power}, "
                         f"SE={standard_error}, df={df}")
    return float((student_t.ppf(1.0 - alpha / 2.0, df) + student_t.ppf(power, df)) * standard_error)


def decide(p_value: float, mc_se: float, alpha: float = 0.05) -> str:
    """:data:`SIGNIFICANT` when ``p_value`` is below ``alpha`` by more than two Monte-Carlo SEs,
    :data:`NOT_SIGNIFICANT` when above it by more, else :data:`NOT_RESOLVED` (a verdict that
    another resampling seed could flip is no verdict)."""
    if p_value + 2.0 * mc_se < alpha:
        return SIGNIFICANT
    if p_value - 2.0 * mc_se > alpha:
        return NOT_SIGNIFICANT
    return NOT_RESOLVED
