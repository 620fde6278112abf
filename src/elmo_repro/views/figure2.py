"""Figure 2 of the paper (§5.5): the learned, softmax-normalised biLM layer weights s_j (Eq. 1) of
each task's ELMo, at the input and at the output of the task model, as a heat map.

It reads the ``scalar_mix.json`` of the runs ``tables.figure2.runs`` lists (by default Table 1's
+ELMo runs: no extra training) and writes

* ``figure2.csv``: one row per (task, mix, layer): the mean weight over seeds, its sample std, the
  number of seeds and the run names (declared as a DVC plot: ``dvc plots show``);
* ``figure2.md``: the same as a table, mean ± std per layer;
* ``figure2.png``: the heat map (rows task × mix, columns layers 0–L; the cell text is the mean).
  As in the paper's figure, weights below 1/3 and above 2/3 are marked (hatched and dotted).

Layer 0 is the biLM's context-free char-CNN layer; 1..L the LSTM layers. A uniform mix is 1/(L+1).
"""

from __future__ import annotations

import io
from statistics import mean, stdev
from typing import Any

import pandas as pd

from ..experiments.tasks import TASKS
from ..io import InputError, read_json
from . import Output
from .query import table_runs

TABLE = "figure2"
MIXES = ("input", "output")


def layer_weights(params: dict[str, Any]) -> list[dict[str, Any]]:
    """One record per (run, mix, layer): task, mix, layer, seed, weight, run.

    Raises:
        InputError: a run without ``scalar_mix.json`` or with a mix whose weights do not sum to 1
            (a run without a learned mix, e.g. a baseline or a fixed-layer control).
    """
    records = []
    for run in table_runs(params, TABLE):
        path = run.folder / "scalar_mix.json"
        if not path.is_file():
            raise InputError(path, "missing: the run has not finished (Figure 2 reads its learned layer weights)")
        mixes = read_json(path)
        if not mixes:
            raise InputError(path, f"run {run.id} has no learned mix (Figure 2 needs ELMo runs with mix: learned)")
        for mix, values in mixes.items():
            weights = values["s"]
            if abs(sum(weights) - 1.0) > 1e-4:
                raise InputError(path, f"{mix}.s sums to {sum(weights):.6f}, not 1 (not softmax-normalised)")
            records += [{"task": run.spec.task, "mix": mix, "layer": layer, "seed": run.spec.seed,
                         "weight": float(weight), "run": run.id} for layer, weight in enumerate(weights)]
    return records


def summarise(records: list[dict[str, Any]]) -> pd.DataFrame:
    """Mean, sample std (0 for one seed) and seeds per (task, mix, layer), tasks in Table 1's order."""
    rows = []
    order = {task: i for i, task in enumerate(TASKS)}
    keys = sorted({(r["task"], r["mix"], r["layer"]) for r in records},
                  key=lambda k: (order[k[0]], MIXES.index(k[1]), k[2]))
    for task, mix, layer in keys:
        cell = [r for r in records if (r["task"], r["mix"], r["layer"]) == (task, mix, layer)]
        weights = [r["weight"] for r in cell]
        rows.append({"row": f"{TASKS[task].title} {mix}", "task": task, "mix": mix, "layer": layer,
                     "weight": mean(weights), "std": stdev(weights) if len(weights) > 1 else 0.0,
                     "seeds": len(weights), "runs": " ".join(sorted(r["run"] for r in cell))})
    return pd.DataFrame(rows)


def markdown(summary: pd.DataFrame, profile: str) -> str:
    layers = sorted(summary["layer"].unique())
    header = ["Task", "Mix", *[f"Layer {layer}" + (" (char CNN)" if layer == 0 else "") for layer in layers], "Seeds"]
    lines = [f"### Figure 2: softmax-normalised biLM layer weights (profile `{profile}`)", "",
             "Mean ± sample std over seeds of the learned weights s_j of Eq. 1, per task and ELMo "
             f"placement; uniform = {1 / len(layers):.3f}. Runs: `tables.figure2.runs` "
             "(Table 1's +ELMo runs); per-cell run names in figure2.csv.", "",
             "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for (row, _), group in summary.groupby(["row", "task"], sort=False):
        first = group.iloc[0]
        cells = [f"{g.weight:.3f} ± {g.std:.3f}" for g in group.sort_values("layer").itertuples()]
        lines.append(f"| {TASKS[first.task].title} | {first.mix} | " + " | ".join(cells) + f" | {int(first.seeds)} |")
    return "\n".join(lines) + "\n"


def heat_map(summary: pd.DataFrame) -> bytes:
    """The PNG: rows task × mix (Table 1's order), columns layers; colour = mean weight."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = list(dict.fromkeys(summary["row"]))
    layers = sorted(summary["layer"].unique())
    grid = summary.pivot(index="row", columns="layer", values="weight").loc[rows, layers].to_numpy()
    fig, ax = plt.subplots(figsize=(1.4 + 1.1 * len(layers), 0.9 + 0.42 * len(rows)), dpi=120)
    image = ax.imshow(grid, cmap="Blues", vmin=0.0, vmax=1.0, aspect="auto")
    for i in range(len(rows)):
        for j in range(len(layers)):
            value = grid[i, j]
            # the paper's marks: below 1/3 hatched, above 2/3 dotted
            hatch = "-" if value < 1 / 3 else ("." if value > 2 / 3 else None)
            if hatch:
                ax.add_patch(matplotlib.patches.Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, hatch=hatch,
                                                          edgecolor="0.7", linewidth=0))
            ax.text(j, i, f"{value:.2f}", ha="center", va="center", fontsize=8,
                    color="white" if value > 0.6 else "black")
    ax.set_xticks(range(len(layers)), [f"{layer}" + ("\n(char)" if layer == 0 else "") for layer in layers])
    ax.set_yticks(range(len(rows)), rows)
    ax.set_xlabel("biLM layer")
    ax.set_title("Figure 2: learned layer weights s_j", fontsize=10)
    fig.colorbar(image, ax=ax, fraction=0.05)
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", metadata={"Software": None})   # no version stamp: same bytes each build
    plt.close(fig)
    return buffer.getvalue()


def build(params: dict[str, Any]) -> Output:
    summary = summarise(layer_weights(params))
    csv = io.StringIO()
    summary.to_csv(csv, index=False, float_format="%.4f")
    return {"figure2.csv": csv.getvalue(), "figure2.md": markdown(summary, params["profile"]),
            "figure2.png": heat_map(summary)}
