"""Linear-chain conditional random field (Lafferty et al. 2001) as used by BiLSTM-CRF taggers.

Follows allennlp's ``ConditionalRandomField`` (the CRF of the ELMo NER model, Peters et al. 2018
§4 / Lample et al. 2016): a score for a tag sequence y_1..y_n of a sentence with emissions e is

    s(y) = start[y_1] + sum_t e_t[y_t] + sum_{t>1} trans[y_{t-1}, y_t] + end[y_n]

and the model's log-likelihood is s(y) - log sum_y' exp s(y') (forward algorithm); decoding is
Viterbi. Sentences in a batch have different lengths: ``mask`` (B, T) is True on each sentence's
first ``length`` positions (left-aligned, every sentence non-empty).

Transition constraints (:func:`allowed_transitions`, allennlp's semantics) forbid e.g. ``O -> I-X``
in BIOUL. Choice made here: they apply to **decoding and training** alike by replacing forbidden
transition scores with a large negative constant (-10000, allennlp's value; finite so a
logsumexp over only forbidden paths stays finite and gradients stay defined). The normaliser then
ranges over valid sequences only, the distribution trained is the one decoded, and gold sequences
(converted from well-formed IOB1) are always valid. ``constrain_training=False`` gives allennlp's
behaviour (constraints at decoding only).
"""

from __future__ import annotations

import torch
from torch import nn

from .viterbi import viterbi_decode

FORBIDDEN = -10000.0


def allowed_transitions(labels: list[str]) -> list[tuple[int, int]]:
    """Allowed (from, to) label-index pairs of the BIOUL scheme, allennlp's ``allowed_transitions``.

    Index ``len(labels)`` stands for START and ``len(labels) + 1`` for END. Rules: START -> O/B/U;
    O/L/U -> END; O/L/U -> O/B-*/U-*; B-X/I-X -> I-X/L-X only (same type).
    """
    n = len(labels)
    parsed = [("START", "")] + [_prefix_kind(label) for label in labels] + [("END", "")]
    index = [n] + list(range(n)) + [n + 1]
    allowed = []
    for i, (from_prefix, from_kind) in zip(index, parsed):
        if from_prefix == "END":
            continue
        for j, (to_prefix, to_kind) in zip(index, parsed):
            if to_prefix == "START":
                continue
            if _bioul_allowed(from_prefix, from_kind, to_prefix, to_kind):
                allowed.append((i, j))
    return allowed


def _prefix_kind(label: str) -> tuple[str, str]:
    if label == "O":
        return "O", ""
    prefix, _, kind = label.partition("-")
    if prefix not in ("B", "I", "L", "U") or not kind:
        raise ValueError(f"not a BIOUL label: {label!r}")
    return prefix, kind


def _bioul_allowed(from_prefix: str, from_kind: str, to_prefix: str, to_kind: str) -> bool:
    if from_prefix == "START":
        return to_prefix in ("O", "B", "U")
    if to_prefix == "END":
        return from_prefix in ("O", "L", "U")
    if from_prefix in ("O", "L", "U"):
        return to_prefix in ("O", "B", "U")
    return to_prefix in ("I", "L") and from_kind == to_kind     # from B-X or I-X


def is_valid_bioul(tags: list[str]) -> bool:
    """Whether a BIOUL tag sequence obeys :func:`allowed_transitions` (including START and END)."""
    sequence = [("START", "")] + [_prefix_kind(tag) for tag in tags] + [("END", "")]
    return all(_bioul_allowed(*a, *b) for a, b in zip(sequence, sequence[1:]))


