"""Dropout with one mask per sequence shared over time steps (Gal & Ghahramani 2016), as
allennlp's ``InputVariationalDropout``."""

from __future__ import annotations

import torch
from torch import nn


class InputVariationalDropout(nn.Dropout):
    """Drops the same feature dimensions at every time step of a sequence.

    (B, T, D) -> (B, T, D): a (B, D) Bernoulli mask scaled by 1/(1-p) multiplies every step;
    the identity in eval mode or with p = 0.
    """

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not self.training or self.p == 0.0:
            return x
        ones = x.new_ones(x.size(0), x.size(-1))
        mask = nn.functional.dropout(ones, self.p, training=True)              # (B, D)
        return x * mask[:, None, :]
