"""Which project files a Python file imports, found statically, and a fingerprint of their code.

A stage must re-run when any project file it imports changes, so its code dependencies are the
files its entry point imports, transitively (:func:`code_deps`). The scan reads the source with
:mod:`ast` and runs nothing, so it needs neither torch nor the other third-party packages.

What counts as imported, from the source of ``path`` (project files: ``src/elmo_repro`` and
``stages/``):

- ``import a.b.c`` and ``from a.b import c``, absolute or relative; ``c`` counts when it is a
  submodule, and every package on the way (``a/__init__.py``, ``a/b/__init__.py``) counts too,
  since importing a module runs its packages' ``__init__``;
- imports anywhere in the file, function bodies included (they run when the function is called);
- but not imports under ``if TYPE_CHECKING:``, which serve annotations only and never run.

Imports built at run time (``importlib.import_module(name)``) are not seen.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Iterable

from elmo_repro.fingerprint import code_fingerprint, strip_docstrings

ROOT = Path(__file__).resolve().parents[1]
_SRC = ROOT / "src"
_BASES = {"elmo_repro": _SRC, "stages": ROOT}   # top-level project package -> directory holding it


def module_file(name: str) -> Path | None:
    """The project file of the dotted module ``name`` (``x/y.py`` or ``x/y/__init__.py``), or None
    when it is not a project module (a third-party or standard module, or a name in a module)."""
    parts = name.split(".")
    base = _BASES.get(parts[0])
    if base is None:
        return None
    for candidate in (base.joinpath(*parts).with_suffix(".py"), base.joinpath(*parts, "__init__.py")):
        if candidate.is_file():
            return candidate
    return None


def _package_of(path: Path) -> list[str] | None:
    """The dotted package that relative imports in ``path`` start from, as parts; None when the
    file lies outside the project (its relative imports cannot be resolved)."""
    for base in (_SRC, ROOT):       # src first: ROOT contains it
        if path.is_relative_to(base):
            parts = list(path.relative_to(base).with_suffix("").parts)
            return parts[:-1]       # a module's package, or a package's own name for __init__
    return None


def _type_checking_only(tree: ast.AST) -> set[int]:
    """Ids of the nodes inside ``if TYPE_CHECKING:`` bodies (their ``else`` branches do run)."""
    return {id(n) for node in ast.walk(tree)
            if isinstance(node, ast.If)
            and ast.unparse(node.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING")
            for statement in node.body for n in ast.walk(statement)}


def _imported_names(path: Path) -> list[str]:
    """Dotted names that ``path`` imports (each may be a module, or a name inside one)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package = _package_of(path)
    skip = _type_checking_only(tree)
    names: list[str] = []
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                if package is None or node.level > len(package):
                    continue        # not resolvable inside the project
                base = package[:len(package) - node.level + 1]
            else:
                base = []
            module = ".".join([*base, *([node.module] if node.module else [])])
            names.append(module)
            # `from pkg import sub` imports the submodule pkg.sub when there is one
            names += [f"{module}.{alias.name}" for alias in node.names if alias.name != "*"]
    return names


def local_imports(path: Path) -> set[Path]:
    """The project files that the Python file ``path`` imports, transitively, and ``path`` itself,
    as absolute paths: package ``__init__.py`` files that importing runs are included, imports
    under ``if TYPE_CHECKING:`` are not. A relative ``path`` is taken relative to :data:`ROOT`."""
    seen: set[Path] = set()
    todo = [(ROOT / path).resolve()]
    while todo:
        current = todo.pop()
        if current in seen:
            continue
        seen.add(current)
        for name in _imported_names(current):
            parts = name.split(".")
            for k in range(1, len(parts) + 1):      # packages on the way run their __init__ too
                found = module_file(".".join(parts[:k]))
                if found is not None and found not in seen:
                    todo.append(found)
    return seen


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
