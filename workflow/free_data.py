"""The main and analysis jobs on the freely downloadable data alone (``workflow.profile NAME --free-data``).

Some files the default jobs read cannot be downloaded: :data:`elmo_repro.fetch.MANUAL` declares
them (today the words of CoNLL-2005's WSJ sections 02-21 and 24: Penn Treebank text, LDC licence).
Without them, every task whose ``prepare_<task>`` stage reads such a file and every contamination
split that reads one is *left out*: recorded with its reason in ``data.left_out``, removed from
``contamination.splits`` and from every table's ``runs.tasks``. The registry then renders no stage
of a left-out task and no dependency on its files (:func:`workflow.registry.concrete`), the params
check prints what was left out and why, and Table 1 says so under the table. Nothing is left out
silently: a mirror that lacks a licensed file without this option fails the params check, which
names the file and this option.
"""

from __future__ import annotations

from typing import Any

from elmo_repro.data.eval_text import SPLIT_FILES
from elmo_repro.experiments.tasks import TASKS


def licensed_left_out() -> dict[str, str]:
    """``{task or evaluation split: why}`` for what reads a licensed file of the default jobs
    (:data:`elmo_repro.fetch.MANUAL` entries with ``default`` and ``param == "data.mirror"``), in
    task order, then split order."""
    from elmo_repro.fetch import manual_files_at    # the fetcher's table of manual files (stdlib and rich only)

    def why(paths: tuple[str, ...] | list[str]) -> str | None:
        hits = [(file, item.licence) for path in paths for file, item in manual_files_at(path, default_only=True)]
        if not hits:
            return None
        folders = sorted({file.rsplit("/", 1)[0] for file, _ in hits})
        return f"needs {', '.join(folders)} ({'; '.join(sorted({licence for _, licence in hits}))})"

    left = {task: reason for task, spec in TASKS.items() if (reason := why(spec.prepare.inputs))}
    left.update({split: reason for split, path in SPLIT_FILES.items() if (reason := why([path]))})
    return left


def leave_out(params: dict[str, Any], left_out: dict[str, str]) -> dict[str, Any]:
    """``params`` without the tasks and evaluation splits of ``left_out`` (``{name: why}``): they
    leave every ``tables.<name>.runs.tasks`` and ``contamination.splits``, and ``data.left_out``
    records them. A table whose runs all belong to left-out tasks keeps an empty task list (its view
    says so). Raises ValueError for a name that is neither a task nor an evaluation split."""
    unknown = sorted(set(left_out) - set(TASKS) - set(SPLIT_FILES))
    if unknown:
        raise ValueError(f"cannot leave out {', '.join(unknown)}: neither a task ({', '.join(TASKS)}) "
                         "nor an evaluation split (elmo_repro.data.eval_text.SPLITS)")
    out = {**params, "data": {**params.get("data", {}), "left_out": dict(left_out)}}
    contamination = params.get("contamination")
    if contamination is not None:
        out["contamination"] = {**contamination,
                                "splits": [s for s in contamination["splits"] if s not in left_out]}
    tables = {}
    for name, spec in (params.get("tables") or {}).items():
        runs = (spec or {}).get("runs")
        if runs and "tasks" in runs:
            spec = {**spec, "runs": {**runs, "tasks": [t for t in runs["tasks"] if t not in left_out]}}
        tables[name] = spec
    out["tables"] = tables
    return out
