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

PARAMS_FILE = Path("params.yaml")


def load_params(path: str | Path = PARAMS_FILE) -> dict[str, Any]:
    """Load the whole parameter file as a dict."""
    with open(path, encoding="utf-8") as handle:
        return yaml.safe_load(handle)


def section_hash(params: dict[str, Any], sections: list[str]) -> str:
    """A short, stable hash of the given sections (the value recorded on MLflow runs)."""
    blob = json.dumps({name: params.get(name) for name in sections}, sort_keys=True)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:12]


def mirror_path(params: dict[str, Any], *parts: str) -> Path:
    """Path inside the data mirror (``data.mirror``), a directory laid out like ``shared/data``."""
    return Path(params["data"]["mirror"]).joinpath(*parts)
