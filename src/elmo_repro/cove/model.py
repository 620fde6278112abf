"""The CoVe machine translation model (McCann et al. 2017, "Learned in Translation", §3).

Encoder, the MT-LSTM: fixed word vectors (GloVe in the paper; here the pipeline's own static
vectors, :mod:`elmo_repro.vectors`) -> a two-layer bidirectional LSTM. CoVe(w) is its output;
:meth:`MTLSTM.layers` returns both layers, the "CoVe layer 1 / layer 2" of the ELMo paper's
Tables 5 and 6.

Decoder, as McCann et al. §3 writes it (Luong-style attention with input feeding):

* ``h_t = LSTM([z_{t-1}; h~_{t-1}], h_{t-1})``, a two-layer unidirectional LSTM over the previous
  target embedding and the previous context-adjusted state;
* ``alpha_t = softmax(H (W1 h_t + b1))`` over the encoder states ``H`` (padding masked);
* ``h~_t = tanh(W2 [H^T alpha_t; h_t] + b2)``;
* ``p(y_t | ...) = softmax(W_out h~_t + b_out)``.

Not stated in the paper, taken from OpenNMT-py (whose bidirectional encoder McCann et al.'s setup
follows): the decoder's hidden size is the encoder's two directions together, and its initial
state is, per layer, the concatenated final forward and backward encoder states. Dropout is
applied to each LSTM's input and to ``h~_t`` before the output layer.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

PAD_ID, UNK_ID, BOS_ID, EOS_ID = 0, 1, 2, 3          # target vocabulary ids (data.multi30k order)


@dataclass(frozen=True)
class CoVeConfig:
    hidden: int = 300             # per direction of the encoder (CoVe: 300, so 600-d vectors)
    layers: int = 2               # encoder and decoder LSTM layers (CoVe: 2)
    target_dim: int = 300         # target word embedding
    dropout: float = 0.2


class MTLSTM(nn.Module):
    """The encoder: frozen word vectors -> two bidirectional LSTM layers (CoVe).

    Args:
        vectors: ``(V, D)`` float tensor, the fixed input vectors; row 0 is the padding and unknown
            word's (zeros).
    """

    def __init__(self, vectors: torch.Tensor, config: CoVeConfig):
        super().__init__()
        self.embedding = nn.Embedding.from_pretrained(vectors.float(), freeze=True, padding_idx=0)
        sizes = [vectors.shape[1]] + [2 * config.hidden] * (config.layers - 1)
        self.lstms = nn.ModuleList(nn.LSTM(size, config.hidden, batch_first=True, bidirectional=True)
                                   for size in sizes)
        self.dropout = nn.Dropout(config.dropout)

    def layers(self, word_ids: torch.Tensor, lengths: torch.Tensor
               ) -> tuple[list[torch.Tensor], list[tuple[torch.Tensor, torch.Tensor]]]:
        """Every layer's outputs and final states.

        Args:
            word_ids: ``(batch, time)`` input vector ids, 0 at padding.
            lengths: ``(batch,)`` int64, the sentences' lengths (at least 1).

        Returns:
            ``(outputs, finals)``: ``outputs[l]`` is ``(batch, time, 2 * hidden)`` (zeros at
            padding) and ``finals[l]`` the ``(h, c)`` of layer ``l``, each ``(2, batch, hidden)``
            (forward, backward).
        """
        x = self.embedding(word_ids)
        outputs, finals = [], []
        for lstm in self.lstms:
            packed = pack_padded_sequence(self.dropout(x), lengths.cpu(), batch_first=True, enforce_sorted=False)
            out, final = lstm(packed)
            x, _ = pad_packed_sequence(out, batch_first=True, total_length=word_ids.shape[1])
            outputs.append(x)
            finals.append(final)
        return outputs, finals


class AttentionalDecoder(nn.Module):
    """McCann et al.'s decoder (module docstring); hidden size ``2 * config.hidden``."""

    def __init__(self, n_target: int, config: CoVeConfig):
        super().__init__()
        size = 2 * config.hidden
        self.embedding = nn.Embedding(n_target, config.target_dim, padding_idx=PAD_ID)
        self.cells = nn.ModuleList(nn.LSTMCell(config.target_dim + size if i == 0 else size, size)
                                   for i in range(config.layers))
        self.w1 = nn.Linear(size, size)
        self.w2 = nn.Linear(2 * size, size)
        self.out = nn.Linear(size, n_target)
        self.dropout = nn.Dropout(config.dropout)

    def initial_state(self, finals, batch: int):
        """Per layer ``(h, c)`` from the encoder's final states (forward and backward concatenated),
        and a zero ``h~_0``."""
        state = [(torch.cat([h[0], h[1]], -1), torch.cat([c[0], c[1]], -1)) for h, c in finals]
        return state, finals[0][0].new_zeros(batch, 2 * finals[0][0].shape[-1])

    def log_probs(self, context_state: torch.Tensor) -> torch.Tensor:
        """``(..., size)`` ``h~_t`` -> ``(..., n_target)`` log p(next word)."""
        return torch.log_softmax(self.out(self.dropout(context_state)), dim=-1)

    def step(self, previous: torch.Tensor, state, context_state: torch.Tensor, memory: torch.Tensor,
             mask: torch.Tensor):
        """One decoder step.

        Args:
            previous: ``(batch,)`` the previous target ids.
            state: per layer ``(h, c)``, each ``(batch, size)``.
            context_state: ``(batch, size)``, ``h~_{t-1}``.
            memory: ``(batch, source time, size)``, the encoder's top layer ``H``.
            mask: ``(batch, source time)`` bool, True at real source tokens.

        Returns:
            ``(state, h~_t (batch, size), alpha_t (batch, source time))``; :meth:`log_probs` of
            ``h~_t`` is the next word's distribution.
        """
        x = torch.cat([self.embedding(previous), context_state], -1)
        new_state = []
        for cell, (h, c) in zip(self.cells, state):
            h, c = cell(self.dropout(x), (h, c))
            new_state.append((h, c))
            x = h
        scores = torch.bmm(memory, self.w1(x).unsqueeze(-1)).squeeze(-1)            # H (W1 h_t + b1)
        alpha = torch.softmax(scores.masked_fill(~mask, float("-inf")), dim=-1)
        attended = torch.bmm(alpha.unsqueeze(1), memory).squeeze(1)                  # H^T alpha_t
        context_state = torch.tanh(self.w2(torch.cat([attended, x], -1)))
        return new_state, context_state, alpha


