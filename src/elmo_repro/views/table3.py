"""Table 3 of the paper (§5.2: ELMo at the input, at the output, or at both) as a view
over the runs ``tables.table3`` lists (analysis job): :mod:`.ablation`."""

from __future__ import annotations

from typing import Any

from . import Output
from .ablation import ablation_files


def build(params: dict[str, Any]) -> Output:
    return ablation_files(params, "table3")
