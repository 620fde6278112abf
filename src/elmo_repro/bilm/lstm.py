"""LSTM with a projection layer and clipping (Sak et al. 2014; bilm-tf's ``LSTMCell`` with
``num_proj``, ``cell_clip`` and ``proj_clip``), and the per-direction stack with residual links.

One step, with W = [W_x; W_h] of shape (input + projection, 4 * cells) and gates in TensorFlow's
order i, j, f, o (j is the candidate):

    i, j, f, o = split(x W_x + h W_h + B)
    c' = clip(sigmoid(f + forget_bias) * c + sigmoid(i) * tanh(j), +-cell_clip)
    h' = clip((sigmoid(o) * tanh(c')) W_P, +-proj_clip)

``forget_bias`` (1.0) is added at run time and not stored in B, as the original does, so the
weights export to bilm-tf's ``W_0``/``B``/``W_P_0`` unchanged.
"""

from __future__ import annotations

import torch
from torch import nn

State = tuple[torch.Tensor, torch.Tensor]  # (h: (B, projection_dim), c: (B, cell_dim))


class LstmCellWithProjection(nn.Module):
    """One LSTM layer of one direction.

    Args:
        input_dim: size of x.
        cell_dim: LSTM cells (4096 in the paper).
        projection_dim: size of the projected output h (512 in the paper).
        cell_clip, proj_clip: clip values (3 in the paper); None or 0 disables.
        forget_bias: added to the forget gate at run time.
    """

    def __init__(self, input_dim: int, cell_dim: int, projection_dim: int,
                 cell_clip: float | None = 3.0, proj_clip: float | None = 3.0, forget_bias: float = 1.0):
        super().__init__()
        self.input_dim, self.cell_dim, self.projection_dim = input_dim, cell_dim, projection_dim
        self.cell_clip, self.proj_clip, self.forget_bias = cell_clip or None, proj_clip or None, forget_bias
        self.input_weight = nn.Parameter(torch.empty(input_dim, 4 * cell_dim))       # W_x
        self.state_weight = nn.Parameter(torch.empty(projection_dim, 4 * cell_dim))  # W_h
        self.bias = nn.Parameter(torch.zeros(4 * cell_dim))                           # B
        self.projection = nn.Parameter(torch.empty(cell_dim, projection_dim))        # W_P
        fan = input_dim + projection_dim
        bound = (6.0 / (fan + 4 * cell_dim)) ** 0.5  # Glorot uniform over W_0, as TensorFlow
        nn.init.uniform_(self.input_weight, -bound, bound)
        nn.init.uniform_(self.state_weight, -bound, bound)
        nn.init.xavier_uniform_(self.projection)

    def zero_state(self, batch_size: int, like: torch.Tensor) -> State:
        return (like.new_zeros(batch_size, self.projection_dim), like.new_zeros(batch_size, self.cell_dim))

    def step(self, x_gates: torch.Tensor, state: State) -> State:
        """One time step. ``x_gates`` = x W_x + B, shape (B, 4 * cells); returns the new (h, c)."""
        h, c = state
        gates = x_gates + h @ self.state_weight                               # (B, 4C)
        i, j, f, o = gates.chunk(4, dim=-1)
        c = torch.sigmoid(f + self.forget_bias) * c + torch.sigmoid(i) * torch.tanh(j)
        if self.cell_clip:
            c = c.clamp(-self.cell_clip, self.cell_clip)
        h = (torch.sigmoid(o) * torch.tanh(c)) @ self.projection              # (B, P)
        if self.proj_clip:
            h = h.clamp(-self.proj_clip, self.proj_clip)
        return h, c

    def forward(self, inputs: torch.Tensor, state: State | None = None,
                mask: torch.Tensor | None = None) -> tuple[torch.Tensor, State]:
        """Run over a sequence left to right.

        Args:
            inputs: (B, T, input_dim).
            state: initial (h, c) or None for zeros.
            mask: optional (B, T) bool; where False the step is skipped and the state held, so the
                final state is each row's state after its last real step (allennlp's packed
                sequences; used by stateful inference). None: every step advances.

        Returns:
            outputs (B, T, projection_dim) and the final state.
        """
        batch, steps, _ = inputs.shape
        if state is None:
            state = self.zero_state(batch, inputs)
        x_gates = torch.addmm(self.bias, inputs.reshape(-1, self.input_dim), self.input_weight)
        x_gates = x_gates.view(batch, steps, -1)                              # (B, T, 4C), one matmul
        outputs = []
        # unbind, not x_gates[:, t]: the backward of T selects materialises T zero-padded
        # (B, T, 4C) gradients (quadratic in T); unbind's backward stacks the T slices once
        for t, x_t in enumerate(x_gates.unbind(1)):
            new_state = self.step(x_t, state)
            if mask is not None:
                keep = mask[:, t, None]                                       # (B, 1)
                new_state = (torch.where(keep, new_state[0], state[0]),
                             torch.where(keep, new_state[1], state[1]))
            state = new_state
            outputs.append(state[0])
        return torch.stack(outputs, dim=1), state


class LstmStack(nn.Module):
    """The LSTM layers of one direction; with ``use_skip_connections`` every layer after the first
    adds its input to its output (bilm-tf's ResidualWrapper). Dropout is applied to each layer's
    input during training (bilm-tf's DropoutWrapper ``input_keep_prob``).

    Returns the output of every layer, each (B, T, projection_dim).
    """

    def __init__(self, input_dim: int, cell_dim: int, projection_dim: int, n_layers: int,
                 cell_clip: float | None, proj_clip: float | None, use_skip_connections: bool,
                 dropout: float = 0.0):
        super().__init__()
        self.use_skip_connections = use_skip_connections
        self.layers = nn.ModuleList(
            LstmCellWithProjection(input_dim if k == 0 else projection_dim, cell_dim, projection_dim,
                                   cell_clip, proj_clip)
            for k in range(n_layers))
        self.dropout = nn.Dropout(dropout)

    def forward(self, inputs: torch.Tensor, states: list[State] | None = None,
                mask: torch.Tensor | None = None) -> tuple[list[torch.Tensor], list[State]]:
        """(B, T, input_dim) -> ([n_layers x (B, T, P)], final states per layer).

        ``mask`` (B, T) bool, optional: hold the state at padded steps (see
        :meth:`LstmCellWithProjection.forward`)."""
        outputs, finals = [], []
        x = inputs
        for k, layer in enumerate(self.layers):
            x_in = self.dropout(x)
            out, final = layer(x_in, None if states is None else states[k], mask)
            if self.use_skip_connections and k > 0:
                out = out + x_in
            outputs.append(out)
            finals.append(final)
            x = out
        return outputs, finals
