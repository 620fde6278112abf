"""CoVe's translation score (McCann et al. 2017's encoder, trained here): test BLEU by sacrebleu, in
sacrebleu's default and as published scores are computed."""

from __future__ import annotations

from typing import Any

from ..io import read_json
from .probes import render_cove
from . import Output


def build(params: dict[str, Any]) -> Output:
    return {"cove.md": render_cove(read_json("results/cove/bleu.json"),
                                   read_json("results/metrics/cove_published_bleu.json"),
                                   read_json("results/metrics/multi30k_data.json"), params["profile"])}
