"""Figure 1 of the paper (§5.4, sample efficiency): the baseline's and +ELMo's development-set
metric against the number of training examples, for the tasks ``tables.figure1.runs`` lists
(SNLI and SRL, as the paper).

The training subsets are nested and the same for every seed (``train_fractions`` of the table
spec; :func:`elmo_repro.training.trainer.select_training` takes a prefix of one fixed permutation),
so the x axis is each run's own ``train_examples``. Writes

* ``figure1.csv``: one row per (task, setting, training examples): dev and test mean and sample
  std over seeds, the updates each run made, how many of its runs never learned, and the run
  names (declared as a DVC plot: ``dvc plots show``);
* ``figure1.json``: the rows and the tests (below);
* ``figure1.md``: the same as tables;
* ``figure1.png``: one panel per task, dev metric against training examples (log scale), the seed
  mean with a ± std band; a point holding a never-learned run is drawn hollow and marked ‡.

A run **never learned** when its dev metric is not above the task's floor (its trivial baseline),
or, for a classifier, when its training loss never fell clearly below the label prior's
(:meth:`elmo_repro.views.runs.Run.never_learned`). The paper trained every point to convergence; a
small-data run here gets the full run's updates (``small_data: updates``; the ``updates`` column).

**The finding tested** (§5.4, "ELMo's gain is larger with less training data"): on each split, per
task, ELMo's gain at every training size, and the gain at the smallest size minus the gain on the
full set, a contrast of four groups of runs (:func:`.bootstrap.contrast`: seeds and dev/test units;
Holm over the figure's comparisons of a split).
"""

from __future__ import annotations

import io
from pathlib import Path
from statistics import mean, stdev
from typing import Any

import pandas as pd

from ..experiments.specs import NO_ELMO, RUNS_DIRS
from ..experiments.tasks import TASKS
from ..io import InputError, read_json
from .runs import NEVER_LEARNED, Run, read_train_loss
from . import Output
from .bootstrap import COMPARISON_HEADER, RESAMPLES, comparison_row, contrast, holm_table, significance_note
from .query import TableRun, table_runs

TABLE = "figure1"
SPLITS = ("dev", "test")


def label(spec_name: str, elmo_specs: set[str]) -> str:
    """``baseline``, ``+ELMo`` (the table's one ELMo spec) or ``+ELMo (<spec>)`` (one of several)."""
    if spec_name == NO_ELMO:
        return "baseline"
    return "+ELMo" if len(elmo_specs) == 1 else f"+ELMo ({spec_name})"


def never_learned(run: TableRun, metrics: dict[str, Any], floor: dict[str, Any] | None) -> bool:
    """Whether ``run`` learned nothing: its dev metric not above the floor's, or (a classifier) its
    training loss never clearly below the label prior's (module doc). False without a floor."""
    if floor is None:
        return False
    metric = TASKS[run.spec.task].metric
    if float(metrics[f"dev_{metric}"]) <= float(floor[f"dev_{metric}"]):
        return True
    as_table = Run(run.id, {}, metrics, read_train_loss(run.folder / "history.csv"))
    return as_table.never_learned(floor.get("prior_train_loss"))


def floors(tasks: set[str]) -> dict[str, dict[str, Any]]:
    """The floor metrics of ``tasks`` (``results/runs/<task>-floor/metrics.json``; absent: left out)."""
    paths = {task: Path(RUNS_DIRS["main"]) / f"{task}-floor" / "metrics.json" for task in tasks}
    return {task: read_json(path) for task, path in paths.items() if path.is_file()}


def points(params: dict[str, Any]) -> pd.DataFrame:
    """One row per (task, spec, fraction): the seeds' training examples, updates, dev and test
    metric, and how many of the runs never learned (:func:`never_learned`).

    Raises:
        InputError: a run without metrics, or runs of one cell with different training sizes.
    """
    elmo = set(params["tables"][TABLE]["runs"]["elmo"]) - {NO_ELMO}
    runs = table_runs(params, TABLE)
    floor = floors({run.spec.task for run in runs})
    cells: dict[tuple, list] = {}
    for run in runs:
        path = run.folder / "metrics.json"
        if not path.is_file():
            raise InputError(path, "missing: the run has not finished (Figure 1 reads its metrics)")
        metrics, metric = read_json(path), TASKS[run.spec.task].metric
        cells.setdefault((run.spec.task, run.cell, run.spec.train_fraction), []).append(
            {"id": run.id, "n": int(metrics["train_examples"]), "dev": float(metrics[f"dev_{metric}"]),
             "test": float(metrics[f"test_{metric}"]), "updates": int(metrics.get("updates", 0)),
             "never": never_learned(run, metrics, floor.get(run.spec.task))})
    rows = []
    for (task, spec_name, fraction), items in cells.items():
        sizes = {item["n"] for item in items}
        if len(sizes) != 1:
            raise InputError("params.yaml", f"tables.figure1: the seeds of {task} {spec_name} at fraction {fraction} "
                             f"trained on different numbers of examples {sorted(sizes)}: subsets must be nested and fixed")
        dev, test = [item["dev"] for item in items], [item["test"] for item in items]
        rows.append({"task": TASKS[task].title, "setting": label(spec_name, elmo), "fraction": fraction,
                     "train_examples": sizes.pop(), "metric": TASKS[task].metric,
                     "dev": mean(dev), "dev_std": stdev(dev) if len(dev) > 1 else 0.0,
                     "test": mean(test), "test_std": stdev(test) if len(test) > 1 else 0.0,
                     "seeds": len(items), "updates": round(mean(item["updates"] for item in items)),
                     "never_learned": sum(item["never"] for item in items),
                     "runs": " ".join(sorted(item["id"] for item in items))})
    order = {TASKS[t].title: i for i, t in enumerate(TASKS)}
    return pd.DataFrame(rows).sort_values(["task", "setting", "train_examples"],
                                          key=lambda c: c.map(order) if c.name == "task" else c).reset_index(drop=True)


