"""Figure 1 of the paper (§5.4, sample efficiency): the baseline's and +ELMo's development-set
metric against the number of training examples, for the tasks ``tables.figure1.runs`` lists
(SNLI and SRL, as the paper).

The training subsets are nested and the same for every seed (``train_fractions`` of the table
spec; :func:`elmo_repro.training.trainer.select_training` takes a prefix of one fixed permutation),
so the x axis is each run's own ``train_examples``. Writes

* ``figure1.csv``: one row per (task, setting, training examples): dev and test mean and sample
  std over seeds and the run names (declared as a DVC plot: ``dvc plots show``);
* ``figure1.md``: the same as a table;
* ``figure1.png``: one panel per task, dev metric against training examples (log scale), the seed
  mean with a ± std band.
"""

from __future__ import annotations

import io
from statistics import mean, stdev
from typing import Any

import pandas as pd

from ..experiments.specs import NO_ELMO
from ..experiments.tasks import TASKS
from ..io import InputError, read_json
from . import Output
from .query import table_runs

TABLE = "figure1"


def label(spec_name: str, elmo_specs: set[str]) -> str:
    """``baseline``, ``+ELMo`` (the table's one ELMo spec) or ``+ELMo (<spec>)`` (one of several)."""
    if spec_name == NO_ELMO:
        return "baseline"
    return "+ELMo" if len(elmo_specs) == 1 else f"+ELMo ({spec_name})"


def points(params: dict[str, Any]) -> pd.DataFrame:
    """One row per (task, spec, fraction): the seeds' training examples, dev and test metric.

    Raises:
        InputError: a run without metrics, or runs of one cell with different training sizes.
    """
    elmo = set(params["tables"][TABLE]["runs"]["elmo"]) - {NO_ELMO}
    cells: dict[tuple, list] = {}
    for run in table_runs(params, TABLE):
        path = run.folder / "metrics.json"
        if not path.is_file():
            raise InputError(path, "missing: the run has not finished (Figure 1 reads its metrics)")
        metrics, metric = read_json(path), TASKS[run.spec.task].metric
        cells.setdefault((run.spec.task, run.cell, run.spec.train_fraction), []).append(
            (run.id, int(metrics["train_examples"]), float(metrics[f"dev_{metric}"]), float(metrics[f"test_{metric}"])))
    rows = []
    for (task, spec_name, fraction), items in cells.items():
        sizes = {n for _, n, _, _ in items}
        if len(sizes) != 1:
            raise InputError("params.yaml", f"tables.figure1: the seeds of {task} {spec_name} at fraction {fraction} "
                             f"trained on different numbers of examples {sorted(sizes)}: subsets must be nested and fixed")
        dev, test = [d for _, _, d, _ in items], [t for _, _, _, t in items]
        rows.append({"task": TASKS[task].title, "setting": label(spec_name, elmo), "fraction": fraction,
                     "train_examples": sizes.pop(), "metric": TASKS[task].metric,
                     "dev": mean(dev), "dev_std": stdev(dev) if len(dev) > 1 else 0.0,
                     "test": mean(test), "test_std": stdev(test) if len(test) > 1 else 0.0,
                     "seeds": len(items), "runs": " ".join(sorted(r for r, _, _, _ in items))})
    order = {TASKS[t].title: i for i, t in enumerate(TASKS)}
    return pd.DataFrame(rows).sort_values(["task", "setting", "train_examples"],
                                          key=lambda c: c.map(order) if c.name == "task" else c).reset_index(drop=True)


def markdown(frame: pd.DataFrame, profile: str) -> str:
    lines = [f"### Figure 1: sample efficiency (profile `{profile}`)", "",
             "Mean ± sample std over seeds of the dev (selection) metric, test beside it, against the number "
             "of training examples (nested subsets, the same for every seed). Runs: `tables.figure1.runs`; "
             "per-point run names in figure1.csv.", "",
             "| Task | Setting | Training examples | Dev | Test | Seeds |", "|---|---|---|---|---|---|"]
    for r in frame.itertuples():
        lines.append(f"| {r.task} ({r.metric}) | {r.setting} | {r.train_examples:,} ({100 * r.fraction:g}%) | "
                     f"{r.dev:.2f} ± {r.dev_std:.2f} | {r.test:.2f} ± {r.test_std:.2f} | {r.seeds} |")
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
            ax.plot(x, y, marker="o", label=setting)
            ax.fill_between(x, y - s, y + s, alpha=0.2)
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
    csv = io.StringIO()
    frame.to_csv(csv, index=False, float_format="%.4f")
    return {"figure1.csv": csv.getvalue(), "figure1.md": markdown(frame, params["profile"]), "figure1.png": plot(frame)}
