"""The deep highway LSTM of He et al. (2017), "Deep Semantic Role Labeling: What Works and What's
Next" §2.2, as allennlp's ``StackedAlternatingLstm`` of ``AugmentedLstm`` layers implements it.

Layers alternate direction (layer 0 reads left to right, layer 1 right to left, ...), each
reading the previous layer's output. Inside a layer, at step t with input x_t and previous
output h_{t-1} (their Eq. 2-3):

    i, f, o = sigmoid(W_{i,f,o} [x_t ; h_{t-1}] + b)       g = tanh(W_g [x_t ; h_{t-1}] + b)
    c_t = i * g + f * c_{t-1}                              h'_t = o * tanh(c_t)
    r_t = sigmoid(W_r [x_t ; h_{t-1}] + b_r)               (the highway gate)
    h_t = r_t * h'_t + (1 - r_t) * W_h x_t                 (the highway connection; W_h has no bias)

Recurrent (variational) dropout: one Bernoulli mask per sequence and layer multiplies h_t at every
step in training, so the recurrence and the next layer see the same units dropped throughout
(Gal & Ghahramani 2016; allennlp applies the mask to the step's output, which is also the next
step's state). Weights are orthogonal per gate block, biases zero except the forget gate's (1).
"""

from __future__ import annotations

import torch
from torch import nn

from .bilstm import reverse_padded


class HighwayLSTMLayer(nn.Module):
    """One direction of one highway LSTM layer: (B, T, input_dim) -> (B, T, hidden_dim).

    Args:
        input_dim, hidden_dim: sizes of x_t and h_t.
        go_forward: read left to right (else right to left, within each sequence's length).
        recurrent_dropout: probability of the per-sequence mask on h_t (training only).
    """

    def __init__(self, input_dim: int, hidden_dim: int, go_forward: bool = True, recurrent_dropout: float = 0.0):
        super().__init__()
        self.hidden_dim, self.go_forward, self.recurrent_dropout = hidden_dim, go_forward, recurrent_dropout
        # gate blocks, in order: i, f, o, r (sigmoid), g (tanh); the input side adds W_h x_t
        # the biases sit on the state side; the input side has none, so W_h x_t has no bias
        # (allennlp's AugmentedLstm with use_input_projection_bias=False, its SRL configuration)
        self.input_linearity = nn.Linear(input_dim, 6 * hidden_dim, bias=False)
        self.state_linearity = nn.Linear(hidden_dim, 5 * hidden_dim)
        with torch.no_grad():
            for weight in (self.input_linearity.weight, self.state_linearity.weight):
                for block in weight.split(hidden_dim, dim=0):
                    nn.init.orthogonal_(block)
            self.state_linearity.bias.zero_()
            self.state_linearity.bias[hidden_dim:2 * hidden_dim] = 1.0          # forget gate

    def forward(self, x: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        """x (B, T, input_dim), lengths (B,) -> (B, T, hidden_dim), zero past each length."""
        b, t, h = x.size(0), x.size(1), self.hidden_dim
        if not self.go_forward:
            x = reverse_padded(x, lengths)
        projected = self.input_linearity(x)                                     # (B, T, 6H), all steps at once
        gates_in, highway_in = projected[..., :5 * h], projected[..., 5 * h:]
        state = x.new_zeros(b, h)
        memory = x.new_zeros(b, h)
        mask = None
        if self.training and self.recurrent_dropout > 0:
            mask = nn.functional.dropout(x.new_ones(b, h), self.recurrent_dropout, training=True)   # (B, H)
        outputs = []
        for step in range(t):
            gates = gates_in[:, step] + self.state_linearity(state)             # (B, 5H)
            sig = torch.sigmoid(gates[:, :4 * h])
            i, f, o, r = sig.split(h, dim=1)
            memory = i * torch.tanh(gates[:, 4 * h:]) + f * memory
            state = r * (o * torch.tanh(memory)) + (1 - r) * highway_in[:, step]
            if mask is not None:
                state = state * mask
            outputs.append(state)
        out = torch.stack(outputs, dim=1)                                       # (B, T, H)
        out = out * (torch.arange(t, device=x.device)[None, :] < lengths[:, None]).unsqueeze(-1)
        return out if self.go_forward else reverse_padded(out, lengths)


class AlternatingHighwayLSTM(nn.Module):
    """He et al.'s stack: ``layers`` highway LSTM layers of ``hidden_dim``, directions alternating
    (layer 0 forward). (B, T, input_dim), lengths (B,) -> (B, T, hidden_dim).

    Raises:
        ValueError: fewer than one layer.
    """

    def __init__(self, input_dim: int, hidden_dim: int, layers: int, recurrent_dropout: float = 0.0):
        super().__init__()
        if layers < 1:
            raise ValueError(f"a highway LSTM needs at least one layer, got {layers}")
        self.output_dim = hidden_dim
        self.layers = nn.ModuleList(
            HighwayLSTMLayer(input_dim if k == 0 else hidden_dim, hidden_dim, go_forward=k % 2 == 0,
                             recurrent_dropout=recurrent_dropout) for k in range(layers))

    def forward(self, x: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        for layer in self.layers:
            x = layer(x, lengths)
        return x
