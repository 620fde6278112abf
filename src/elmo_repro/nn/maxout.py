"""Maxout feed-forward network (Goodfellow et al. 2013), as allennlp's ``Maxout`` module."""

from __future__ import annotations

from typing import Sequence

import torch
from torch import nn


class Maxout(nn.Module):
    """Stacked maxout layers, each ``dropout(max over pool of Linear(x))``.

    Layer i is ``Linear(d_in, output_dims[i] * pool_sizes[i])``; output unit j is the max over the
    consecutive affine units ``j*pool .. (j+1)*pool - 1`` (allennlp's view(..., d, pool).max(-1)),
    followed by that layer's dropout, the last layer included.

    Args:
        input_dim: D_in.
        output_dims: width of each layer's output.
        pool_sizes: pieces per output unit, one per layer or a single int for all.
        dropout: dropout after each layer, one per layer or a single float for all.
    """

    def __init__(self, input_dim: int, output_dims: Sequence[int], pool_sizes: int | Sequence[int],
                 dropout: float | Sequence[float] = 0.0):
        super().__init__()
        n = len(output_dims)
        pools = [pool_sizes] * n if isinstance(pool_sizes, int) else list(pool_sizes)
        drops = [dropout] * n if isinstance(dropout, (int, float)) else list(dropout)
        if len(pools) != n or len(drops) != n:
            raise ValueError(f"pool_sizes and dropout need one entry per layer ({n})")
        dims = [input_dim, *output_dims]
        self.linears = nn.ModuleList(nn.Linear(dims[i], dims[i + 1] * pools[i]) for i in range(n))
        self.dropouts = nn.ModuleList(nn.Dropout(p) for p in drops)
        self.pool_sizes = pools
        self.output_dim = dims[-1]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """(..., input_dim) -> (..., output_dims[-1])."""
        for linear, drop, pool in zip(self.linears, self.dropouts, self.pool_sizes):
            affine = linear(x)
            x = drop(affine.view(*affine.shape[:-1], -1, pool).max(dim=-1).values)
        return x
