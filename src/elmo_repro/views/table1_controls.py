"""Table 1 with its control column (analysis job): as ``table1``, plus the char-layer control runs
of ``tables.table1_controls`` and the p-value of +ELMo against them (is the gain from context?),
and a paired bootstrap of both comparisons over the test set's evaluation units (seeds paired,
Holm-corrected over the table's comparisons, with the smallest difference each could detect)."""

from __future__ import annotations

from typing import Any

from ..experiments.specs import NO_ELMO, RUNS_DIRS
from ..experiments.tasks import TASKS
from . import Output
from .bootstrap import RESAMPLES, compare, format_p, holm_table
from .query import table_runs
from .table1 import table1_files


def comparisons(params: dict[str, Any]) -> list[dict[str, Any]]:
    """Per task of Table 1: +ELMo vs baseline and +ELMo vs the char-layer control (when listed)."""
    spec = params["tables"]["table1"]
    runs = table_runs(params, "table1") + table_runs(params, "table1_controls")
    out, memo = [], {}
    for task in spec["runs"]["tasks"]:
        group = lambda name: [r for r in runs if r.spec.task == task and r.cell == name]  # noqa: E731
        elmo = group(spec["elmo"])
        for name, label in ((NO_ELMO, "+ELMo vs baseline"), (spec.get("control"), "+ELMo vs char layer")):
            if name and group(name) and elmo:
                out.append({"task": task, "comparison": label, **compare(task, group(name), elmo, memo=memo)})
    return holm_table(out)


def markdown(rows: list[dict[str, Any]]) -> str:
    lines = ["## Paired bootstrap (test set, over evaluation units)", "",
             f"Difference of seed means (+ELMo − other, metric points) on the test set; p: paired bootstrap "
             f"({RESAMPLES:,} resamples of the test set's independent units — NER and SRL sentences, SST-5 "
             "sentences, SNLI premises, SQuAD paragraphs, coreference documents — and of the paired seeds; "
             "the corpus metric recomputed on every resample); Holm: p adjusted over the table's "
             "comparisons; detectable: the smallest true difference this test finds with power 0.8 at "
             "α = 0.05 (2.80 bootstrap SE). Welch's p above asks whether the seed means differ beyond "
             "seed noise on this one test set; the bootstrap asks whether they would on another sample of "
             "test units too.", "",
             "| Task | Comparison | Units | Difference | SE | p (bootstrap) | p (Holm) | Detectable |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        mark = " *" if r["p_holm"] < 0.05 else ""
        lines.append(f"| {TASKS[r['task']].title} | {r['comparison']} | {r['units']:,} {r['unit']}s × "
                     f"{r['seeds']} seeds | {r['difference']:+.2f}{mark} | {r['standard_error']:.2f} | "
                     f"{format_p(r['p_value'])} | {format_p(r['p_holm'])} | {r['detectable']:.2f} |")
    lines += ["", "\\* p (Holm) < 0.05.", ""]
    return "\n".join(lines)


def build(params: dict[str, Any]) -> Output:
    files = table1_files(params, [RUNS_DIRS["main"], RUNS_DIRS["analysis"]], "table1_controls", controls=True)
    rows = comparisons(params)
    files["table1_controls.md"] = files["table1_controls.md"].rstrip("\n") + "\n\n" + markdown(rows)
    files["table1_controls.json"]["bootstrap"] = rows
    return files
