"""LSTM with a projection layer and clipping (Sak et al. 2014; bilm-tf's ``LSTMCell`` with
``num_proj``, ``cell_clip`` and ``proj_clip``), and the per-direction stack with residual links.

One step, with W = [W_x; W_h] of shape (input + projection, 4 * cells) and gates in TensorFlow's
order i, j, f, o (j is the candidate):

    i, j, f, o = split(x W_x + h W_h + B)
    c' = clip(sigmoid(f + forget_bias) * c + sigmoid(i) * tanh(j), +-cell_clip)
    h' = clip((sigmoid(o) * tanh(c')) W_P, +-proj_clip)

``forget_bias`` (1.0) is added at run time and not stored in B, as the original does, so the
weights export to bilm-tf's ``W_0``/``B``/``W_P_0`` unchanged.

How it runs fast (:func:`run_cells`): the input-to-gate products x W_x + B of a chunk of time
steps are one matrix product; the gate columns are reordered to [i, f, o, j] at run time so one
sigmoid covers three gates; the forget bias is folded into that product's bias; and several
independent cells (the forward and the backward LM at inference) step together as one batched
product per time step, which halves the number of small operations the Python loop issues.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

State = tuple[torch.Tensor, torch.Tensor]  # (h: (B, projection_dim), c: (B, cell_dim))
TIME_CHUNK = 64   # steps whose input-to-gate products are computed at once (bounds their memory)
_CACHE = "_run_time_weights_cache"   # (key, stacked weights) on the first cell of a run_cells group


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

    def run_time_weights(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """W_x (input, 4C), W_h (P, 4C) and bias (4C,) with the gate columns in the run-time order
        [i, f, o, j] and ``forget_bias`` added to the f columns of the bias. Differentiable: the
        gradients reach the stored parameters."""
        c = self.cell_dim
        device = self.bias.device
        order = torch.cat([torch.arange(0, c, device=device), torch.arange(2 * c, 4 * c, device=device),
                           torch.arange(c, 2 * c, device=device)])
        bias = self.bias.index_select(0, order)
        bias = torch.cat([bias[:c], bias[c:2 * c] + self.forget_bias, bias[2 * c:]])
        return self.input_weight.index_select(1, order), self.state_weight.index_select(1, order), bias

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
        states = None if state is None else (state[0][None], state[1][None])
        outputs, (h, c) = run_cells([self], inputs[None], states, mask)
        return outputs[0], (h[0], c[0])


def stacked_run_time_weights(cells: Sequence[LstmCellWithProjection]
                             ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """The D cells' run-time weights stacked for :func:`run_cells`: W_x (D, input, 4C), W_h (D, P, 4C),
    bias (D, 4C) in the gate order [i, f, o, j] with the forget bias added, and W_P (D, C, P).

    Reordering copies every LSTM matrix (about 290 MB for the paper's four cells), so when no
    gradient can reach the weights (inference: autograd off, or frozen parameters) the result is
    computed once and kept on the first cell (one entry), keyed by the cells and the identity and in-place
    version counter of each parameter: ``load_state_dict``, an optimizer step, ``.to(device)`` or
    any other write to a weight makes the next call rebuild it. With gradients it is rebuilt on
    every call, so that the backward pass reaches the stored parameters.
    """
    params = [p for c in cells for p in (c.input_weight, c.state_weight, c.bias, c.projection)]
    if torch.is_grad_enabled() and any(p.requires_grad for p in params):
        cells[0].__dict__.pop(_CACHE, None)          # training: do not hold a stale copy meanwhile
        return _stack_run_time_weights(cells)
    key = (tuple(id(c) for c in cells), tuple((p.data_ptr(), p.dtype, p.device, p._version) for p in params))
    cached = cells[0].__dict__.get(_CACHE)
    if cached is None or cached[0] != key:
        with torch.no_grad():
            cached = (key, _stack_run_time_weights(cells))
        cells[0].__dict__[_CACHE] = cached           # a plain attribute: not in the state dict
    return cached[1]


def _stack_run_time_weights(cells: Sequence[LstmCellWithProjection]
                            ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    w_x, w_h, bias = (torch.stack(t) for t in zip(*(c.run_time_weights() for c in cells)))
    return w_x, w_h, bias, torch.stack([c.projection for c in cells])


def run_cells(cells: Sequence[LstmCellWithProjection], inputs: torch.Tensor,
              state: State | None = None, mask: torch.Tensor | None = None
              ) -> tuple[torch.Tensor, State]:
    """Run D independent cells of the same shape and clipping side by side, each over its own
    sequence (the math of :class:`LstmCellWithProjection`, one batched product per step).

    Args:
        cells: D cells (D = 2 runs the forward and the backward LM of one layer together).
        inputs: (D, B, T, input_dim), row d for cell d.
        state: initial (h (D, B, P), c (D, B, C)) or None for zeros.
        mask: optional (B, T) bool shared by the D sequences; where False the state is held.

    Returns:
        outputs (D, B, T, P) and the final (h (D, B, P), c (D, B, C)).

    Raises:
        ValueError: if the cells differ in size or clipping.
    """
    first = cells[0]
    shape = (first.input_dim, first.cell_dim, first.projection_dim, first.cell_clip, first.proj_clip)
    if any((c.input_dim, c.cell_dim, c.projection_dim, c.cell_clip, c.proj_clip) != shape for c in cells):
        raise ValueError("run_cells needs cells of the same sizes and clipping")
    n, batch, steps, _ = inputs.shape
    cells_dim, cell_clip, proj_clip = first.cell_dim, first.cell_clip, first.proj_clip
    w_x, w_h, bias, projection = stacked_run_time_weights(cells)
    if state is None:
        h = inputs.new_zeros(n, batch, first.projection_dim)
        c = inputs.new_zeros(n, batch, cells_dim)
    else:
        h, c = state
    outputs = []
    for start in range(0, steps, TIME_CHUNK):
        chunk = inputs[:, :, start:start + TIME_CHUNK]
        x_gates = torch.baddbmm(bias[:, None], chunk.reshape(n, -1, first.input_dim), w_x)
        # unbind, not x_gates[:, :, t]: the backward of T selects would materialise T zero-padded
        # gradients of the whole chunk; unbind's backward stacks the slices once
        for t, x_t in enumerate(x_gates.view(n, batch, chunk.size(2), -1).unbind(2), start):
            gates = torch.baddbmm(x_t, h, w_h)                                 # (D, B, 4C)
            # split, not slicing: a slice's backward zero-fills a full-size gradient per step
            ifo, j = gates.split((3 * cells_dim, cells_dim), dim=-1)
            i, f, o = torch.sigmoid(ifo).split(cells_dim, dim=-1)
            new_c = torch.addcmul(f * c, i, torch.tanh(j))
            if cell_clip:
                new_c = new_c.clamp(-cell_clip, cell_clip)
            new_h = torch.bmm(o * torch.tanh(new_c), projection)               # (D, B, P)
            if proj_clip:
                new_h = new_h.clamp(-proj_clip, proj_clip)
            if mask is not None:
                keep = mask[None, :, t, None]                                  # (1, B, 1)
                new_h, new_c = torch.where(keep, new_h, h), torch.where(keep, new_c, c)
            h, c = new_h, new_c
            outputs.append(h)
    if not outputs:
        return inputs.new_zeros(n, batch, 0, first.projection_dim), (h, c)
    return torch.stack(outputs, dim=2), (h, c)


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
        outputs, finals = run_stacks([self], inputs[None], None if states is None else [states], mask)
        return [out[0] for out in outputs], finals[0]


def run_stacks(stacks: Sequence[LstmStack], inputs: torch.Tensor,
               states: Sequence[list[State] | None] | None = None, mask: torch.Tensor | None = None
               ) -> tuple[list[torch.Tensor], list[list[State]]]:
    """Run D stacks of the same shape side by side, layer by layer (:func:`run_cells`).

    Args:
        stacks: D stacks (the forward and the backward LM for D = 2).
        inputs: (D, B, T, input_dim), row d for stack d.
        states: None, or per stack None or its per-layer (h (B, P), c (B, C)).
        mask: optional (B, T) bool shared by the D sequences (see :func:`run_cells`).

    Returns:
        per layer the outputs (D, B, T, P), and per stack its per-layer final (h, c).

    Raises:
        ValueError: if the stacks differ in depth or residual links.
    """
    first = stacks[0]
    if any((len(s.layers), s.use_skip_connections) != (len(first.layers), first.use_skip_connections)
           for s in stacks):
        raise ValueError("run_stacks needs stacks of the same depth and residual links")
    outputs: list[torch.Tensor] = []
    finals: list[list[State]] = [[] for _ in stacks]
    x = inputs
    for k in range(len(first.layers)):
        # each direction draws its own dropout mask, in the order of the stacks
        x_in = (torch.stack([s.dropout(x_d) for s, x_d in zip(stacks, x.unbind(0))])
                if any(s.dropout.training and s.dropout.p > 0 for s in stacks) else x)
        given = [None if states is None or states[d] is None else states[d][k] for d in range(len(stacks))]
        if all(g is None for g in given):
            layer_state = None
        else:
            zeros = first.layers[k]
            layer_state = tuple(torch.stack([
                g[part] if g is not None else x.new_zeros(x.size(1), (zeros.projection_dim, zeros.cell_dim)[part])
                for g in given]) for part in (0, 1))
        out, (h, c) = run_cells([s.layers[k] for s in stacks], x_in, layer_state, mask)
        if first.use_skip_connections and k > 0:
            out = out + x_in
        outputs.append(out)
        for d in range(len(stacks)):
            finals[d].append((h[d], c[d]))
        x = out
    return outputs, finals