class ConditionalRandomField(nn.Module):
    """Linear-chain CRF over ``num_tags`` tags with start/end transitions.

    Args:
        num_tags: K, the number of tags.
        constraints: allowed (from, to) pairs, indices as in :func:`allowed_transitions`
            (``num_tags`` = START, ``num_tags + 1`` = END); ``None`` allows everything.
        constrain_training: apply the constraints in :meth:`log_likelihood` too (see module doc).
        include_start_end: learn ``start`` and ``end`` scores (allennlp's
            ``include_start_end_transitions``); False keeps them 0 (no parameters), as allennlp's
            ELMo NER configuration does. The constraints on the first and last tag hold either way.
    """

    def __init__(self, num_tags: int, constraints: list[tuple[int, int]] | None = None,
                 constrain_training: bool = True, include_start_end: bool = True):
        super().__init__()
        self.num_tags, self.constrain_training = num_tags, constrain_training
        self.transitions = nn.Parameter(torch.empty(num_tags, num_tags))      # [from, to]
        if include_start_end:
            self.start_transitions = nn.Parameter(torch.zeros(num_tags))
            self.end_transitions = nn.Parameter(torch.zeros(num_tags))
        else:
            self.register_buffer("start_transitions", torch.zeros(num_tags), persistent=False)
            self.register_buffer("end_transitions", torch.zeros(num_tags), persistent=False)
        nn.init.xavier_normal_(self.transitions)
        allowed = torch.ones(num_tags + 2, num_tags + 2, dtype=torch.bool)
        if constraints is not None:
            allowed.zero_()
            for i, j in constraints:
                allowed[i, j] = True
        self.register_buffer("allowed", allowed, persistent=False)

    def _scores(self, constrained: bool) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(start (K,), transitions (K, K), end (K,)), forbidden entries set to FORBIDDEN if constrained."""
        k = self.num_tags
        start, trans, end = self.start_transitions, self.transitions, self.end_transitions
        if constrained:
            start = start.masked_fill(~self.allowed[k, :k], FORBIDDEN)
            trans = trans.masked_fill(~self.allowed[:k, :k], FORBIDDEN)
            end = end.masked_fill(~self.allowed[:k, k + 1], FORBIDDEN)
        return start, trans, end

    def log_likelihood(self, emissions: torch.Tensor, tags: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """Per-sentence log p(tags | emissions).

        Args:
            emissions: (B, T, K) unnormalised tag scores.
            tags: (B, T) long gold tags (any value at padded positions).
            mask: (B, T) bool, True on each sentence's first ``length >= 1`` positions.

        Returns:
            (B,) log-likelihoods.
        """
        start, trans, end = self._scores(self.constrain_training)
        return self._gold_score(emissions, tags, mask, start, trans, end) - \
            self._log_partition(emissions, mask, start, trans, end)

    def forward(self, emissions: torch.Tensor, tags: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """Sum of the batch's log-likelihoods (allennlp's convention); the loss is its negative."""
        return self.log_likelihood(emissions, tags, mask).sum()

    @staticmethod
    def _gold_score(emissions, tags, mask, start, trans, end) -> torch.Tensor:
        tags = tags.masked_fill(~mask, 0)                                       # padded -> any valid index
        m = mask.to(emissions.dtype)
        emit = emissions.gather(2, tags.unsqueeze(-1)).squeeze(-1)              # (B, T)
        score = start[tags[:, 0]] + (emit * m).sum(1)
        score = score + (trans[tags[:, :-1], tags[:, 1:]] * m[:, 1:]).sum(1)   # (B,)
        last = tags.gather(1, (mask.sum(1, keepdim=True) - 1)).squeeze(1)      # (B,) last real tag
        return score + end[last]

    @staticmethod
    def _log_partition(emissions, mask, start, trans, end) -> torch.Tensor:
        alpha = start + emissions[:, 0]                                         # (B, K)
        for t in range(1, emissions.size(1)):
            # alpha'[b, j] = logsumexp_i alpha[b, i] + trans[i, j] + e_t[b, j]
            step = torch.logsumexp(alpha.unsqueeze(2) + trans, dim=1) + emissions[:, t]
            alpha = torch.where(mask[:, t:t + 1], step, alpha)                 # finished sentences keep alpha
        return torch.logsumexp(alpha + end, dim=1)

    @torch.no_grad()
    def viterbi_tags(self, emissions: torch.Tensor, mask: torch.Tensor) -> list[list[int]]:
        """Best tag sequence per sentence under the constraints (always applied when decoding).

        Args:
            emissions: (B, T, K); mask: (B, T) bool as in :meth:`log_likelihood`.

        Returns:
            B lists of tag indices, each of its sentence's length.
        """
        return viterbi_decode(emissions, mask, *self._scores(constrained=True))
