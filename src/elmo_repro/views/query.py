"""The one run query of the views: which runs a table spec lists and where each run's files are.

A table spec (``tables.<name>.runs`` of ``params.yaml``) lists tasks × ELMo specs × seeds ×
training fractions; :func:`table_runs` returns exactly those runs, each with its rendered run
spec and its folder (the main job's ``results/runs`` or the analysis job's
``results/analysis/runs``: a run both jobs list is trained once, by the main job). A cell whose
spec computes the same run as another spec (Table 3's "input only" where the task's paper placement
is the input) reads that run: ``TableRun.cell`` names the table's spec, ``TableRun.id`` the run.
A view selects runs through this query, never by scanning folders for matching fields.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..experiments.rendering import run_content
from ..experiments.specs import NO_ELMO, RUNS_DIRS, ElmoSpec, RunSpec, TableRuns, resolve_elmo
from ..io import InputError


@dataclass(frozen=True)
class TableRun:
    """One run a table lists: its id (the MLflow run name and tag ``run_id``), its spec, its
    folder (``spec.json``, ``metrics.json``, ``history.csv``, ``scalar_mix.json``) and the table's
    ELMo spec name it stands for (``cell``; the run's own ``spec.elmo_name`` when trained under it)."""

    id: str
    spec: RunSpec
    folder: Path
    cell: str = ""


def _rendered(runs_section: dict[str, Any]) -> dict[str, tuple[str, dict]]:
    """{run id: (job, spec as a plain dict)} of the rendered ``runs`` section."""
    return {rid: (job, spec) for job, families in runs_section.items()
            for items in families.values() for rid, spec in items.items()}


def table_runs(params: dict[str, Any], table: str) -> list[TableRun]:
    """The runs ``tables.<table>.runs`` lists, in the spec's order (task, ELMo spec, seed, fraction).

    Raises:
        InputError: the table has no ``runs`` spec, or a run it lists is missing from the rendered
            ``runs`` section (``params.yaml`` was edited without ``python -m workflow.profile``).
    """
    spec = params.get("tables", {}).get(table) or {}
    if not spec.get("runs"):
        raise InputError("params.yaml", f"tables.{table}.runs: the table lists no runs")
    wanted = TableRuns.model_validate(spec["runs"])
    rendered = _rendered(params.get("runs", {}))
    by_content = {run_content(RunSpec.model_validate(run_spec)): rid for rid, (_, run_spec) in rendered.items()}
    elmo_specs = params.get("elmo_specs", {})
    runs = []
    for task in wanted.tasks:
        for elmo in wanted.elmo:
            if elmo != NO_ELMO and elmo not in elmo_specs:
                raise InputError("params.yaml", f"tables.{table}.runs.elmo: unknown ELMo spec {elmo!r}")
            resolved = None if elmo == NO_ELMO else resolve_elmo(ElmoSpec.model_validate(elmo_specs[elmo]), task)
            for seed in wanted.seeds:
                for fraction in wanted.train_fractions:
                    asked = RunSpec(task=task, elmo_name=elmo, elmo=resolved, seed=seed, train_fraction=fraction)
                    rid = by_content.get(run_content(asked))     # the run itself, or the one computing it
                    if rid is None:
                        raise InputError("params.yaml", f"runs: tables.{table} lists run {asked.id!r}, which the "
                                         "runs section lacks; re-render it: python -m workflow.profile --refresh")
                    job, run_spec = rendered[rid]
                    runs.append(TableRun(rid, RunSpec.model_validate(run_spec), Path(RUNS_DIRS[job]) / rid, elmo))
    return runs
