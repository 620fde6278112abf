"""Significance of comparisons between groups of runs (docs/results.md, "Significance"): each run's
committed unit statistics (``<run folder>/units.csv``, written by the run) are read, seeds are
paired by seed number, and :func:`elmo_repro.significance.contrast_test` gives the difference, its
standard error over seeds and test units, the t-test's p-value and its Monte-Carlo SE.
:func:`holm_table` then adjusts a table's comparisons with Holm's procedure, gives each the
smallest difference it could detect at the level its Holm rank is tested at, and its verdict
(significant / not significant / not resolved within Monte-Carlo error).

Nothing here reads a DVC output: a clone with no cache re-derives every committed p-value
(``python -m elmo_repro.views.rederive``).
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

import numpy as np

from ..io import InputError
from ..significance import (BATCHES, Comparison, contrast_test, decide, detectable_difference, holm,
                            holm_levels, holm_mc_se)
from ..tasks.units import UNITS_FILE, read_units, task_units
from .query import TableRun

RESAMPLES = 10_000
SPLIT = "test"
ALPHA, POWER = 0.05, 0.8


Memo = dict[tuple[str, str], tuple[list[str], np.ndarray]]    # (run id, split) -> its unit statistics


def run_statistics(task: str, runs: list[TableRun], split: str = SPLIT,
                   memo: Memo | None = None) -> tuple[list[str], np.ndarray]:
    """``(unit keys, [seeds, units, k])`` of ``runs`` (one task) on ``split``, in the order given;
    ``memo`` keeps each run's statistics for the other comparisons of a view (a run is read once).

    Raises:
        InputError: a run without ``units.csv`` or without the split, or whose units differ from
            the first run's.
    """
    units = task_units(task)
    memo = {} if memo is None else memo
    keys, per_run = None, []
    for run in runs:
        if (run.id, split) not in memo:
            memo[(run.id, split)] = read_units(run.folder / UNITS_FILE, task, split)
        run_keys, statistics = memo[(run.id, split)]
        if keys is not None and run_keys != keys:
            raise InputError(run.folder / UNITS_FILE, f"its {split} {units.UNIT}s differ from those of {runs[0].id}")
        keys = run_keys
        per_run.append(statistics)
    return keys or [], np.stack(per_run)


def paired(groups: list[list[TableRun]], task: str) -> list[list[TableRun]]:
    """Each group reduced to the seeds every group has, in seed order (seed i paired with seed i).

    Raises:
        InputError: the groups share no seed.
    """
    seeds = sorted(set.intersection(*({r.spec.seed for r in group} for group in groups)))
    if not seeds:
        raise InputError("params.yaml", f"{task}: no seed in common between "
                         + " and ".join(str([r.id for r in group]) for group in groups))
    return [[next(r for r in group if r.spec.seed == s) for s in seeds] for group in groups]


def contrast(task: str, groups: list[list[TableRun]], weights: tuple[float, ...], resamples: int = RESAMPLES,
             split: str = SPLIT, memo: Memo | None = None, seed: int = 0) -> dict[str, Any]:
    """The seed-and-unit t-test of Σ weights · (seed mean of each group's metric) on ``split``:
    the :class:`~elmo_repro.significance.Comparison`'s fields, the unit's and metric's names and
    the runs of each group. ``seed``: the resampling seed (the tables use 0).

    Raises:
        InputError: the groups share no seed, or a run lacks its unit statistics.
    """
    groups = paired(groups, task)
    units = task_units(task)
    sides = [run_statistics(task, group, split, memo)[1] for group in groups]
    result: Comparison = contrast_test(sides, weights, units.reduce, resamples=resamples, seed=seed)
    return {**asdict(result), "unit": units.UNIT, "metric": units.METRIC, "split": split,
            "runs": [[r.id for r in group] for group in groups]}


def compare(task: str, control: list[TableRun], treatment: list[TableRun], resamples: int = RESAMPLES,
            split: str = SPLIT, memo: Memo | None = None, seed: int = 0) -> dict[str, Any]:
    """:func:`contrast` of ``treatment`` − ``control``, with ``control_runs`` and
    ``treatment_runs`` (the seeds both sides have).

    Raises:
        InputError: the sides share no seed, or a run lacks its unit statistics.
    """
    result = contrast(task, [control, treatment], (-1.0, 1.0), resamples, split, memo, seed)
    control_runs, treatment_runs = result.pop("runs")
    return {**result, "control_runs": control_runs, "treatment_runs": treatment_runs}


def format_p(p: float, mc_se: float | None = None) -> str:
    """A p-value for a table: 4 decimals (``< 0.0001`` below), with ``± MC SE`` when given and
    visible at that precision."""
    text = "< 0.0001" if p < 0.0001 else f"{p:.4f}"
    return text + (f" ± {mc_se:.4f}" if mc_se is not None and mc_se >= 0.00005 else "")


def holm_table(comparisons: list[dict[str, Any]], alpha: float = ALPHA, power: float = POWER) -> list[dict[str, Any]]:
    """The comparisons of one family (a table and split) with ``p_holm`` and its Monte-Carlo SE
    ``p_holm_mc_se``; ``level``, the α its Holm rank is tested at; ``detectable``, the smallest
    true difference found with ``power`` at that level (with the comparison's own t reference);
    and ``decision`` (:func:`~elmo_repro.significance.decide` of the Holm p). The per-batch
    p-values are dropped."""
    adjusted = holm([c["p_value"] for c in comparisons])
    mc = holm_mc_se([c["p_batches"] for c in comparisons])
    levels = holm_levels([c["p_value"] for c in comparisons], alpha)
    out = []
    for c, p, se, level in zip(comparisons, adjusted, mc, levels):
        row = {k: v for k, v in c.items() if k != "p_batches"}
        out.append({**row, "p_holm": p, "p_holm_mc_se": se, "level": level,
                    "detectable": detectable_difference(c["standard_error"], level, power, c["df"]),
                    "decision": decide(p, se, alpha)})
    return out


def significance_note(resamples: int = RESAMPLES) -> str:
    """What the p-values, SEs and detectable differences of a table mean (one paragraph)."""
    return (f"Test: the difference of seed means against its standard error over training seeds and test "
            f"units together (crossed random effects): SE² = the variance of the per-seed differences / "
            f"seeds + the variance over {resamples:,} bootstrap resamples of the split's independent units "
            "(models fixed) − the seed × unit interaction both hold (SE columns: seeds; units; interaction); p from "
            "Student's t with Welch-Satterthwaite degrees of freedom (about seeds − 1 when seed noise "
            "dominates; docs/results.md shows its level by simulation). ± after a p: its Monte-Carlo SE "
            f"({BATCHES} batch means). Holm over the table's comparisons of a split; \\* = significant "
            "(Holm p below 0.05 by more than two Monte-Carlo SEs), ? = not resolved (within two). "
            "Detectable: the smallest true difference the test finds with power 0.8 at the level its Holm "
            "rank is tested at (0.05 / (m − rank + 1)); a smaller difference the paper reports cannot be "
            "confirmed or refuted here.")


def mark(row: dict[str, Any]) -> str:
    """`` *`` for a significant comparison, `` ?`` for one not resolved, else nothing."""
    return {"significant": " *", "not resolved": " ?"}.get(row["decision"], "")


COMPARISON_HEADER = ("| Task | Comparison | Units | Difference | SE (seeds; units; interaction) | df | p | p (Holm) | Detectable |",
                     "|---|---|---|---|---|---|---|---|---|")


def comparison_row(task: str, label: str, c: dict[str, Any]) -> str:
    """One comparison as a table row (:func:`.bootstrap.holm_table`'s fields)."""
    seed_se = "—" if c["seed_se"] is None else f"{c['seed_se']:.2f}"
    return (f"| {task} | {label} | {c['units']:,} {c['unit']}s × {c['seeds']} seeds | {c['difference']:+.2f}{mark(c)} | "
            f"{c['standard_error']:.2f} ({seed_se}; {c['unit_se']:.2f}; {c['interaction_se']:.2f}) | {c['df']:.1f} | "
            f"{format_p(c['p_value'], c['p_mc_se'])} | {format_p(c['p_holm'], c['p_holm_mc_se'])} | "
            f"{c['detectable']:.2f} |")
