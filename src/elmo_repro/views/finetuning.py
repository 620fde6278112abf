"""The fine-tuning table (paper §3.4): per task the dev text's perplexity under the base and the
fine-tuned biLM and, when ``tables.finetuning`` lists runs, +ELMo with and without fine-tuning."""

from __future__ import annotations

from typing import Any

from ..experiments.specs import RUNS_DIRS
from ..finetuning_table import finetuning_rows, load_finetune_metrics, render_finetuning_markdown
from ..tables import load_runs
from . import Output


def build(params: dict[str, Any]) -> Output:
    spec = params["tables"].get("finetuning") or {}
    runs, _ = load_runs(RUNS_DIRS["main"], RUNS_DIRS["analysis"])
    rows = finetuning_rows(load_finetune_metrics("results/metrics/finetune"), runs, spec)
    return {"finetuning.md": render_finetuning_markdown(rows, params["profile"], spec),
            "finetuning.json": {"profile": params["profile"], "rows": rows}}
