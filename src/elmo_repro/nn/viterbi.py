"""Viterbi decoding of tag scores, and the BIO constraints He et al. (2017 §3) decode SRL under.

A tagger trained with a token-level softmax can emit ``I-X`` where no ``X`` phrase is open. At
test time He et al. decode the best sequence allowed by the BIO scheme instead: ``I-X`` only after
``B-X`` or ``I-X``, and no sequence starts with ``I-X``. The sequence score is the sum of the
tokens' scores (log-probabilities), so with no constraint violated by the argmax sequence it is
that sequence. allennlp-models' SRL predictor does the same with forbidden transitions set to
-inf (``get_viterbi_pairwise_potentials``, ``get_start_transitions``).
"""

from __future__ import annotations

from typing import Sequence

import torch


def bio_constraints(labels: Sequence[str]) -> tuple[torch.Tensor, torch.Tensor]:
    """Which tags may start a sequence, and which (previous, next) pairs may follow each other.

    Args:
        labels: K tag strings: ``O``, ``B-X``, ``I-X``.

    Returns:
        ``start`` (K,) bool and ``transitions`` (K, K) bool, ``transitions[i, j]`` True when tag j
        may follow tag i.

    Raises:
        ValueError: a label that is not ``O``, ``B-X`` or ``I-X``.
    """
    kinds = []
    for label in labels:
        prefix, _, kind = label.partition("-")
        if label != "O" and (prefix not in ("B", "I") or not kind):
            raise ValueError(f"not a BIO tag: {label!r}")
        kinds.append(("O", "") if label == "O" else (prefix, kind))
    start = torch.tensor([prefix != "I" for prefix, _ in kinds])
    transitions = torch.tensor([[to_prefix != "I" or (from_prefix in ("B", "I") and from_kind == to_kind)
                                 for to_prefix, to_kind in kinds] for from_prefix, from_kind in kinds])
    return start, transitions


@torch.no_grad()
def viterbi_decode(emissions: torch.Tensor, mask: torch.Tensor, start: torch.Tensor, transitions: torch.Tensor,
                   end: torch.Tensor | None = None) -> list[list[int]]:
    """The best tag sequence of each sentence under additive scores
    ``start[y_1] + sum_t emissions[t, y_t] + sum_{t>1} transitions[y_{t-1}, y_t] + end[y_n]``.

    Args:
        emissions: (B, T, K); mask: (B, T) bool, True on each sentence's first ``length``
            positions (every length >= 1); start, end: (K,); transitions: (K, K).

    Returns:
        B lists of tag indices, each of its sentence's length.
    """
    score = start + emissions[:, 0]                                             # (B, K)
    backpointers = []
    for t in range(1, emissions.size(1)):
        best, best_from = (score.unsqueeze(2) + transitions).max(dim=1)         # (B, K) over previous tag
        score = torch.where(mask[:, t:t + 1], best + emissions[:, t], score)
        backpointers.append(best_from)
    last = (score if end is None else score + end).argmax(dim=1).tolist()
    pointers = torch.stack(backpointers).tolist() if backpointers else []      # (T-1, B, K)
    paths = []
    for b, length in enumerate(mask.sum(1).tolist()):
        path = [last[b]]
        for t in range(length - 2, -1, -1):
            path.append(pointers[t][b][path[-1]])
        paths.append(path[::-1])
    return paths


def constrained_viterbi(scores: torch.Tensor, mask: torch.Tensor, start: torch.Tensor,
                        transitions: torch.Tensor) -> list[list[int]]:
    """The highest-scoring allowed tag sequence of each sentence.

    Args:
        scores: (B, T, K) per-token tag scores (log-probabilities); the sequence score is their sum.
        mask: (B, T) bool, True on each sentence's first ``length`` positions (every length >= 1).
        start, transitions: from :func:`bio_constraints`.

    Returns:
        B lists of tag indices, each of its sentence's length, that never break the constraints.
    """
    forbidden = torch.finfo(scores.dtype).min / 4          # finite: -inf - -inf would give nan
    return viterbi_decode(scores, mask, torch.where(start, 0.0, forbidden).to(scores),
                          torch.where(transitions, 0.0, forbidden).to(scores))
