"""Highway layers (Srivastava et al. 2015) with bilm-tf's gate convention.

bilm-tf names the sigmoid gate "carry" although it multiplies the *transform* branch:

    carry = sigmoid(x W_carry + b_carry);  transform = relu(x W_transform + b_transform)
    y = carry * transform + (1 - carry) * x

``b_carry`` starts at -2 so each layer initially passes its input through (bilm-tf).
"""

from __future__ import annotations

import torch
from torch import nn


class Highway(nn.Module):
    """``n_layers`` highway layers of width ``dim``: (..., dim) -> (..., dim)."""

    def __init__(self, dim: int, n_layers: int):
        super().__init__()
        self.carry = nn.ModuleList(nn.Linear(dim, dim) for _ in range(n_layers))
        self.transform = nn.ModuleList(nn.Linear(dim, dim) for _ in range(n_layers))
        for carry, transform in zip(self.carry, self.transform):
            nn.init.normal_(carry.weight, std=(1.0 / dim) ** 0.5)
            nn.init.constant_(carry.bias, -2.0)
            nn.init.normal_(transform.weight, std=(1.0 / dim) ** 0.5)
            nn.init.zeros_(transform.bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for carry, transform in zip(self.carry, self.transform):
            gate = torch.sigmoid(carry(x))
            x = gate * torch.relu(transform(x)) + (1.0 - gate) * x
        return x
