"""The biLM (paper §3.1, §3.4): a shared char-CNN token layer, separate forward and backward LSTM
stacks, and one softmax shared by both directions.

Its configuration is bilm-tf's options.json layout (``char_cnn``, ``lstm``, ``dropout``,
``n_tokens_vocab``), so a trained model exports to the original format.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch
from torch import nn

from ..data.character_ids import MAX_CHARS, N_CHARACTERS
from .char_cnn import CharCNNTokenEmbedder, conv_output_check
from .lstm import LstmStack, State, run_stacks
from .sampled_softmax import SoftmaxLayer

if TYPE_CHECKING:
    from .token_cache import TokenCache

BiStates = tuple[list[State], list[State]]  # (forward, backward) LSTM state per layer


@dataclass(frozen=True)
class BiLMConfig:
    """Hyper-parameters in bilm-tf's options.json terms (paper values in brackets)."""

    filters: tuple[tuple[int, int], ...]            # [[1,32],[2,32],[3,64],[4,128],[5,256],[6,512],[7,1024]]
    char_dim: int = 16
    n_highway: int = 2
    activation: str = "relu"
    n_characters: int = N_CHARACTERS
    max_characters_per_token: int = MAX_CHARS
    cell_dim: int = 4096
    projection_dim: int = 512
    n_layers: int = 2
    cell_clip: float | None = 3.0
    proj_clip: float | None = 3.0
    use_skip_connections: bool = True
    dropout: float = 0.1
    n_tokens_vocab: int = 0                         # 0: no softmax (feature extraction only)

    @classmethod
    def from_options(cls, options: dict[str, Any], n_tokens_vocab: int | None = None) -> "BiLMConfig":
        """From an options.json-style dict (the ``bilm`` params section has the same layout)."""
        cnn, lstm = options["char_cnn"], options["lstm"]
        return cls(
            filters=tuple((int(w), int(n)) for w, n in cnn["filters"]),
            char_dim=int(cnn["embedding"]["dim"]), n_highway=int(cnn["n_highway"]),
            activation=cnn.get("activation", "relu"),
            n_characters=int(cnn.get("n_characters", N_CHARACTERS)),
            max_characters_per_token=int(cnn.get("max_characters_per_token", MAX_CHARS)),
            cell_dim=int(lstm["dim"]), projection_dim=int(lstm["projection_dim"]),
            n_layers=int(lstm["n_layers"]), cell_clip=lstm.get("cell_clip"),
            proj_clip=lstm.get("proj_clip"), use_skip_connections=bool(lstm.get("use_skip_connections")),
            dropout=float(options.get("dropout", 0.0)),
            n_tokens_vocab=int(options.get("n_tokens_vocab", 0) if n_tokens_vocab is None else n_tokens_vocab))

    def to_options(self) -> dict[str, Any]:
        """bilm-tf options.json."""
        return {
            "char_cnn": {"activation": self.activation, "embedding": {"dim": self.char_dim},
                         "filters": [list(f) for f in self.filters], "n_highway": self.n_highway,
                         "n_characters": self.n_characters,
                         "max_characters_per_token": self.max_characters_per_token},
            "lstm": {"dim": self.cell_dim, "projection_dim": self.projection_dim,
                     "n_layers": self.n_layers, "cell_clip": self.cell_clip, "proj_clip": self.proj_clip,
                     "use_skip_connections": self.use_skip_connections},
            "dropout": self.dropout, "n_tokens_vocab": self.n_tokens_vocab,
        }


