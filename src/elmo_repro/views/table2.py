"""Table 2 of the paper (§5.1: all biLM layers, λ = 1 and λ = 0.001, against the top layer only) as a view
over the runs ``tables.table2`` lists (analysis job): :mod:`.ablation`."""

from __future__ import annotations

from typing import Any

from . import Output
from .ablation import ablation_files


def build(params: dict[str, Any]) -> Output:
    return ablation_files(params, "table2")