class CoVeTranslator(nn.Module):
    """The MT-LSTM encoder and the attentional decoder (English word vectors -> German words)."""

    def __init__(self, vectors: torch.Tensor, n_target: int, config: CoVeConfig):
        super().__init__()
        self.config = config
        self.encoder = MTLSTM(vectors, config)
        self.decoder = AttentionalDecoder(n_target, config)

    def encode(self, source: torch.Tensor, lengths: torch.Tensor):
        outputs, finals = self.encoder.layers(source, lengths)
        mask = torch.arange(source.shape[1], device=source.device)[None, :] < lengths[:, None]
        return outputs[-1], mask, finals

    def forward(self, source: torch.Tensor, lengths: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        """Teacher-forced token log-likelihood loss.

        Args:
            source: ``(batch, source time)`` vector ids; lengths ``(batch,)``.
            target: ``(batch, target time)`` ids ``<s> w_1 .. w_n </s>`` then ``PAD_ID``.

        Returns:
            ``(batch, target time - 1)`` negative log-likelihood of each next word (0 at padding).
        """
        memory, mask, finals = self.encode(source, lengths)
        state, context_state = self.decoder.initial_state(finals, source.shape[0])
        context_states = []
        for t in range(target.shape[1] - 1):
            state, context_state, _ = self.decoder.step(target[:, t], state, context_state, memory, mask)
            context_states.append(context_state)
        # the output layer once over all steps: one large matmul instead of one per step
        log_probs = self.decoder.log_probs(torch.stack(context_states, 1))
        gold = target[:, 1:]
        return -log_probs.gather(2, gold[..., None]).squeeze(2) * (gold != PAD_ID)

    @torch.no_grad()
    def greedy(self, source: torch.Tensor, lengths: torch.Tensor, max_length: int) -> list[list[int]]:
        """The most probable next word at every step, until ``</s>`` or ``max_length`` words.

        Returns:
            per sentence the target ids without ``<s>`` and ``</s>``.
        """
        memory, mask, finals = self.encode(source, lengths)
        batch = source.shape[0]
        state, context_state = self.decoder.initial_state(finals, batch)
        previous = torch.full((batch,), BOS_ID, dtype=torch.long, device=source.device)
        outputs, done = [[] for _ in range(batch)], [False] * batch
        for _ in range(max_length):
            state, context_state, _ = self.decoder.step(previous, state, context_state, memory, mask)
            previous = self.decoder.log_probs(context_state).argmax(-1)
            for i, word in enumerate(previous.tolist()):     # one copy to the host per step
                if not done[i]:
                    if word == EOS_ID:
                        done[i] = True
                    else:
                        outputs[i].append(word)
            if all(done):
                break
        return outputs

    @torch.no_grad()
    def beam(self, source: torch.Tensor, length: int, beam_size: int, max_length: int) -> list[int]:
        """Beam search for one sentence (``source`` ``(1, time)``): the finished hypothesis of the
        highest total log-probability (no length penalty, as OpenNMT-py's default). Stops when the
        best finished hypothesis scores at least the best unfinished one (scores only fall).

        Returns:
            the target ids without ``<s>`` and ``</s>``.
        """
        device = source.device
        memory, mask, finals = self.encode(source, torch.tensor([length], device=device))
        state, context_state = self.decoder.initial_state(finals, 1)
        hypotheses = [([], 0.0)]
        finished: list[tuple[list[int], float]] = []
        previous = torch.tensor([BOS_ID], device=device)
        for _ in range(max_length):
            k = len(hypotheses)
            state, context_state, _ = self.decoder.step(
                previous, state, context_state, memory.expand(k, -1, -1), mask.expand(k, -1))
            log_probs = self.decoder.log_probs(context_state)
            totals = torch.tensor([score for _, score in hypotheses], device=device)[:, None] + log_probs
            # the best 2k candidates: an end among the first k finishes a hypothesis, and the
            # first k that do not end stay alive (so the beam stays k wide; fairseq's rule)
            best = totals.flatten().topk(min(2 * beam_size, totals.numel()))
            rows, words = best.indices // log_probs.shape[1], best.indices % log_probs.shape[1]
            alive, keep = [], []
            for rank, (row, word, score) in enumerate(zip(rows.tolist(), words.tolist(), best.values.tolist())):
                if word == EOS_ID:
                    if rank < beam_size:
                        finished.append((hypotheses[row][0], score))
                elif len(alive) < beam_size:
                    alive.append((hypotheses[row][0] + [word], score))
                    keep.append(row)
            if not alive or (finished and max(s for _, s in finished) >= alive[0][1]):
                break
            index = torch.tensor(keep, device=device)
            state = [(h[index], c[index]) for h, c in state]
            previous = torch.tensor([h[-1] for h, _ in alive], device=device)
            context_state, hypotheses = context_state[index], alive
        pool = finished or hypotheses
        return max(pool, key=lambda item: item[1])[0]
