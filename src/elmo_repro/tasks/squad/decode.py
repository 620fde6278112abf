"""Span decoding of the SQuAD reader: the best answer span under a length bound (document-qa's
``best_span_from_bounds`` with ``bound=17``)."""

from __future__ import annotations

import torch
import torch.nn.functional as F


def best_spans(start_logits: torch.Tensor, end_logits: torch.Tensor, mask: torch.Tensor,
               max_tokens: int) -> list[tuple[int, int]]:
    """The span (first, last) maximising start_logit[first] + end_logit[last] (the product of the
    two softmax probabilities) with first ≤ last < first + ``max_tokens``, both real tokens.

    Ties go to the earlier start, then the shorter span. Works on a (B, T, max_tokens) band, never
    on all T² pairs.

    Args:
        start_logits, end_logits: (B, T) scores; padded positions arbitrary.
        mask: (B, T) bool, True at real tokens; every row has at least one.
        max_tokens: the longest span allowed, in tokens (≥ 1).

    Returns:
        One inclusive (first, last) token span per example.

    Raises:
        ValueError: ``max_tokens`` < 1, or an example without a real token.
    """
    if max_tokens < 1:
        raise ValueError(f"max_tokens must be at least 1, got {max_tokens}")
    if not bool(mask.any(dim=1).all()):
        raise ValueError("an example without a real token has no span")
    low = torch.finfo(start_logits.dtype).min / 4                         # -inf would make NaNs in sums
    start = start_logits.masked_fill(~mask, low)
    end = F.pad(end_logits.masked_fill(~mask, low), (0, max_tokens - 1), value=low)   # (B, T + W - 1)
    band = end.unfold(1, max_tokens, 1)                                   # (B, T, W): end at first + w
    scores = start[:, :, None] + band
    flat = scores.flatten(1).argmax(dim=1)                                # first maximum: earliest, shortest
    return [(int(i) // max_tokens, int(i) // max_tokens + int(i) % max_tokens) for i in flat]