class BiLM(nn.Module):
    """Character-based biLM.

    Layers for ELMo (paper §3.2): layer 0 is the token layer x_k (duplicated to 2·projection_dim,
    as the original does), layer j ≥ 1 is [forward h_{k,j}; backward h_{k,j}].
    """

    def __init__(self, config: BiLMConfig):
        super().__init__()
        conv_output_check([list(f) for f in config.filters], config.max_characters_per_token)
        self.config = config
        p = config.projection_dim
        self.token_embedder = CharCNNTokenEmbedder(config.n_characters, config.char_dim,
                                                   [list(f) for f in config.filters], config.n_highway,
                                                   p, config.activation)

        def stack() -> LstmStack:
            return LstmStack(p, config.cell_dim, p, config.n_layers, config.cell_clip, config.proj_clip,
                             config.use_skip_connections, config.dropout)

        self.forward_lstm, self.backward_lstm = stack(), stack()
        self.output_dropout = nn.Dropout(config.dropout)
        self.softmax = SoftmaxLayer(config.n_tokens_vocab, p) if config.n_tokens_vocab else None

    @property
    def n_layers(self) -> int:
        """Number of ELMo layers, L + 1."""
        return self.config.n_layers + 1

    @property
    def output_dim(self) -> int:
        return 2 * self.config.projection_dim

    # ---- training: one direction at a time, state carried across batches -------------------
    def direction_hidden(self, token_embeddings: torch.Tensor, backward: bool,
                         states: list[State] | None) -> tuple[torch.Tensor, list[State]]:
        """Top-layer LSTM output of one direction over an already-oriented stream.

        Args:
            token_embeddings: (B, T, P) token layer of the stream (for the backward LM the stream
                is already reversed, so both directions run left to right).
            backward: which LSTM stack.
            states: carried state per layer, or None for zeros.

        Returns:
            (B, T, P) top-layer output (after output dropout) and the final states.
        """
        lstm = self.backward_lstm if backward else self.forward_lstm
        outputs, finals = lstm(token_embeddings, states)
        return self.output_dropout(outputs[-1]), finals

    # ---- inference: both directions over the same padded sentences ----------------------------
    def layers(self, char_ids: torch.Tensor, token_cache: "TokenCache | None" = None,
               bf16: bool = False) -> torch.Tensor:
        """All biLM layers for a padded batch, each sentence computed independently (zero state).

        Args:
            char_ids: (B, T, 50) shifted char ids including ``<S>``/``</S>``; all-zero rows are
                padding and must come after a sentence's last token.
            token_cache: optional precomputed token layer (same values; in-vocabulary words skip
                the char CNN).
            bf16: run under ``torch.autocast(bfloat16)`` on the batch's device (meant for CUDA
                inference: matmuls and convolutions in bfloat16, about 3 significant digits, so
                the vectors differ from the float32 default at ~1e-2). Off by default; the
                result is float32 either way.

        Returns:
            (B, L + 1, T, 2 * projection_dim); rows at padded positions are zero.
        """
        if bf16:
            with torch.autocast(char_ids.device.type, dtype=torch.bfloat16):
                return self._layers(char_ids, token_cache, None, stateful=False)[0].float()
        return self._layers(char_ids, token_cache, None, stateful=False)[0]

    def layers_with_state(self, char_ids: torch.Tensor, states: BiStates | None,
                          token_cache: "TokenCache | None" = None) -> tuple[torch.Tensor, BiStates]:
        """Like :meth:`layers`, but starting from ``states`` and returning each row's final states
        (bilm-tf/allennlp stateful inference; see :class:`~elmo_repro.bilm.stateful.StatefulBiLM`).

        Args:
            char_ids: (B, T, 50) as for :meth:`layers`.
            states: (forward, backward) per-layer (h: (B, P), c: (B, cells)), or None for zeros.
                The forward state continues left to right; the backward state enters at each row's
                last token.
            token_cache: as for :meth:`layers`.

        Returns:
            layers (B, L + 1, T, 2P) and the new states: forward after each row's last token,
            backward after its first. A row with no tokens keeps its states unchanged.
        """
        return self._layers(char_ids, token_cache, states, stateful=True)

    def _layers(self, char_ids: torch.Tensor, token_cache: "TokenCache | None", states: BiStates | None,
                stateful: bool) -> tuple[torch.Tensor, BiStates]:
        mask = (char_ids > 0).any(-1)                                          # (B, T)
        lengths = mask.sum(-1)                                                 # (B,)
        embed = self.token_embedder.embed_unique if token_cache is None else token_cache
        token = embed(char_ids) * mask[..., None]                              # (B, T, P)
        step_mask = mask if stateful else None                                 # hold state at padding
        # both directions step together; the backward LM reads each row reversed in place
        both = torch.stack([token, _reverse_padded(token, lengths)])           # (2, B, T, P)
        outputs, (fwd_final, bwd_final) = run_stacks(
            [self.forward_lstm, self.backward_lstm], both, states, step_mask)
        fwd = [out[0] for out in outputs]
        bwd = [_reverse_padded(out[1], lengths) for out in outputs]
        layers = [torch.cat([token, token], dim=-1)]
        layers += [torch.cat([f, b], dim=-1) for f, b in zip(fwd, bwd)]
        return torch.stack(layers, dim=1) * mask[:, None, :, None], (fwd_final, bwd_final)


def _reverse_padded(x: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    """Reverse each row's first ``lengths[b]`` steps, leaving padding at the end: (B, T, D)."""
    steps = x.size(1)
    idx = torch.arange(steps, device=x.device)[None, :].expand(x.size(0), -1)  # (B, T)
    rev = lengths[:, None] - 1 - idx
    rev = torch.where(rev >= 0, rev, idx)                                      # padding stays put
    return x.gather(1, rev[..., None].expand_as(x))
