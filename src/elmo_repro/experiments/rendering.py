"""The ``runs`` section as the pipeline renders it: :func:`elmo_repro.experiments.specs.listed_runs`
(every run some table lists, once per id, the main job's first), then every run that computes
what an earlier one computes dropped (:func:`dedupe_runs`): a spec whose resolved content equals
another's, e.g. Table 3's "input only" for a task whose paper placement is the input, is read from
that run instead of being trained again (the views' run query, :mod:`elmo_repro.views.query`,
finds it by :func:`run_content`)."""

from __future__ import annotations

from .specs import JOBS, NO_ELMO, RunSpec, listed_runs


def run_content(spec: RunSpec) -> str:
    """What a run computes, whatever its spec is called: task, resolved ELMo spec, seed, fraction."""
    return RunSpec.model_validate({**spec.model_dump(mode="json"),
                                   "elmo_name": NO_ELMO if spec.elmo is None else "_"}).model_dump_json()


def dedupe_runs(runs: dict[str, dict[str, dict[str, dict]]]) -> dict[str, dict[str, dict[str, dict]]]:
    """``runs`` without the runs whose content an earlier one has: the main job's runs first, then
    the analysis job's in id order (so the main job's run, or the first id, is the one trained)."""
    seen: set[str] = set()
    kept: dict[str, dict[str, dict[str, dict]]] = {job: {fam: {} for fam in runs.get(job, {})} for job in JOBS}
    for job in JOBS:
        items = sorted((rid, fam, spec) for fam, family in runs.get(job, {}).items() for rid, spec in family.items())
        for rid, fam, spec in items:
            content = run_content(RunSpec.model_validate(spec))
            if content not in seen:
                seen.add(content)
                kept[job][fam][rid] = spec
    return kept


def render_runs(tables: dict, elmo_specs: dict) -> dict[str, dict[str, dict[str, dict]]]:
    """The ``runs`` section: :func:`~elmo_repro.experiments.specs.listed_runs`, deduplicated by content.

    Raises:
        ValueError: as :func:`~elmo_repro.experiments.specs.listed_runs`.
    """
    return dedupe_runs(listed_runs(tables, elmo_specs))
