"""A fingerprint of Python source that changes with its code and not with its prose.

Used where an edit to code must invalidate something computed by it (a biLM checkpoint that may be
resumed, see :mod:`.bilm.train`) while an edited comment, docstring or blank line must not: those
cannot change what the code computes, so they should not throw away hours of training.
"""

from __future__ import annotations

import ast
import hashlib
from pathlib import Path
from typing import Iterable


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
