"""Pretraining settings for the unit tests: every key of the ``pretrain`` params section, stated
here (the product declares the section once, in the schema, without defaults)."""

from elmo_repro.bilm.train import PretrainConfig, pretrain_config

BASE = dict(seed=0, token_budget=1_000_000, epochs=0.0, batch_size=128, unroll_steps=20, n_negative_samples=8192,
            learning_rate=0.2, initial_accumulator=1.0, grad_clip=10.0, checkpoint_every=500, log_every=50,
            softmax_bias_init="zeros", precision="fp32")


def settings(**changes) -> PretrainConfig:
    """``BASE`` with ``changes``, checked as params.yaml's section is."""
    return pretrain_config({**BASE, **changes})
