"""Paired-bootstrap comparisons of two groups of runs (issue 27, "Significance"): the runs' test
predictions are scored per evaluation unit (``tasks/<task>/units.py``), seeds are paired by seed
number, and :func:`elmo_repro.significance.paired_bootstrap` gives the difference, its p-value,
its standard error and the smallest difference the comparison could detect (α = 0.05, power 0.8).
Holm's correction runs over every comparison of one table (:func:`holm_table`).
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

import numpy as np

from ..io import InputError, read_json
from ..significance import Comparison, holm, paired_bootstrap
from ..tasks.base import get_task
from ..tasks.units import task_units
from .query import TableRun

RESAMPLES = 10_000
SPLIT = "test"


Memo = dict[tuple[str, str], tuple[list[str], np.ndarray]]    # (run id, split) -> its unit statistics


def _scored(task: str, run: TableRun, examples: list[dict], split: str) -> tuple[list[str], np.ndarray]:
    path = run.folder / "predictions.json"
    if not path.is_file():
        raise InputError(path, "missing: the run's predictions are a DVC output (`dvc repro` or `dvc pull`)")
    predictions = read_json(path).get(split)
    if predictions is None:
        raise InputError(path, f"no {split!r} predictions")
    return task_units(task).statistics(examples, predictions)


def run_statistics(task: str, runs: list[TableRun], examples: list[dict],
                   split: str = SPLIT, memo: Memo | None = None) -> tuple[list[str], np.ndarray]:
    """``(unit keys, [seeds, units, k])`` of ``runs`` (one task) on ``split``, in the order given;
    ``memo`` keeps each run's statistics for the other comparisons of a view (a run is read once).

    Raises:
        InputError: a run without test predictions, or whose units differ from the first run's.
    """
    units = task_units(task)
    memo = {} if memo is None else memo
    keys, per_run = None, []
    for run in runs:
        if (run.id, split) not in memo:
            memo[(run.id, split)] = _scored(task, run, examples, split)
        run_keys, statistics = memo[(run.id, split)]
        path = run.folder / "predictions.json"
        if keys is not None and run_keys != keys:
            raise InputError(path, f"its {units.UNIT}s differ from those of {runs[0].id}")
        keys = run_keys
        per_run.append(statistics)
    return keys or [], np.stack(per_run)


def compare(task: str, control: list[TableRun], treatment: list[TableRun], examples: list[dict] | None = None,
            resamples: int = RESAMPLES, split: str = SPLIT, memo: Memo | None = None) -> dict[str, Any]:
    """The paired bootstrap of ``treatment`` − ``control`` on the task's ``split``, seeds paired by
    seed number (the seeds both sides have): the :class:`~elmo_repro.significance.Comparison`'s
    fields, the unit's name and the runs of each side.

    Raises:
        InputError: the sides share fewer than one seed, or a run lacks its predictions.
    """
    seeds = sorted({r.spec.seed for r in control} & {r.spec.seed for r in treatment})
    if not seeds:
        raise InputError("params.yaml", f"{task}: no seed in common between {[r.id for r in control]} "
                         f"and {[r.id for r in treatment]}")
    pick = lambda runs: [next(r for r in runs if r.spec.seed == s) for s in seeds]  # noqa: E731
    control, treatment = pick(control), pick(treatment)
    examples = get_task(task).read(split) if examples is None else examples
    units = task_units(task)
    _, a = run_statistics(task, control, examples, split, memo)
    _, b = run_statistics(task, treatment, examples, split, memo)
    result: Comparison = paired_bootstrap(a, b, units.reduce, resamples=resamples, seed=0)
    return {**asdict(result), "unit": units.UNIT, "metric": units.METRIC, "split": split,
            "control_runs": [r.id for r in control], "treatment_runs": [r.id for r in treatment]}


def format_p(p: float, resamples: int = RESAMPLES) -> str:
    """A bootstrap p-value for a table: ``≤ 1/(B+1)`` at the smallest value B resamples can give."""
    floor = 1.0 / (resamples + 1)
    return f"≤ {floor:.4f}" if p <= floor else f"{p:.4f}"


def holm_table(comparisons: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The comparisons with ``p_holm``: Holm-adjusted over all of them (one table = one family)."""
    adjusted = holm([c["p_value"] for c in comparisons])
    return [{**c, "p_holm": p} for c, p in zip(comparisons, adjusted)]
