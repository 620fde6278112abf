"""Table 5 (paper §5.3): word sense disambiguation F1 of each layer's 1-nearest-neighbour senses."""

from __future__ import annotations

from typing import Any

from .probes import load_wsd_rows, render_table5, table5
from . import Output


def build(params: dict[str, Any]) -> Output:
    table = table5(load_wsd_rows("results/probes/wsd"), "paper/table5.csv")
    return {"table5.md": render_table5(table, params["profile"]),
            "table5.json": {"profile": params["profile"], **table}}
