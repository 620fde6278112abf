"""A stage's code dependencies: the project files its entry point imports, transitively.

A stage must re-run when any project file it imports changes (:func:`code_deps`). The scan itself
is :mod:`elmo_repro.fingerprint` (ast only: no torch), shared with the pretraining checkpoint's
fingerprint so that both cover the same files.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Iterable

from elmo_repro.fingerprint import (NOT_OUTPUT_MODULES, ROOT, code_fingerprint, local_imports,
                                    module_file, strip_docstrings)

__all__ = ["NOT_OUTPUT_CODE", "ROOT", "ast_fingerprint", "code_deps", "local_imports", "module_file"]

# Repo-relative paths of the modules no stage depends on (see elmo_repro.fingerprint).
NOT_OUTPUT_CODE = [path.relative_to(ROOT).as_posix() for path in NOT_OUTPUT_MODULES]


def _entry_file(entry: str | Path) -> Path:
    """The file of an entry point given as a path (``stages/train_ner.py``, relative to ROOT or
    absolute) or as a dotted module name (``stages.train_ner``, ``elmo_repro.tasks.ner``)."""
    if isinstance(entry, Path) or entry.endswith(".py") or "/" in entry:
        path = (ROOT / entry).resolve()
        if not path.is_file():
            raise FileNotFoundError(f"no such entry point: {entry}")
        return path
    found = module_file(entry)
    if found is None:
        raise ValueError(f"{entry!r} is not a module of the project (elmo_repro.* or stages.*)")
    return found


def _is_empty_package(path: Path) -> bool:
    """True for a package ``__init__.py`` with no code (empty, or a docstring only): it cannot
    change what the package does, so it is no dependency."""
    if path.name != "__init__.py":
        return False
    return not strip_docstrings(ast.parse(path.read_text(encoding="utf-8"))).body


def code_deps(*entry_points: str | Path, exclude: Iterable[str] = ()) -> list[str]:
    """Sorted repo-relative POSIX paths of the project files the entry points import, transitively
    (the entry points' own files included): a stage's code dependencies.

    Left out are package ``__init__.py`` files without code and every path in ``exclude``
    (repo-relative files or directories; for modules that only log, such as
    ``src/elmo_repro/console.py``, whose edits should re-run nothing).
    """
    excluded = [(ROOT / path).resolve() for path in exclude]
    files: set[Path] = set()
    for entry in entry_points:
        files |= local_imports(_entry_file(entry))
    return sorted(path.relative_to(ROOT).as_posix() for path in files
                  if not _is_empty_package(path)
                  and not any(path == e or path.is_relative_to(e) for e in excluded))


def ast_fingerprint(paths: Iterable[Path]) -> str:
    """SHA-256 hex digest of the code of ``paths`` without comments, docstrings or layout, each file
    named by its path relative to :data:`ROOT` (relative paths are taken from there): computed as
    the biLM checkpoints' code fingerprint is (:func:`elmo_repro.fingerprint.code_fingerprint`), so
    editing prose changes neither."""
    return code_fingerprint([(ROOT / path) for path in paths], ROOT)
