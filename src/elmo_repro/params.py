"""Access to ``params.yaml``, the single source of every stage's configuration.

``params.yaml`` is rendered from ``workflow/profiles`` (see ``python -m workflow.profile``); each
stage reads only the sections it declares in the stage registry, so DVC re-runs exactly the
stages whose sections changed.
"""

from __future__ import annotations

import hashlib
import importlib
import json
from pathlib import Path
from typing import Any

import yaml

from .io import InputError, read_text

PARAMS_FILE = Path("params.yaml")


class _UniqueKeyLoader(yaml.SafeLoader):
    """PyYAML's safe loader, refusing a key repeated in one mapping (PyYAML keeps the last one
    silently; DVC refuses such a file, so every reader of params.yaml refuses it alike)."""

    def construct_mapping(self, node, deep=False):
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"duplicate key {key!r} (first on line {seen[key] + 1})", key_node.start_mark)
            seen[key] = key_node.start_mark.line
        return super().construct_mapping(node, deep=deep)


def load_params(path: str | Path = PARAMS_FILE, validate: bool = True) -> dict[str, Any]:
    """Load the whole parameter file (UTF-8) as a dict; with ``validate``, check it against the
    schema (:mod:`elmo_repro.schema`) before any stage work starts.

    Raises:
        InputError: the file is missing, is not valid UTF-8 or YAML (with the line), repeats a
            key in a mapping (with the line), does not hold a mapping, or (``validate``) breaks
            the schema (naming the key path).
    """
    path = Path(path)
    if not path.exists():
        raise InputError(path, "file not found (render it with `python -m workflow.profile`)")
    try:
        params = yaml.load(read_text(path), Loader=_UniqueKeyLoader)
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        problem = getattr(err, "problem", None) or str(err)
        raise InputError(path, f"malformed YAML: {problem}",
                         line=mark.line + 1 if mark is not None else None) from None
    if not isinstance(params, dict):
        raise InputError(path, f"expected a mapping of sections, got {type(params).__name__}")
    if validate:
        # Imported by name: the schema only refuses bad params before a stage starts and cannot
        # change an output, so it must not be a code dependency of every stage (workflow/imports.py
        # does not see an import built at run time). pydantic only: no torch.
        importlib.import_module(f"{__package__}.schema").validate_params(params, path)
    return params


def lookup(params: dict[str, Any], dotted: str) -> Any:
    """The value at a dotted key path (``tasks.ner``, ``runs.train_ner.ner-none-s0``); None if absent."""
    value: Any = params
    for key in dotted.split("."):
        if not isinstance(value, dict) or key not in value:
            return None
        value = value[key]
    return value


def section_hash(params: dict[str, Any], sections: list[str]) -> str:
    """A short, stable hash of the given sections or dotted key paths (recorded on MLflow runs)."""
    blob = json.dumps({name: lookup(params, name) for name in sections}, sort_keys=True)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:12]


def mirror_path(params: dict[str, Any], *parts: str) -> Path:
    """Path inside the data mirror (``data.mirror``), a directory laid out like ``shared/data``."""
    return Path(params["data"]["mirror"]).joinpath(*parts)
