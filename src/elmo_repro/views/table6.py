"""Table 6 (paper §5.3): POS tagging accuracy of a linear probe on each layer."""

from __future__ import annotations

from typing import Any

from .probes import load_pos_rows, render_table6, table6
from . import Output


def build(params: dict[str, Any]) -> Output:
    table = table6(load_pos_rows("results/probes/pos"), "paper/table6.csv")
    return {"table6.md": render_table6(table, params["profile"]),
            "table6.json": {"profile": params["profile"], **table}}
