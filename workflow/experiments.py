"""DVC experiments in temporary copies (``dvc exp run --temp``, ``dvc exp run --queue`` + ``dvc
queue start``) and the data mirror.

DVC runs such an experiment in a copy of the workspace (``<root>/.dvc/tmp/exps/<tmp dir>`` for a
queued one, ``<root>/.dvc/tmp/exps/standalone/<tmp dir>`` for ``--temp``) and resolves the params
there: a relative mirror such as the default ``../shared/data`` would then point at
``<root>/.dvc/tmp/exps/shared/data`` (or ``.../standalone/shared/data``), where nothing is. Rather
than make the mirror absolute (which would change every mirror dependency's recorded path and
re-run the whole pipeline in the experiment), a symbolic link ``shared`` -> ``<root>/../shared`` in
each of those two directories makes the same relative path resolve from any copy; the recorded paths, and so DVC's cache
decisions, stay those of the workspace. ``setup.sh`` and the launcher
(``python -m workflow.launch dvc exp ...``) create it; ``python -m workflow.experiments`` does it
alone. The MLflow store needs nothing: a stage in a copy logs to its repository's store
(``elmo_repro.tracking.repository_root``).

A relative mirror inside the repository, or more than one level above it, cannot be linked this
way: use an absolute ``data.mirror`` for experiments (``-S data.mirror=/abs/path``).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path, PurePosixPath

from elmo_repro.params import load_params
from elmo_repro.tracking import EXPERIMENT_COPIES


def mirror_links(mirror: str, root: Path) -> list[tuple[Path, Path]]:
    """``(link, target)`` pairs that make the relative ``mirror`` resolve from DVC's experiment
    copies of ``root`` (one per copy directory), or none for an absolute mirror.

    Raises:
        ValueError: a relative mirror that does not start with exactly one ``..`` (naming it),
            or whose first directory would clash with DVC's own entries there (``cache``, ``tmp*``).
    """
    path = PurePosixPath(mirror)
    if path.is_absolute():
        return []
    parts = path.parts
    if len(parts) < 2 or parts[0] != ".." or ".." in parts[1:]:
        raise ValueError(f"data.mirror {mirror!r}: a relative mirror must be a sibling of the repository "
                         "('../<dir>/...') to be found from DVC's experiment copies; give an absolute path")
    name = parts[1]
    if name in ("cache", "celery", "run", "standalone") or name.startswith(("tmp", "rwlock")):
        raise ValueError(f"data.mirror {mirror!r}: {name!r} clashes with DVC's entries in "
                         f"{EXPERIMENT_COPIES[0]}; give an absolute path")
    target = (root.parent / name).resolve()
    return [(root / parent / name, target) for parent in EXPERIMENT_COPIES]


def ensure_mirror_links(mirror: str, root: Path) -> list[Path]:
    """Create (or repoint) the links of :func:`mirror_links`; returns them (none for an absolute
    mirror).

    Raises:
        ValueError: as :func:`mirror_links`.
        FileExistsError: something other than a link already has a link's name.
    """
    made = []
    for link, target in mirror_links(mirror, root):
        link.parent.mkdir(parents=True, exist_ok=True)
        if link.is_symlink():
            if Path(os.readlink(link)) == target:
                made.append(link)
                continue
            link.unlink()
        elif link.exists():
            raise FileExistsError(f"{link} exists and is not a link; remove it or give an absolute data.mirror")
        link.symlink_to(target, target_is_directory=True)
        made.append(link)
    return made


def main() -> int:
    root = Path.cwd()
    mirror = load_params()["data"]["mirror"]
    try:
        links = ensure_mirror_links(mirror, root)
    except (ValueError, FileExistsError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    where = ", ".join(f"{link.relative_to(root)} -> {os.readlink(link)}" for link in links)
    print(f"experiments: data mirror {mirror!r} " + (f"reachable from DVC's experiment copies ({where})"
                                                     if links else "is absolute"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
