"""Which biLM the pipeline's ELMo runs read (``bilm_source.path``): the one it pretrains, or
released weights, in which case the DAG has no pretraining, perplexity or fine-tuning stage
(workflow/registry.py) and the views say so."""

from __future__ import annotations

PRETRAINED_BILM = "models/bilm"               # written by stage pretrain_bilm (bilm_source.path's default)


def released_bilm(params: dict) -> str | None:
    """The released biLM ``bilm_source.path`` names (a directory with bilm-tf's ``options.json`` and
    ``weights.hdf5``, or an HDF5 weights file with ``options.json`` beside it), or None when the
    pipeline pretrains its own (``models/bilm``). With a released biLM there is no pretraining, no
    held-out perplexity and no domain fine-tuning: the released files hold no softmax."""
    path = (params.get("bilm_source") or {}).get("path", PRETRAINED_BILM)
    return None if path == PRETRAINED_BILM else path
