"""Table 1 with its control column (analysis job): as ``table1``, plus the char-layer control runs
of ``tables.table1_controls`` and the p-value of +ELMo against them (is the gain from context?)."""

from __future__ import annotations

from typing import Any

from ..experiments.specs import RUNS_DIRS
from . import Output
from .table1 import table1_files


def build(params: dict[str, Any]) -> Output:
    return table1_files(params, [RUNS_DIRS["main"], RUNS_DIRS["analysis"]], "table1_controls", controls=True)
