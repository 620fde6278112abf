"""How the biLM trains, as data: the ``pretrain`` and ``finetune`` params sections, declared once.

The params schema validates ``params.yaml`` with them and :mod:`elmo_repro.bilm.train` trains from
them, so the two cannot disagree. A leaf module (pydantic only): the pretraining code depends on
it without depending on the rest of the schema (a task's declaration is no input of pretraining).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from .strict import Strict


class _TrainingLength(Strict):
    """How long a biLM trains (passes or a token budget) and how often it checkpoints and logs."""

    epochs: float = Field(ge=0, allow_inf_nan=False)     # > 0: passes over the training text
    token_budget: int = Field(ge=0)                      # target tokens per direction; used when epochs is 0
    checkpoint_every: int = Field(ge=1)                  # batches
    log_every: int = Field(ge=1)                         # batches

    @model_validator(mode="after")
    def _check(self) -> "_TrainingLength":
        if self.epochs == 0 and self.token_budget == 0:
            raise ValueError("token_budget: must be > 0 when epochs is 0 (or set epochs)")
        return self


class PretrainSection(_TrainingLength):
    """biLM pretraining (paper §3.4, bilm-tf ``train.py``): the ``pretrain`` params section and the
    configuration :func:`elmo_repro.bilm.train.pretrain` takes (``bilm.train.PretrainConfig``)."""

    seed: int = Field(ge=0)
    batch_size: int = Field(ge=1)                        # sequences per rank
    unroll_steps: int = Field(ge=1)                      # tokens per sequence (truncated BPTT)
    n_negative_samples: int = Field(ge=1)                # sampled-softmax negatives per batch
    learning_rate: float = Field(gt=0, allow_inf_nan=False)          # Adagrad
    initial_accumulator: float = Field(ge=0, allow_inf_nan=False)    # Adagrad
    grad_clip: float = Field(gt=0, allow_inf_nan=False)              # global gradient-norm clip
    softmax_bias_init: Literal["zeros", "unigram"]
    precision: Literal["fp32", "bf16"]                   # bf16: autocast, CUDA only


class FinetuneSection(_TrainingLength):
    """Domain fine-tuning (paper §3.4): its length (the paper: about one epoch of the task's
    training text); every other setting is pretrain's."""
