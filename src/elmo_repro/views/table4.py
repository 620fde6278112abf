"""Table 4 (paper §5.3): nearest neighbours of polysemous words, static vectors against the biLM."""

from __future__ import annotations

from typing import Any

from ..io import read_json
from .probes import render_table4
from . import Output


def build(params: dict[str, Any]) -> Output:
    return {"table4.md": render_table4(read_json("results/probes/neighbours.json"), params["profile"])}
