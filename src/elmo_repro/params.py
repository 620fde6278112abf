"""Access to ``params.yaml``, the single source of every stage's configuration.

``params.yaml`` is rendered from ``workflow/profiles`` (see ``python -m workflow.profile``); each
stage reads only the sections it declares in the stage registry, so DVC re-runs exactly the
stages whose sections changed.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import yaml

from .io import InputError, read_text

PARAMS_FILE = Path("params.yaml")


def load_params(path: str | Path = PARAMS_FILE) -> dict[str, Any]:
    """Load the whole parameter file (UTF-8) as a dict.

    Raises:
        InputError: the file is missing, is not valid UTF-8 or YAML (with the line), or does not
            hold a mapping.
    """
    path = Path(path)
    if not path.exists():
        raise InputError(path, "file not found (render it with `python -m workflow.profile`)")
    try:
        params = yaml.safe_load(read_text(path))
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        problem = getattr(err, "problem", None) or str(err)
        raise InputError(path, f"malformed YAML: {problem}",
                         line=mark.line + 1 if mark is not None else None) from None
    if not isinstance(params, dict):
        raise InputError(path, f"expected a mapping of sections, got {type(params).__name__}")
    return params


def section_hash(params: dict[str, Any], sections: list[str]) -> str:
    """A short, stable hash of the given sections (the value recorded on MLflow runs)."""
    blob = json.dumps({name: params.get(name) for name in sections}, sort_keys=True)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:12]


def mirror_path(params: dict[str, Any], *parts: str) -> Path:
    """Path inside the data mirror (``data.mirror``), a directory laid out like ``shared/data``."""
    return Path(params["data"]["mirror"]).joinpath(*parts)
