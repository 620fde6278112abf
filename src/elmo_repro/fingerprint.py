"""Which project files a module runs (a static import scan), and a fingerprint of their code.

The one import scan of the project: the workflow takes a stage's code dependencies from it
(``workflow/imports.py``) and the pretraining checkpoint's fingerprint covers the files it finds
for the training code (:mod:`.bilm.train`), so the two cannot disagree. The scan reads sources
with :mod:`ast` and runs nothing. What counts as imported, from the source of a file (project
files: ``src/elmo_repro`` and ``stages/``):

- ``import a.b.c`` and ``from a.b import c``, absolute or relative; ``c`` counts when it is a
  submodule, and every package on the way (``a/__init__.py``, ``a/b/__init__.py``) counts too,
  since importing a module runs its packages' ``__init__``;
- imports anywhere in the file, function bodies included (they run when the function is called);
- but not imports under ``if TYPE_CHECKING:``, which serve annotations only and never run.

Imports built at run time (``importlib.import_module(name)``) are not seen.

The fingerprint changes with the code and not with its prose: an edited comment, docstring or
blank line cannot change what the code computes, so it must not throw away hours of training.
"""

from __future__ import annotations

import ast
import hashlib
from pathlib import Path
from typing import Iterable

_SRC = Path(__file__).resolve().parents[1]
ROOT = _SRC.parent                               # the repository (stages/ lies beside src/)
_BASES = {"elmo_repro": _SRC, "stages": ROOT}   # top-level project package -> directory holding it
# Modules that cannot change any output (log lines, progress, MLflow records): no stage depends on
# them and no fingerprint covers them.
NOT_OUTPUT_MODULES = (_SRC / "elmo_repro" / "console.py", _SRC / "elmo_repro" / "tracking.py",
                      _SRC / "elmo_repro" / "tracking_spool.py")


def _is_string_statement(node: ast.stmt) -> bool:
    """A bare string literal used as a statement: a docstring, or any other no-op string."""
    return (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str))


def strip_docstrings(tree: ast.AST) -> ast.AST:
    """``tree`` with every statement that is only a string literal removed, in place.

    This drops module, class and function docstrings and the attribute-docstring idiom; such
    statements are no-ops, so no computation depends on them. Comments need no stripping: the
    parser never keeps them.
    """
    for node in ast.walk(tree):
        for name in ("body", "orelse", "finalbody"):
            body = getattr(node, name, None)
            if isinstance(body, list) and body and isinstance(body[0], ast.stmt):
                body[:] = [statement for statement in body if not _is_string_statement(statement)]
    return tree


def code_dump(path: Path) -> str:
    """The code of the Python file ``path`` as text: its AST without docstrings and without line
    and column numbers, so only edits that change what is executed change it."""
    tree = strip_docstrings(ast.parse(path.read_text(encoding="utf-8"), filename=str(path)))
    return ast.dump(tree, include_attributes=False)


def code_fingerprint(paths: Iterable[Path], root: Path) -> str:
    """SHA-256 hex digest of the code of ``paths`` (see :func:`code_dump`), each named by its
    POSIX path relative to ``root``.

    Names are relative so the digest does not depend on where the repository is checked out, and
    they are hashed with the code so that renaming or moving a file changes it. Files are taken
    once each, in the order of their names, so the order of ``paths`` and repeats in it do not
    matter. The digest may change with the Python version, whose parser may represent the same
    code differently.
    """
    root = Path(root).resolve()
    named = {Path(path).resolve().relative_to(root).as_posix(): Path(path) for path in paths}
    digest = hashlib.sha256()
    for name, path in sorted(named.items()):
        # NUL separators: ast.dump writes no raw NUL byte, so (name, code) pairs cannot run together
        digest.update(name.encode() + b"\0" + code_dump(path).encode() + b"\0")
    return digest.hexdigest()


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
