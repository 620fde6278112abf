"""The biLM's context-independent token layer: char CNN -> highway -> linear projection
(paper §3.4; Kim et al. 2016; bilm-tf ``_build_word_char_embeddings``).

For each filter (width w, n maps) the convolution runs over the 50 character slots, is max-pooled
over the word and only then passed through the activation (the original's order).

Most of a word's 50 slots are padding after its end-of-word mark, and every window that lies wholly
in that tail sees the same characters, so it gives the same value. The forward pass therefore
convolves each word only over its content plus the widest filter (which keeps at least one
all-tail window) and groups words of similar length into one convolution each: the same maximum
as over all 50 slots, at a fraction of the work (5x on the paper's filters for 1B Word text). The
values agree with the full convolution to float rounding (convolutions of different lengths may
sum in a different order); :func:`~elmo_repro.bilm.reference.reference_token_layer` is the plain
version the tests compare against.
"""

from __future__ import annotations

import torch
from torch import nn

from .highway import Highway

ACTIVATIONS = {"relu": torch.relu, "tanh": torch.tanh}
GROUP_WIDTH = 8   # slot counts are rounded up to a multiple of this: fewer, larger convolutions


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
        self.max_width = max(w for w, _ in filters)
        self.n_filters = sum(n for _, n in filters)
        self.activation = ACTIVATIONS[activation]
        self.highway = Highway(self.n_filters, n_highway)
        self.projection = nn.Linear(self.n_filters, projection_dim)

    def forward(self, char_ids: torch.Tensor) -> torch.Tensor:
        """(..., 50) int64 -> (..., projection_dim) float.

        Raises:
            ValueError: a char id outside the embedding's 0 .. n_characters - 1 (naming the id
                and the options' ``n_characters``), instead of torch's bare IndexError.
        """
        if char_ids.numel() and (int(char_ids.min()) < 0 or int(char_ids.max()) >= self.char_embed.num_embeddings):
            bad = int(char_ids.min()) if int(char_ids.min()) < 0 else int(char_ids.max())
            raise ValueError(f"char id {bad} is outside 0 .. {self.char_embed.num_embeddings - 1}: the biLM's options "
                             f"have n_characters = {self.char_embed.num_embeddings} (262 covers the 256 bytes, "
                             "the 5 special ids and padding; ids come from data.character_ids)")
        lead = char_ids.shape[:-1]
        flat = char_ids.reshape(-1, char_ids.size(-1))                    # (N, 50)
        token = self.activation(self.pooled(flat))                        # (N, n_filters)
        token = self.projection(self.highway(token))                      # (N, projection_dim)
        return token.reshape(*lead, token.size(-1))

    def pooled(self, flat: torch.Tensor) -> torch.Tensor:
        """Max over positions of every filter's convolution, before the activation.

        Args:
            flat: (N, S) char ids, S = max_characters_per_token.

        Returns:
            (N, n_filters), the filters' maps concatenated in order.
        """
        if flat.size(0) == 0:
            return self.projection.weight.new_zeros(0, self.n_filters)
        width = self.slot_widths(flat)
        order = torch.argsort(width, stable=True)
        widths, counts = torch.unique_consecutive(width[order], return_counts=True)
        pieces = [self._conv_max(flat[rows, :w])
                  for rows, w in zip(order.split(counts.tolist()), widths.tolist())]
        return torch.cat(pieces).index_select(0, torch.argsort(order))

    def slot_widths(self, flat: torch.Tensor) -> torch.Tensor:
        """(N, S) char ids -> (N,) how many leading slots :meth:`pooled` convolves for each word:
        its content (up to the last slot that differs from its final, fill slot) plus the widest
        filter, rounded up to a multiple of ``GROUP_WIDTH`` and at most S."""
        slots = flat.size(1)
        differs = flat != flat[:, -1:]
        content = (differs * torch.arange(1, slots + 1, device=flat.device)).amax(-1)
        needed = (content + self.max_width).clamp(max=slots)
        return ((needed + GROUP_WIDTH - 1) // GROUP_WIDTH * GROUP_WIDTH).clamp(max=slots)

    def _conv_max(self, chars: torch.Tensor) -> torch.Tensor:
        """(n, w) char ids -> (n, n_filters): each filter's convolution, max over its positions."""
        x = self.char_embed(chars).transpose(1, 2)                        # (n, char_dim, w)
        # amax has no indices to build; with gradients, max's subgradient (one position) is kept
        reduce = ((lambda y: y.max(dim=-1).values) if torch.is_grad_enabled()
                  else (lambda y: y.amax(dim=-1)))
        return torch.cat([reduce(conv(x)) for conv in self.convs], dim=-1)

    def embed_unique(self, char_ids: torch.Tensor) -> torch.Tensor:
        """Same result as ``forward``, computing the CNN once per distinct token in the batch."""
        lead = char_ids.shape[:-1]
        flat = char_ids.reshape(-1, char_ids.size(-1))
        first, inverse = unique_rows(flat)
        token = self(flat[first])[inverse]
        return token.reshape(*lead, token.size(-1))


BITS_PER_ID = 9   # char ids are < 262 < 2**9: seven of them pack into one non-negative int64


def unique_rows(ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Distinct rows of a (N, S) tensor of small non-negative ids.

    Returns ``first`` (U,), the index of each distinct row's first occurrence, and ``inverse``
    (N,) with ``ids[first][inverse] == ids``. The same partition as ``torch.unique(ids, dim=0,
    return_inverse=True)`` (the order of the U rows differs), without its row-by-row comparison
    sort, which dominated feature extraction: the ids are packed seven to an int64 and the rows
    ranked one packed column at a time with one-dimensional ``torch.unique`` (pairs of dense ranks
    stay below N**2, so nothing overflows).
    """
    n = ids.size(0)
    if n == 0:
        empty = torch.zeros(0, dtype=torch.long, device=ids.device)
        return empty, empty
    if int(ids.min()) < 0 or int(ids.max()) >= 2 ** BITS_PER_ID:
        _, inverse = torch.unique(ids, dim=0, return_inverse=True)
        return _first_occurrence(inverse), inverse
    per_word = 63 // BITS_PER_ID
    shifts = torch.arange(per_word, device=ids.device) * BITS_PER_ID
    padded = torch.nn.functional.pad(ids, (0, -ids.size(1) % per_word))
    packed = (padded.view(n, -1, per_word) << shifts).sum(-1)             # (N, ceil(S / 7))
    rank = torch.zeros(n, dtype=torch.long, device=ids.device)
    for column in packed.unbind(1):
        _, column_rank = torch.unique(column, return_inverse=True)
        _, rank = torch.unique(rank * n + column_rank, return_inverse=True)
    return _first_occurrence(rank), rank


def _first_occurrence(inverse: torch.Tensor) -> torch.Tensor:
    positions = torch.arange(inverse.numel(), device=inverse.device)
    first = torch.full((int(inverse.max()) + 1,), inverse.numel(), dtype=torch.long, device=inverse.device)
    return first.scatter_reduce(0, inverse, positions, reduce="amin")


def conv_output_check(filters: list[list[int]], max_chars: int) -> None:
    """Raise ValueError if a filter is wider than the character slots."""
    too_wide = [w for w, _ in filters if w > max_chars]
    if too_wide:
        raise ValueError(f"filter widths {too_wide} exceed max_characters_per_token={max_chars}")
