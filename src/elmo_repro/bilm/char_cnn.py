"""The biLM's context-independent token layer: char CNN -> highway -> linear projection
(paper §3.4; Kim et al. 2016; bilm-tf ``_build_word_char_embeddings``).

For each filter (width w, n maps) the convolution runs over the 50 character slots, is max-pooled
over the word and only then passed through the activation (the original's order).
"""

from __future__ import annotations

import torch
from torch import nn

from .highway import Highway

ACTIVATIONS = {"relu": torch.relu, "tanh": torch.tanh}


class CharCNNTokenEmbedder(nn.Module):
    """Token layer x_k^LM: char ids (..., 50) -> (..., projection_dim).

    Args:
        n_characters: rows of the char embedding (262: the 261 original ids + padding id 0,
            whose row stays zero).
        char_dim: character embedding size (16 in the paper).
        filters: [[width, n_maps], ...].
        n_highway: number of highway layers.
        projection_dim: output size (the LSTM projection size, 512 in the paper).
        activation: "relu" or "tanh".
    """

    def __init__(self, n_characters: int, char_dim: int, filters: list[list[int]], n_highway: int,
                 projection_dim: int, activation: str = "relu"):
        super().__init__()
        if activation not in ACTIVATIONS:
            raise ValueError(f"activation must be one of {sorted(ACTIVATIONS)}, got {activation!r}")
        self.char_embed = nn.Embedding(n_characters, char_dim, padding_idx=0)
        nn.init.uniform_(self.char_embed.weight, -1.0, 1.0)
        with torch.no_grad():
            self.char_embed.weight[0].zero_()
        self.convs = nn.ModuleList(nn.Conv1d(char_dim, n, kernel_size=w) for w, n in filters)
        self.n_filters = sum(n for _, n in filters)
        self.activation = ACTIVATIONS[activation]
        self.highway = Highway(self.n_filters, n_highway)
        self.projection = nn.Linear(self.n_filters, projection_dim)

    def forward(self, char_ids: torch.Tensor) -> torch.Tensor:
        """(..., 50) int64 -> (..., projection_dim) float."""
        lead = char_ids.shape[:-1]
        flat = char_ids.reshape(-1, char_ids.size(-1))                    # (N, 50)
        chars = self.char_embed(flat).transpose(1, 2)                     # (N, char_dim, 50)
        pooled = [conv(chars).max(dim=-1).values for conv in self.convs]  # [(N, n_maps)]
        token = self.activation(torch.cat(pooled, dim=-1))                # (N, n_filters)
        token = self.projection(self.highway(token))                      # (N, projection_dim)
        return token.reshape(*lead, -1)

    def embed_unique(self, char_ids: torch.Tensor) -> torch.Tensor:
        """Same result as ``forward``, computing the CNN once per distinct token in the batch."""
        lead = char_ids.shape[:-1]
        flat = char_ids.reshape(-1, char_ids.size(-1))
        unique, inverse = torch.unique(flat, dim=0, return_inverse=True)
        return self(unique)[inverse].reshape(*lead, -1)


def conv_output_check(filters: list[list[int]], max_chars: int) -> None:
    """Raise ValueError if a filter is wider than the character slots."""
    too_wide = [w for w, _ in filters if w > max_chars]
    if too_wide:
        raise ValueError(f"filter widths {too_wide} exceed max_characters_per_token={max_chars}")

