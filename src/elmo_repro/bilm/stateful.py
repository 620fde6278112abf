"""Stateful biLM inference, as the original ELMo runs it (bilm-tf ``BidirectionalLanguageModel``;
allennlp ``ElmoLstm`` via ``_EncoderBase._get_initial_states``/``_update_states``).

The LSTM state is kept per batch row across calls: row b of a batch starts from the state row b
of the previous batch left (forward: after its last token; backward: after its first token).
The stored states grow with the largest batch seen: a larger batch gives its extra rows zero
states, a smaller batch updates only its first rows and leaves the others as they were, and a row
without tokens keeps its state. The reference outputs of the released ELMo test fixtures were made
this way. The rest of the project uses the stateless :meth:`BiLM.layers` (a sentence's vectors
do not depend on what was embedded before it).
"""

from __future__ import annotations

import torch

from .model import BiLM, BiStates
from .token_cache import TokenCache


class StatefulBiLM:
    """Wraps a :class:`BiLM`; call it on consecutive batches.

    Attributes:
        states: the carried (forward, backward) per-layer states, each (h: (R, P), c: (R, cells))
            with R the largest batch size seen so far, or None before the first batch.
    """

    def __init__(self, model: BiLM):
        self.model = model
        self.states: BiStates | None = None

    def reset(self) -> None:
        """Forget the carried states (the next batch starts from zeros)."""
        self.states = None

    @torch.no_grad()
    def __call__(self, char_ids: torch.Tensor, token_cache: TokenCache | None = None) -> torch.Tensor:
        """Layers of one batch: (B, T, 50) -> (B, L + 1, T, 2P), as :meth:`BiLM.layers` but starting
        from the carried states; then carries this batch's final states."""
        batch = char_ids.size(0)
        if self.states is not None and _rows(self.states) < batch:
            self.states = _map(self.states, lambda s: torch.cat(
                [s, s.new_zeros(batch - s.size(0), s.size(1))]))
        initial = None if self.states is None else _map(self.states, lambda s: s[:batch])
        layers, finals = self.model.layers_with_state(char_ids, initial, token_cache)
        if self.states is None:
            self.states = finals
        else:
            self.states = _map2(self.states, finals, lambda old, new: torch.cat([new, old[batch:]]))
        return layers


def _rows(states: BiStates) -> int:
    return states[0][0][0].size(0)


def _map(states: BiStates, fn) -> BiStates:
    return tuple([(fn(h), fn(c)) for h, c in direction] for direction in states)  # type: ignore[return-value]


def _map2(a: BiStates, b: BiStates, fn) -> BiStates:
    return tuple([(fn(ha, hb), fn(ca, cb)) for (ha, ca), (hb, cb) in zip(da, db)]
                 for da, db in zip(a, b))  # type: ignore[return-value]
