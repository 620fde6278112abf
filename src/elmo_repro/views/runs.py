"""Finished runs as the tables read them, and what the tables share: a task's runs grouped over
seeds, Welch's test, the relative increase, the paper's numbers.

A table reads ``results/runs/<run id>/{spec,metrics}.json`` and the paper's numbers
(``paper/*.csv``); it never trains, and aggregation over seeds happens only in the views.

* Relative increase = error reduction (+ELMo − baseline) / (100 − baseline), as the paper's Table 1.
* Whether a difference is more than seed noise: Welch's two-sided t-test over the per-seed test
  scores (scipy ``ttest_ind(equal_var=False)``; needs two seeds or more a side): +ELMo against the
  baseline, and +ELMo against the char-layer control (is the gain from context?).
* A run whose best dev epoch is its last was still improving when training stopped: its score is
  marked † (more epochs might change the comparison).
* A run whose training loss never fell clearly below the prior's (the loss of predicting the
  training label frequencies whatever the input, ``prior_train_loss`` of the task's floor; "clearly":
  by ``CLEARLY_BELOW``) learned nothing from its input: its seed is marked ‡ and the cell counts
  such runs. It stays in the mean (nothing is dropped silently), so a ‡ says the spread measures
  optimisation luck, not the representation.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path
from statistics import mean, stdev
from typing import Any

from scipy.stats import ttest_ind

from ..io import InputError, read_json, read_text

STILL_LEARNING = "†"
NEVER_LEARNED = "‡"
CLEARLY_BELOW = 0.05     # a run learned when its lowest epoch training loss is 5% below the prior's


@dataclass(frozen=True)
class Run:
    """One finished run as the tables see it."""

    id: str
    spec: dict[str, Any]
    metrics: dict[str, float]
    train_loss: tuple[float, ...] = ()          # per epoch, from the run's history.csv

    @property
    def still_learning(self) -> bool:
        return self.metrics.get("best_epoch") == self.metrics.get("epochs")

    def never_learned(self, prior_loss: float | None) -> bool:
        """True when every epoch's training loss stayed above (1 - CLEARLY_BELOW) x ``prior_loss``
        (False without a prior or a history)."""
        return prior_loss is not None and bool(self.train_loss) and \
            min(self.train_loss) > (1.0 - CLEARLY_BELOW) * prior_loss


def read_train_loss(path: Path) -> tuple[float, ...]:
    """The ``train_loss`` column of a run's ``history.csv`` (empty when the file is absent).

    Raises:
        InputError: a history without a ``train_loss`` column or with a non-numeric value.
    """
    if not path.is_file():
        return ()
    rows = list(csv.DictReader(read_text(path).splitlines()))
    try:
        return tuple(float(row["train_loss"]) for row in rows)
    except (KeyError, TypeError, ValueError):
        raise InputError(path, "expected a numeric train_loss column") from None


def load_runs(*runs_dirs: str | Path) -> tuple[list[Run], dict[str, dict[str, float]]]:
    """Every run under the ``runs_dirs`` (folders with ``spec.json`` and ``metrics.json``; a
    missing directory holds none) and every task's floor (``<task>-floor/metrics.json``), by task.

    Raises:
        InputError: a run folder without its metrics (an interrupted or foreign folder).
    """
    runs, floors = [], {}
    folders = [folder for runs_dir in map(Path, runs_dirs) if runs_dir.is_dir() for folder in runs_dir.iterdir()]
    for folder in sorted(folders, key=lambda f: f.name):
        if folder.name.endswith("-floor"):
            floors[folder.name.removesuffix("-floor")] = read_json(folder / "metrics.json")
        elif (folder / "spec.json").is_file():
            if not (folder / "metrics.json").is_file():
                raise InputError(folder / "metrics.json", "run has a spec but no metrics")
            runs.append(Run(folder.name, read_json(folder / "spec.json"), read_json(folder / "metrics.json"),
                            read_train_loss(folder / "history.csv")))
    return runs, floors


def read_paper_table(path: str | Path) -> list[dict[str, str]]:
    """The paper's rows from a CSV (strings, as printed)."""
    return list(csv.DictReader(read_text(path).splitlines()))


def relative_error_reduction(baseline: float, improved: float) -> float:
    """Percent of the baseline's error (100 − score) removed: 100·(improved − baseline)/(100 − baseline)."""
    return 100.0 * (improved - baseline) / (100.0 - baseline)


def welch_p(improved: list[float], baseline: list[float]) -> float | None:
    """Two-sided p-value of Welch's t-test between two sets of per-seed scores; None with fewer
    than two scores on a side or when both sides have no spread."""
    if min(len(improved), len(baseline)) < 2 or (len(set(improved)) == 1 and len(set(baseline)) == 1):
        return None
    return float(ttest_ind(improved, baseline, equal_var=False).pvalue)


def group(runs: list[Run], task: str, elmo_name: str | None, seeds: list[int], metric: str,
           prior_loss: float | None = None) -> dict[str, Any] | None:
    """Mean, sample std (0 for one seed) and per-seed test scores of a task's runs with one ELMo
    spec on the full training set, the seeds still learning (†) and those that never learned (‡,
    against ``prior_loss``); None when none of the table's seeds has run."""
    if elmo_name is None:
        return None
    chosen = sorted((r for r in runs if r.spec["task"] == task and r.spec["elmo_name"] == elmo_name
                     and r.spec["train_fraction"] == 1.0 and r.spec["seed"] in seeds),
                    key=lambda r: r.spec["seed"])
    if not chosen:
        return None
    scores = [r.metrics[f"test_{metric}"] for r in chosen]
    return {"mean": mean(scores), "std": stdev(scores) if len(scores) > 1 else 0.0,
            # None where the dev split has no such score (SRL's Brown test set has no dev part)
            "dev_mean": mean(r.metrics[f"dev_{metric}"] for r in chosen)
            if all(f"dev_{metric}" in r.metrics for r in chosen) else None,
            "per_seed": {r.spec["seed"]: s for r, s in zip(chosen, scores)},
            "still_learning": [r.spec["seed"] for r in chosen if r.still_learning],
            "never_learned": [r.spec["seed"] for r in chosen if r.never_learned(prior_loss)],
            "runs": [r.id for r in chosen]}


def compare(improved: dict[str, Any] | None, other: dict[str, Any] | None) -> float | None:
    """:func:`welch_p` of two groups' per-seed scores; None when either group has no run."""
    if improved is None or other is None:
        return None
    return welch_p(list(improved["per_seed"].values()), list(other["per_seed"].values()))
