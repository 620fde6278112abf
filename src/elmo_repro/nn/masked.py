"""Masked reductions over a sequence axis (as allennlp.nn.util's masked_softmax, weighted_sum,
masked_max and masked_mean).

Masked entries are replaced (``masked_fill``), not multiplied away, so arbitrary or non-finite
values at padded positions never reach the result.
"""

from __future__ import annotations

import torch


def _lowest(x: torch.Tensor) -> float:
    return torch.finfo(x.dtype).min


def masked_softmax(logits: torch.Tensor, mask: torch.Tensor, dim: int = -1) -> torch.Tensor:
    """Softmax over ``dim`` that gives masked entries exactly zero weight.

    Args:
        logits: (..., N) scores (e.g. (B, Tq, Tk) attention logits).
        mask: bool, True where an entry counts; broadcastable to ``logits`` (e.g. (B, 1, Tk)).

    Returns:
        Same shape as ``logits``; each row sums to 1 over its unmasked entries, or is all zeros
        when the whole row is masked.
    """
    mask = mask.expand_as(logits)
    weights = torch.softmax(logits.masked_fill(~mask, _lowest(logits)), dim=dim)
    # A fully masked row would otherwise be uniform over padding.
    return weights * mask.to(weights.dtype)


def weighted_sum(values: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
    """Attention-weighted sum: (B, Tk, D) values, (B, Tq, Tk) or (B, Tk) weights -> (B, Tq, D) or (B, D).

    Padded values must carry zero weight (see :func:`masked_softmax`); they are zeroed here too, so
    a non-finite value at a zero-weight position cannot leak in as NaN.
    """
    if weights.dim() == 2:
        return weighted_sum(values, weights[:, None, :])[:, 0]
    keep = (weights != 0).any(dim=1)                                           # (B, Tk)
    return torch.bmm(weights, values.masked_fill(~keep[:, :, None], 0.0))


def masked_max(x: torch.Tensor, mask: torch.Tensor, dim: int = 1) -> torch.Tensor:
    """Max over ``dim`` of the unmasked entries: (B, T, D), (B, T) bool -> (B, D)."""
    return x.masked_fill(~_broadcast(mask, x), _lowest(x)).max(dim=dim).values


def masked_min(x: torch.Tensor, mask: torch.Tensor, dim: int = 1) -> torch.Tensor:
    """Min over ``dim`` of the unmasked entries: (B, T, D), (B, T) bool -> (B, D)."""
    return x.masked_fill(~_broadcast(mask, x), torch.finfo(x.dtype).max).min(dim=dim).values


def masked_mean(x: torch.Tensor, mask: torch.Tensor, dim: int = 1) -> torch.Tensor:
    """Mean over ``dim`` of the unmasked entries: (B, T, D), (B, T) bool -> (B, D) (0 for an empty row)."""
    m = _broadcast(mask, x)
    total = x.masked_fill(~m, 0.0).sum(dim=dim)
    return total / m.to(x.dtype).sum(dim=dim).clamp(min=1.0)


def _broadcast(mask: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """A (B, T) mask as (B, T, 1) against a (B, T, D) tensor."""
    return mask[..., None] if mask.dim() == x.dim() - 1 else mask
