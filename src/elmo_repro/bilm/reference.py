"""A deliberately plain reference for the biLM's token layer and recurrent math, to check the fast
code against.

The token layer (:func:`reference_token_layer`) convolves every filter over all 50 character slots
of every position and max-pools, as the formula reads.

Same parameters, same equations as :mod:`.lstm` (gates i, j, f, o; forget bias added at run time;
cell and projection clipping), but written one time step at a time with nothing hoisted, fused or
preallocated: at each step the input-to-gate product ``x_t W_x`` is computed on its own, then

    i, j, f, o = split(x_t W_x + h W_h + B)
    c' = clip(sigmoid(f + forget_bias) * c + sigmoid(i) * tanh(j), +-cell_clip)
    h' = clip((sigmoid(o) * tanh(c')) W_P, +-proj_clip)

The functions take the modules of a :class:`~elmo_repro.bilm.model.BiLM` and use their weights, so
one model gives both the fast and the reference result (and gradients on the same parameters).
Nothing in the pipeline uses this module; tests (``tests/unit/test_reference.py``) and
``benchmarks/bilm_speed.py`` do.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

if TYPE_CHECKING:
    from .char_cnn import CharCNNTokenEmbedder
    from .lstm import LstmCellWithProjection, LstmStack, State
    from .model import BiLM


def reference_token_layer(embedder: "CharCNNTokenEmbedder", char_ids: torch.Tensor) -> torch.Tensor:
    """:meth:`CharCNNTokenEmbedder.forward` over all 50 slots: (..., 50) char ids -> (..., P)."""
    lead = char_ids.shape[:-1]
    chars = embedder.char_embed(char_ids.reshape(-1, char_ids.size(-1))).transpose(1, 2)   # (N, 16, 50)
    pooled = torch.cat([conv(chars).max(dim=-1).values for conv in embedder.convs], dim=-1)
    token = embedder.projection(embedder.highway(embedder.activation(pooled)))
    return token.reshape(*lead, -1)


def reference_cell(cell: "LstmCellWithProjection", inputs: torch.Tensor,
                   state: "State | None" = None) -> tuple[torch.Tensor, "State"]:
    """One LSTM-with-projection layer over (B, T, input_dim), step by step; returns (B, T, P) and
    the final (h, c)."""
    batch, steps, _ = inputs.shape
    if state is None:
        h = inputs.new_zeros(batch, cell.projection_dim)
        c = inputs.new_zeros(batch, cell.cell_dim)
    else:
        h, c = state
    outputs = []
    for t in range(steps):
        gates = inputs[:, t] @ cell.input_weight + h @ cell.state_weight + cell.bias
        i = gates[:, 0 * cell.cell_dim:1 * cell.cell_dim]
        j = gates[:, 1 * cell.cell_dim:2 * cell.cell_dim]
        f = gates[:, 2 * cell.cell_dim:3 * cell.cell_dim]
        o = gates[:, 3 * cell.cell_dim:4 * cell.cell_dim]
        c = torch.sigmoid(f + cell.forget_bias) * c + torch.sigmoid(i) * torch.tanh(j)
        if cell.cell_clip:
            c = torch.clamp(c, -cell.cell_clip, cell.cell_clip)
        h = (torch.sigmoid(o) * torch.tanh(c)) @ cell.projection
        if cell.proj_clip:
            h = torch.clamp(h, -cell.proj_clip, cell.proj_clip)
        outputs.append(h)
    return torch.stack(outputs, dim=1), (h, c)


def reference_stack(stack: "LstmStack", inputs: torch.Tensor, states: "list[State] | None" = None
                    ) -> tuple[list[torch.Tensor], list["State"]]:
    """The layers of one direction (dropout on each layer's input, residual links after the first
    layer), as :class:`~elmo_repro.bilm.lstm.LstmStack`."""
    outputs, finals = [], []
    x = inputs
    for k, layer in enumerate(stack.layers):
        x_in = stack.dropout(x)
        out, final = reference_cell(layer, x_in, None if states is None else states[k])
        if stack.use_skip_connections and k > 0:
            out = out + x_in
        outputs.append(out)
        finals.append(final)
        x = out
    return outputs, finals


def reference_direction_hidden(model: "BiLM", token_embeddings: torch.Tensor, backward: bool,
                               states: "list[State] | None") -> tuple[torch.Tensor, list["State"]]:
    """:meth:`BiLM.direction_hidden` (training) with the reference layers."""
    stack = model.backward_lstm if backward else model.forward_lstm
    outputs, finals = reference_stack(stack, token_embeddings, states)
    return model.output_dropout(outputs[-1]), finals


def reference_layers(model: "BiLM", char_ids: torch.Tensor) -> torch.Tensor:
    """:meth:`BiLM.layers` (stateless inference), straightforwardly: the char CNN over every
    position, and each sentence reversed on its own for the backward LM.

    Args:
        char_ids: (B, T, 50) char ids; all-zero rows are padding after a sentence's last token.

    Returns:
        (B, L + 1, T, 2P), zero at padded positions.
    """
    mask = (char_ids > 0).any(-1)                                              # (B, T)
    lengths = [int(n) for n in mask.sum(-1)]
    token = reference_token_layer(model.token_embedder, char_ids) * mask[..., None]   # (B, T, P)
    fwd, _ = reference_stack(model.forward_lstm, token)
    rev = token.clone()
    for b, n in enumerate(lengths):
        rev[b, :n] = token[b, :n].flip(0)
    bwd_rev, _ = reference_stack(model.backward_lstm, rev)
    bwd = []
    for layer in bwd_rev:
        back = layer.clone()
        for b, n in enumerate(lengths):
            back[b, :n] = layer[b, :n].flip(0)
        bwd.append(back)
    layers = [torch.cat([token, token], dim=-1)]
    layers += [torch.cat([f, b], dim=-1) for f, b in zip(fwd, bwd)]
    return torch.stack(layers, dim=1) * mask[:, None, :, None]
