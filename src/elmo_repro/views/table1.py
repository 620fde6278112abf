"""Table 1 of the main job: the paper's six rows beside ours (floor, baseline, +ELMo; mean ± std
over seeds, Welch's p), then the biLM's held-out perplexity. It reads the main job's runs only:
the char-layer control column is "—" here and filled in ``table1_controls`` (analysis job)."""

from __future__ import annotations

import io
from typing import Any

import pandas as pd

from ..experiments.bilm_source import released_bilm
from ..experiments.specs import RUNS_DIRS
from ..io import read_json, read_text
from ..tables import flat_rows, load_runs, read_paper_table, render_markdown, table1_rows
from . import Output
from .query import table_runs


def table1_files(params: dict[str, Any], runs_dirs: list[str], name: str, controls: bool) -> Output:
    """``<name>.{md,csv,json}`` of Table 1 over the runs under ``runs_dirs`` that the profile's
    table specs list (``tables.table1``, with ``controls`` also ``tables.table1_controls``) and the
    floors of its tasks: a folder of another profile's run (a committed one, a task the profile
    leaves out) is never read."""
    spec = params["tables"]["table1"]
    tables = ["table1", *(["table1_controls"] if controls and params["tables"].get("table1_controls") else [])]
    listed = {run.id for table in tables for run in table_runs(params, table)}
    runs, floors = load_runs(*runs_dirs)
    runs = [run for run in runs if run.id in listed]
    floors = {task: floor for task, floor in floors.items() if task in spec["runs"]["tasks"]}
    rows = table1_rows(read_paper_table("paper/table1.csv"), runs, floors, spec)
    released = released_bilm(params)     # released weights: no softmax, so no perplexity stage
    perplexity = None if released else read_json("results/metrics/perplexity.json")
    text = render_markdown(rows, perplexity, read_text("paper/perplexity.txt").strip(), params["profile"], spec,
                           controls=controls, left_out=params["data"].get("left_out"), released=released)
    csv = io.StringIO()
    pd.DataFrame(flat_rows(rows)).to_csv(csv, index=False, float_format="%.4f")
    return {f"{name}.md": text, f"{name}.csv": csv.getvalue(),
            f"{name}.json": {"profile": params["profile"], "rows": rows, "perplexity": perplexity,
                            **({"released_bilm": released} if released else {})}}


def build(params: dict[str, Any]) -> Output:
    return table1_files(params, [RUNS_DIRS["main"]], "table1", controls=False)