def comparisons(params: dict[str, Any], resamples: int = RESAMPLES, seed: int = 0) -> dict[str, list[dict[str, Any]]]:
    """Per split, Holm-adjusted: per task, ELMo's gain at each training size, and the gain at the
    smallest size minus the gain on the largest (module doc); ``seed``: the resampling seed (0)."""
    spec = params["tables"][TABLE]["runs"]
    elmo = [name for name in spec["elmo"] if name != NO_ELMO]
    runs = table_runs(params, TABLE)
    out: dict[str, list[dict[str, Any]]] = {split: [] for split in SPLITS}
    memo: dict = {}
    for task in spec["tasks"]:
        group = lambda name, f: [r for r in runs if r.spec.task == task and r.cell == name  # noqa: E731
                                 and r.spec.train_fraction == f]
        fractions = sorted(spec["train_fractions"])
        for name in elmo:
            for split in SPLITS:
                for f in fractions:
                    result = contrast(task, [group(NO_ELMO, f), group(name, f)], (-1.0, 1.0), resamples, split, memo, seed)
                    out[split].append({"task": task, "elmo": name, "comparison": f"+ELMo gain at {100 * f:g}%",
                                       "fractions": [f], **result})
                if len(fractions) > 1:
                    small, full = fractions[0], fractions[-1]
                    result = contrast(task, [group(name, small), group(NO_ELMO, small), group(name, full),
                                             group(NO_ELMO, full)], (1.0, -1.0, -1.0, 1.0), resamples, split, memo, seed)
                    out[split].append({"task": task, "elmo": name, "fractions": [small, full], **result,
                                       "comparison": f"gain at {100 * small:g}% − gain at {100 * full:g}%"})
    return {split: holm_table(items) for split, items in out.items()}


def markdown(frame: pd.DataFrame, profile: str, tests: dict[str, list[dict[str, Any]]]) -> str:
    lines = [f"### Figure 1: sample efficiency (profile `{profile}`)", "",
             "Mean ± sample std over seeds of the dev (selection) metric, test beside it, against the number "
             "of training examples (nested subsets, the same for every seed). Updates: the optimizer steps of "
             "each run (a small-data run gets a full run's updates). "
             f"{NEVER_LEARNED} n: n of the cell's runs never learned (dev metric not above the floor, or a "
             "classifier's training loss never 5% below the label prior's). Runs: `tables.figure1.runs`; "
             "per-point run names in figure1.csv.", "",
             "| Task | Setting | Training examples | Updates | Dev | Test | Seeds |", "|---|---|---|---|---|---|---|"]
    for r in frame.itertuples():
        never = f" {NEVER_LEARNED} {r.never_learned}" if r.never_learned else ""
        lines.append(f"| {r.task} ({r.metric}) | {r.setting} | {r.train_examples:,} ({100 * r.fraction:g}%) | "
                     f"{r.updates:,} | {r.dev:.2f} ± {r.dev_std:.2f}{never} | {r.test:.2f} ± {r.test_std:.2f} | {r.seeds} |")
    for split, title in (("dev", "selection split (dev)"), ("test", "test split")):
        lines += ["", f"#### Is ELMo's gain larger with less data? ({title})", "", *COMPARISON_HEADER]
        lines += [comparison_row(TASKS[c["task"]].title, c["comparison"], c) for c in tests[split]]
    lines += ["", "Units: SNLI premises, SRL sentences. " + significance_note()]
    return "\n".join(lines) + "\n"


def plot(frame: pd.DataFrame) -> bytes:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    tasks = list(dict.fromkeys(frame["task"]))
    fig, axes = plt.subplots(1, len(tasks), figsize=(4.2 * len(tasks), 3.4), dpi=120, squeeze=False)
    for ax, task in zip(axes[0], tasks):
        part = frame[frame["task"] == task]
        for setting, group in part.groupby("setting", sort=False):
            group = group.sort_values("train_examples")
            x, y, s = group["train_examples"], group["dev"], group["dev_std"]
            line, = ax.plot(x, y, marker="o", label=setting)
            ax.fill_between(x, y - s, y + s, alpha=0.2)
            stalled = group[group["never_learned"] > 0]
            if len(stalled):        # a point holding a never-learned run: hollow, marked
                ax.plot(stalled["train_examples"], stalled["dev"], "o", markerfacecolor="white",
                        markeredgecolor=line.get_color(), zorder=3)
                for xi, yi, n in zip(stalled["train_examples"], stalled["dev"], stalled["never_learned"]):
                    ax.annotate(f"{NEVER_LEARNED}{n}", (xi, yi), textcoords="offset points", xytext=(4, 4), fontsize=7)
        ax.set_xscale("log")
        ax.set_xlabel("training examples")
        ax.set_ylabel(f"dev {part['metric'].iloc[0]}")
        ax.set_title(task)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle("Figure 1: baseline and +ELMo against training-set size", fontsize=10)
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", metadata={"Software": None})
    plt.close(fig)
    return buffer.getvalue()


def build(params: dict[str, Any]) -> Output:
    frame = points(params)
    tests = comparisons(params)
    csv = io.StringIO()
    frame.to_csv(csv, index=False, float_format="%.4f")
    return {"figure1.csv": csv.getvalue(), "figure1.md": markdown(frame, params["profile"], tests),
            "figure1.json": {"profile": params["profile"], "rows": frame.to_dict(orient="records"), "comparisons": tests},
            "figure1.png": plot(frame)}
