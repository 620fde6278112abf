"""Stage check_params: validate params.yaml, and find every input the pipeline reads from outside
it, before any other stage starts.

Every stage depends on this stage's report, so ``dvc repro`` (and Snakemake) run it first, and it
runs on every ``dvc repro`` (``always_changed``; about a second). It fails, naming the key path
or the file, before DVC deletes the outputs of a stage that would then fail:

* params: a typo, a wrong type, a stale ``runs`` section, a layer outside the biLM or CoVe
  (:func:`elmo_repro.schema.validate_params`);
* inputs: each dependency of each stage of both jobs' pipeline files (``JOB_FILES``) that no stage
  writes -- the data mirror's files (``data.mirror``), WordNet (``probes.wordnet``), the paper's
  numbers, the code -- must exist, with the params paths in it resolved;
* a released biLM (``bilm_source.path`` with an ``options.json``): every fixed layer an ELMo spec
  names must be one of its layers.

Every stage validates params.yaml again when it loads it. The report (``results/params_check.json``)
is the same whatever the values, so a valid edit re-runs only the stages that read the edited params.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Iterator

import yaml

from elmo_repro.experiments.bilm_source import released_bilm
from elmo_repro.experiments.specs import JOB_FILES
from elmo_repro.console import log
from elmo_repro.io import InputError, read_json, write_json
from elmo_repro.params import load_params
from elmo_repro.tracking import stage_run
from stages import stage_args

SECTIONS: list[str] = []            # declared to DVC as the whole file (see workflow/registry.py)
REPORT = "results/params_check.json"
TEMPLATE = re.compile(r"\$\{([^}]+)\}")


def _resolve(text: str, params: dict[str, Any]) -> str | None:
    """``text`` with each ``${a.b}`` replaced by that params value; None when it names a foreach
    item or key (one per run: those paths are stage outputs)."""
    def value(match: re.Match) -> str:
        node: Any = params
        for part in match.group(1).split("."):
            node = node[part]
        return str(node)

    if "${item" in text or "${key" in text:
        return None
    return TEMPLATE.sub(value, text)


def _stage_paths(pipeline: dict, kind: str) -> Iterator[tuple[str, str]]:
    """``(stage name, path)`` of every dependency (``kind="deps"``) or output of a pipeline file."""
    for name, stage in (pipeline.get("stages") or {}).items():
        body = stage.get("do", stage)
        keys = ["deps"] if kind == "deps" else ["outs", "metrics", "plots"]
        for key in keys:
            for entry in body.get(key) or []:
                yield name, next(iter(entry)) if isinstance(entry, dict) else entry


def missing_inputs(params: dict[str, Any], root: Path = Path(".")) -> list[str]:
    """One line per stage input that no stage writes and that does not exist (see module doc)."""
    pipelines = {job: yaml.safe_load((root / path).read_text(encoding="utf-8")) for job, path in JOB_FILES.items()
                 if (root / path).is_file()}
    written = []
    for pipeline in pipelines.values():
        for _, out in _stage_paths(pipeline, "outs"):
            prefix = TEMPLATE.split(out)[0] if "${item" in out or "${key" in out else _resolve(out, params)
            if prefix:
                written.append(Path(prefix))
    problems, seen = [], set()
    for job, pipeline in pipelines.items():
        for stage, dep in _stage_paths(pipeline, "deps"):
            path = _resolve(dep, params)
            if path is None or path in seen:
                continue
            seen.add(path)
            produced = any(Path(path) == out or out in Path(path).parents for out in written)
            if produced:
                continue
            shown = dep if dep == path else f"{dep} = {path}"
            if not (root / path).exists():
                problems.append(f"{JOB_FILES[job]}: stage {stage} reads {shown}, which does not exist"
                                + licensed_hint(dep, params))
            elif (root / path).is_dir():    # a fetched mirror has the folders of licensed files, not the files
                absent = [file for file in licensed_files(dep) if not (root / path / file).exists()]
                if absent:
                    named = ", ".join(absent) if len(absent) <= 2 else f"{absent[0]} ... {absent[-1]}"
                    problems.append(f"{JOB_FILES[job]}: stage {stage} reads {shown}, which lacks {len(absent)} "
                                    f"of its files ({named})" + licensed_hint(dep, params))
    return problems


MIRROR_PREFIX = "${data.mirror}/"


def _licensed(dep: str) -> list:
    """``(file, Manual)`` of the licensed files (:func:`elmo_repro.fetch.manual_files_at`) at or
    under mirror dependency ``dep``; none for a dependency outside the mirror."""
    from elmo_repro.fetch import manual_files_at

    return manual_files_at(dep.removeprefix(MIRROR_PREFIX)) if dep.startswith(MIRROR_PREFIX) else []


def licensed_files(dep: str) -> list[str]:
    """The licensed files inside mirror dependency ``dep``, relative to it."""
    path = dep.removeprefix(MIRROR_PREFIX).rstrip("/") + "/"
    return [file.removeprefix(path) for file, _ in _licensed(dep) if file.startswith(path)]


def licensed_hint(dep: str, params: dict[str, Any]) -> str:
    """For a missing mirror dependency holding licensed files: where to read how to make them, and
    how to run without what reads them."""
    licences = sorted({item.licence for _, item in _licensed(dep)})
    if not licences:
        return ""
    return (f" (licensed: {'; '.join(licences)}; `python -m elmo_repro.fetch --list` says how to make it, "
            f"or run without what reads it: `python -m workflow.profile {params.get('profile', 'tiny')} --free-data`)")


def released_layer_problems(params: dict[str, Any], root: Path = Path(".")) -> list[str]:
    """A released biLM (``bilm_source.path``: a directory with ``options.json`` and ``weights.hdf5``,
    or a ``.hdf5`` file with ``options.json`` beside it) that is not there, and fixed layers of the
    biLM specs outside its layers (its ``options.json``)."""
    released = released_bilm(params)
    if released is None:
        return []          # the biLM trained here: the schema checks its layers (bilm.lstm.n_layers)
    path = root / released
    options, weights = ((path / "options.json", path / "weights.hdf5") if path.suffix not in (".hdf5", ".h5")
                        else (path.parent / "options.json", path))
    absent = [str(file) for file in (options, weights) if not file.is_file()]
    if absent:
        return [f"bilm_source.path: the released biLM {released} lacks {' and '.join(absent)} "
                "(`python -m elmo_repro.fetch --only elmo_released` fetches the original's)"]
    n_layers = read_json(options)["lstm"]["n_layers"]
    return [f"elmo_specs.{name}.layer: layer {spec['layer']} is outside the released biLM {options}: 0 .. "
            f"{n_layers} (0 = the char layer)"
            for name, spec in params["elmo_specs"].items()
            if spec.get("mix") == "fixed" and spec.get("bilm") != "cove" and spec["layer"] > n_layers]


def mirror_problem(params: dict[str, Any], root: Path = Path(".")) -> list[str]:
    """The data mirror itself missing, in one line with how to get one (instead of a line for every
    file under it)."""
    mirror = (params.get("data") or {}).get("mirror")
    if mirror is None or (root / mirror).is_dir():
        return []
    return [f"data.mirror: the data mirror {mirror} does not exist: fetch one with `python -m elmo_repro.fetch "
            f"--dest DIR` and render with `python -m workflow.profile {params.get('profile', 'tiny')} --mirror DIR`"]


def main(argv: list[str] | None = None) -> None:
    stage_args(__doc__, argv)
    params = load_params()                     # raises InputError naming the key path
    problems = mirror_problem(params) or released_layer_problems(params) + missing_inputs(params)
    if problems:
        shown = problems[:12] + ([f"... and {len(problems) - 12} more"] if len(problems) > 12 else [])
        raise InputError("params.yaml", "\n".join(["a stage would fail after DVC deleted its outputs:", *shown]))
    for name, why in params["data"].get("left_out", {}).items():
        log(f"left out (data.left_out): {name}: {why}")
    with stage_run("check_params", params, SECTIONS):
        write_json(REPORT, {"valid": True})


if __name__ == "__main__":
    main()
