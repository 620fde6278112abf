"""The paper's ablation tables as views (Table 2, §5.1: how the biLM layers are combined; Table 3,
§5.2: where ELMo enters the task model; Table 7: static word vectors, the char layer instead of
them, ELMo without them, ELMo beside them): one column per ELMo spec the table spec lists
(``tables.<table>``: ``runs``, ``columns``, ``compare``, ``paper``), the paper's development-set
number beside ours in each cell.

The paper reports these tables on the development sets. Ours are on each task's selection split
(the one the best epoch is chosen on, so optimistic, as the paper's are) and, beside it, on the
test split, which no choice was made on. Each cell is the mean ± sample std over seeds; † marks a
cell with a run whose best epoch was its last. Every pair of ``compare`` gets a test over seeds and
test units on both splits (:mod:`.bootstrap`, from the runs' committed unit statistics; seeds
paired, Holm over the table's comparisons of a split) and the smallest difference it could detect: the paper's ablation effects are 0.2–0.7 points, and
where ours cannot resolve them the table says so rather than calling a difference a finding.
"""

from __future__ import annotations

import io
from statistics import mean, stdev
from typing import Any

import pandas as pd

from ..experiments.tasks import TASKS
from ..io import read_json
from .runs import read_paper_table
from . import Output
from .bootstrap import COMPARISON_HEADER, RESAMPLES, compare, comparison_row, holm_table, significance_note
from .labels import LABELS
from .query import TableRun, table_runs

SPLITS = {"dev": "selection split (dev)", "test": "test split"}
NOTES = {"table7": "Char layer instead of vectors (`char_only`): the biLM's layer 0 replaces the static word "
                   "vectors at the input; Table 1's char-layer control (`char_layer`) adds layer 0 beside them. "
                   "ELMo only (`elmo_only`): the paper's mix and placement without the vectors. A task's own "
                   "character encoder (SQuAD's) stays in every cell."}
TITLES = {"table2": "Table 2 (§5.1): all biLM layers against the top layer only",
          "table3": "Table 3 (§5.2): where ELMo is added to the task model",
          "table7": "Table 7: which representation the task model reads (static word vectors, the biLM's "
                    "char layer, ELMo)"}


def cell(runs: list[TableRun], split: str, metric: str) -> dict[str, Any] | None:
    """Mean, sample std and per-seed values of ``<split>_<metric>`` over ``runs`` (None if none)."""
    if not runs:
        return None
    values = {}
    still = []
    for run in sorted(runs, key=lambda r: r.spec.seed):
        metrics = read_json(run.folder / "metrics.json")
        values[run.spec.seed] = float(metrics[f"{split}_{metric}"])
        if metrics.get("best_epoch") == metrics.get("epochs"):
            still.append(run.spec.seed)
    scores = list(values.values())
    return {"mean": mean(scores), "std": stdev(scores) if len(scores) > 1 else 0.0, "per_seed": values,
            "still_learning": still, "runs": [r.id for r in runs]}


def ablation(params: dict[str, Any], table: str, resamples: int = RESAMPLES, seed: int = 0) -> dict[str, Any]:
    """The table's cells and comparisons on both splits (a JSON-able dict); ``seed``: the
    resampling seed of the tests (the tables use 0)."""
    spec = params["tables"][table]
    runs = table_runs(params, table)
    paper = {row["task"]: row for row in read_paper_table(spec["paper"])}
    rows, comparisons, memo = [], {split: [] for split in SPLITS}, {}
    for task in spec["runs"]["tasks"]:
        metric = TASKS[task].metric
        of = lambda name: [r for r in runs if r.spec.task == task and r.cell == name]  # noqa: E731
        rows.append({"task": task, "metric": metric,
                     "cells": {name: {"paper": paper.get(task, {}).get(column),
                                      **{split: cell(of(name), split, metric) for split in SPLITS}}
                               for name, column in columns_of(spec).items()}})
        for split in SPLITS:
            for other, treatment in spec["compare"]:
                comparisons[split].append({"task": task, "other": other, "treatment": treatment,
                                           **compare(task, of(other), of(treatment), resamples, split, memo, seed)})
    return {"profile": params["profile"], "table": table, "rows": rows,
            "comparisons": {split: holm_table(items) for split, items in comparisons.items()}}


def columns_of(spec: dict[str, Any]) -> dict[str, str]:
    """ELMo spec -> the paper's column, in the order of ``runs.elmo`` (the table's column order)."""
    return {name: spec["columns"][name] for name in spec["runs"]["elmo"]}


def markdown(result: dict[str, Any], spec: dict[str, Any], resamples: int = RESAMPLES) -> str:
    columns = columns_of(spec)
    lines = [f"### {TITLES.get(result['table'], result['table'])} (profile `{result['profile']}`)", "",
             "Each cell: the paper's development-set number / ours, mean ± sample std over seeds "
             f"({', '.join(map(str, spec['runs']['seeds']))}); † = a run's best epoch was its last. Ours "
             "on the selection split (chosen on, like the paper's dev numbers) and on the test split. "
             "ELMo specs: " + "; ".join(f"{LABELS.get(c, c)} = `{name}`" for name, c in columns.items())
             + " (params.yaml `elmo_specs`; a cell whose spec computes an existing run reads that run)."
             + (" " + NOTES[result["table"]] if result["table"] in NOTES else ""), ""]
    for split, title in SPLITS.items():
        header = ["Task", *[LABELS.get(c, c) for c in columns.values()]]
        lines += [f"#### {title}", "", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        for row in result["rows"]:
            cells = []
            for name in columns:
                c, ours = row["cells"][name], row["cells"][name][split]
                text = "—" if ours is None else f"{ours['mean']:.2f} ± {ours['std']:.2f}" + ("†" if ours["still_learning"] else "")
                cells.append(f"{c['paper'] or '—'} / {text}" if split == "dev" else text)
            lines.append(f"| {TASKS[row['task']].title} ({row['metric']}) | " + " | ".join(cells) + " |")
        lines += ["", *COMPARISON_HEADER]
        for c in result["comparisons"][split]:
            label = f"{LABELS.get(columns[c['treatment']], c['treatment'])} vs {LABELS.get(columns[c['other']], c['other'])}"
            lines.append(comparison_row(TASKS[c["task"]].title, label, c))
        lines.append("")
    lines += ["Units: SQuAD paragraphs, SNLI premises, SRL sentences. " + significance_note(resamples), ""]
    return "\n".join(lines)


def ablation_files(params: dict[str, Any], table: str) -> Output:
    """``<table>.md``, ``<table>.csv`` (one row per task, spec and split) and ``<table>.json``."""
    result = ablation(params, table)
    spec = params["tables"][table]
    flat = [{"task": row["task"], "spec": name, "paper_column": spec["columns"][name], "paper": c["paper"],
             "split": split, "mean": c[split]["mean"] if c[split] else None,
             "std": c[split]["std"] if c[split] else None, "runs": " ".join(c[split]["runs"]) if c[split] else ""}
            for row in result["rows"] for name, c in row["cells"].items() for split in SPLITS]
    csv = io.StringIO()
    pd.DataFrame(flat).to_csv(csv, index=False, float_format="%.4f")
    return {f"{table}.md": markdown(result, spec), f"{table}.csv": csv.getvalue(), f"{table}.json": result}
