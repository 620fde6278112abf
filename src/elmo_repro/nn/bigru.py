"""A one-layer bidirectional GRU over right-padded batches, without packing (the recurrent layer of
document-qa's reader, its ``CudnnGru``)."""

from __future__ import annotations

import torch
from torch import nn

from .bilstm import reverse_padded


class BiGRU(nn.Module):
    """Bidirectional GRU: a forward GRU, and a forward GRU over each sequence reversed within its
    length (as :class:`~elmo_repro.nn.bilstm.BiLSTM`), so trailing padding never reaches a real
    position in either direction.

    Args:
        input_dim: D_in. hidden: H, units per direction.
    """

    def __init__(self, input_dim: int, hidden: int):
        super().__init__()
        self.forward_gru = nn.GRU(input_dim, hidden, batch_first=True)
        self.backward_gru = nn.GRU(input_dim, hidden, batch_first=True)
        self.output_dim = 2 * hidden

    def forward(self, x: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        """(B, T, D_in), (B,) -> (B, T, 2H); values at padded positions are arbitrary."""
        back = reverse_padded(self.backward_gru(reverse_padded(x, lengths))[0], lengths)
        return torch.cat([self.forward_gru(x)[0], back], dim=-1)
