"""The level and power of the tables' significance test with three seeds, by simulation.

``python -m benchmarks.significance_level [--sims N]`` prints, for synthetic accuracy tasks whose
seed noise runs from none to several times the unit-level standard error, how often each test
rejects at α = 0.05: on true nulls (the level; at most 0.05 + 2 Monte-Carlo SE is calibrated) and
on true differences (the power). Tests compared, on the same simulated data:

* ``seed+unit t``: :func:`elmo_repro.significance.compare_settings`, what the tables use;
* ``bootstrap (units, seeds)``: the earlier paired bootstrap, resampling units and the three seeds
  with replacement, p from the shifted bootstrap distribution (kept here as the reference);
* ``Welch (seeds)``: Welch's t-test over the per-seed scores on the whole test set.

The data: ``units`` independent units (SNLI premises) of ``examples`` examples each; a unit's
difficulty q ~ Beta(3, 2) and how much easier it is for the treatment than for the control,
δ ~ N(0, ``unit_sd``) (a setting × unit interaction: ELMo helps on some sentences and hurts on
others; only a test over units sees it); each (setting, seed) draws an offset N(0, seed SD) (a
training seed's luck), and each example is right with probability clip(q ∓ δ/2 + offset [+ effect],
0.01, 0.99), independently (the per-example disagreement between seeds). Splitting δ symmetrically
keeps the clipped null exactly null. The unit-level SE is the standard deviation of the difference
of seed means with no seed noise, measured first; the seed SD is given as a multiple of it. Writes ``benchmarks/results/significance_level.json`` with ``--out``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
from scipy.stats import ttest_ind

from elmo_repro.significance import compare_settings
from elmo_repro.tasks.units import mean_percent

ALPHA = 0.05


UNIT_SD = 0.25        # the setting × unit interaction's SD, in probability (as large as the examples' noise)


def simulate(rng: np.random.Generator, units: int, seeds: int, seed_sd: float, effect: float = 0.0,
             examples: int = 3, unit_sd: float = UNIT_SD) -> tuple[np.ndarray, np.ndarray]:
    """(control, treatment) unit statistics ``[seeds, units, 2]`` (correct, examples) of one
    simulated comparison; ``seed_sd`` and ``effect`` in accuracy points, ``unit_sd`` in probability."""
    difficulty = rng.beta(3.0, 2.0, size=units)
    helps = rng.normal(0.0, unit_sd, size=units)
    sides = []
    for shift, half in ((0.0, -0.5), (effect, 0.5)):
        offsets = rng.normal(0.0, seed_sd / 100.0, size=(seeds, 1))
        p = np.clip(difficulty[None, :] + half * helps[None, :] + offsets + shift / 100.0, 0.01, 0.99)
        correct = rng.binomial(examples, p)
        sides.append(np.stack([correct, np.full_like(correct, examples)], axis=-1).astype(float))
    return sides[0], sides[1]


def old_bootstrap_p(control: np.ndarray, treatment: np.ndarray, resamples: int, rng: np.random.Generator) -> float:
    """The earlier test: resample units and (paired) seed indices, shifted bootstrap p."""
    n_seeds, n_units, _ = control.shape
    observed = float(mean_percent(treatment.sum(axis=1)).mean() - mean_percent(control.sum(axis=1)).mean())
    counts = rng.multinomial(n_units, np.full(n_units, 1.0 / n_units), size=resamples).astype(float)
    per_seed = [mean_percent(np.einsum("bu,suk->bsk", counts, side)) for side in (control, treatment)]
    drawn = rng.integers(0, n_seeds, size=(resamples, n_seeds))
    per_seed = [np.take_along_axis(values, drawn, axis=1) for values in per_seed]
    deltas = per_seed[1].mean(axis=1) - per_seed[0].mean(axis=1)
    return (1 + np.count_nonzero(np.abs(deltas - observed) >= abs(observed))) / (resamples + 1)


def welch_p(control: np.ndarray, treatment: np.ndarray) -> float:
    a, b = mean_percent(control.sum(axis=1)), mean_percent(treatment.sum(axis=1))
    return float(ttest_ind(b, a, equal_var=False).pvalue) if (a.std() + b.std()) > 0 else 1.0


def unit_se(units: int, seeds: int, sims: int, rng: np.random.Generator) -> float:
    """The SD of the difference of seed means with no seed noise (the unit-level SE)."""
    diffs = [mean_percent(t.sum(axis=1)).mean() - mean_percent(c.sum(axis=1)).mean()
             for c, t in (simulate(rng, units, seeds, 0.0) for _ in range(sims))]
    return float(np.std(diffs, ddof=1))


def rejection_rates(ratio: float, effect_in_se: float, *, units: int = 200, seeds: int = 3, sims: int = 1000,
                    resamples: int = 400, seed: int = 0, reference: bool = False, se: float | None = None) -> dict:
    """How often each test rejects at α in ``sims`` simulated comparisons with seed SD = ``ratio`` ×
    the unit-level SE and a true difference of ``effect_in_se`` × the total SE of the difference
    (unit SE and seed SD combined over ``seeds``); ``reference`` adds the earlier bootstrap and Welch."""
    rng = np.random.default_rng(seed)
    se = unit_se(units, seeds, 300, rng) if se is None else se
    seed_sd = ratio * se
    total_se = float(np.sqrt(se ** 2 + 2.0 * seed_sd ** 2 / seeds))
    effect = effect_in_se * total_se
    hits = {"seed+unit t": 0, **({"bootstrap (units, seeds)": 0, "Welch (seeds)": 0} if reference else {})}
    for i in range(sims):
        control, treatment = simulate(rng, units, seeds, seed_sd, effect)
        result = compare_settings(control, treatment, mean_percent, resamples=resamples, seed=i)
        hits["seed+unit t"] += result.p_value < ALPHA
        if reference:
            hits["bootstrap (units, seeds)"] += old_bootstrap_p(control, treatment, resamples, rng) < ALPHA
            hits["Welch (seeds)"] += welch_p(control, treatment) < ALPHA
    return {"seed_sd_over_unit_se": ratio, "effect_over_total_se": effect_in_se, "unit_se": se,
            "seed_sd": seed_sd, "effect": effect, "sims": sims, "units": units, "seeds": seeds,
            "mc_se_at_alpha": float(np.sqrt(ALPHA * (1 - ALPHA) / sims)),
            "rates": {name: count / sims for name, count in hits.items()}}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sims", type=int, default=2000)
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--ratios", type=float, nargs="+", default=[0.0, 0.5, 1.0, 2.0, 3.0, 6.0],
                        help="seed SD as multiples of the unit SE")
    parser.add_argument("--effects", type=float, nargs="+", default=[0.0, 3.0],
                        help="true differences as multiples of the total SE (0: the level)")
    parser.add_argument("--out", type=Path)
    known = parser.parse_args(argv)
    se = unit_se(200, 3, 500, np.random.default_rng(1))
    rows = []
    for effect in known.effects:
        for ratio in known.ratios:
            row = rejection_rates(ratio, effect, sims=known.sims, resamples=known.resamples, reference=True, se=se,
                                  seed=int(100 * ratio + 10 * effect))
            rows.append(row)
            print(f"effect {effect:.0f} SE | seed SD {ratio:.1f} × unit SE | "
                  + " | ".join(f"{name} {rate:.3f}" for name, rate in row["rates"].items()), flush=True)
    if known.out:
        known.out.write_text(json.dumps(rows, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
