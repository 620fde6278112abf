"""Table 1 with its control column (analysis job): as ``table1``, plus the char-layer control runs
of ``tables.table1_controls`` and the p-value of +ELMo against them (is the gain from context?),
and a test of both comparisons over training seeds and the test set's evaluation units (from the
runs' committed unit statistics; seeds paired, Holm-corrected over the table's comparisons, with
the smallest difference each could detect at its Holm level)."""

from __future__ import annotations

from typing import Any

from ..experiments.specs import NO_ELMO, RUNS_DIRS
from ..experiments.tasks import TASKS
from . import Output
from .bootstrap import COMPARISON_HEADER, RESAMPLES, compare, comparison_row, holm_table, significance_note
from .query import table_runs
from .table1 import table1_files


def comparisons(params: dict[str, Any], resamples: int = RESAMPLES, seed: int = 0) -> list[dict[str, Any]]:
    """Per task of Table 1: +ELMo vs baseline and +ELMo vs the char-layer control (when listed);
    ``seed``: the resampling seed of the tests (the table uses 0)."""
    spec = params["tables"]["table1"]
    runs = table_runs(params, "table1") + table_runs(params, "table1_controls")
    out, memo = [], {}
    for task in spec["runs"]["tasks"]:
        group = lambda name: [r for r in runs if r.spec.task == task and r.cell == name]  # noqa: E731
        elmo = group(spec["elmo"])
        for name, label in ((NO_ELMO, "+ELMo vs baseline"), (spec.get("control"), "+ELMo vs char layer")):
            if name and group(name) and elmo:
                out.append({"task": task, "comparison": label, **compare(task, group(name), elmo, resamples, memo=memo, seed=seed)})
    return holm_table(out)


def markdown(rows: list[dict[str, Any]]) -> str:
    lines = ["## Significance (test set, over training seeds and evaluation units)", "",
             "Difference of seed means (+ELMo − other, metric points) on the test set. Units: NER and SRL "
             "sentences, SST-5 sentences, SNLI premises, SQuAD paragraphs, coreference documents. "
             + significance_note() + " Welch's p above asks whether the seed means differ beyond seed noise "
             "on this one test set; this test asks whether they would on another sample of test units too.",
             "", *COMPARISON_HEADER]
    lines += [comparison_row(TASKS[r["task"]].title, r["comparison"], r) for r in rows]
    return "\n".join(lines + [""])


def build(params: dict[str, Any]) -> Output:
    files = table1_files(params, [RUNS_DIRS["main"], RUNS_DIRS["analysis"]], "table1_controls", controls=True)
    rows = comparisons(params)
    files["table1_controls.md"] = files["table1_controls.md"].rstrip("\n") + "\n\n" + markdown(rows)
    files["table1_controls.json"]["bootstrap"] = rows
    return files
