"""Stop pretraining at the first non-finite loss, gradient or weight, before it is applied or
saved, with an error that names the batch, the last good checkpoint and the likely causes."""

from __future__ import annotations

from pathlib import Path

import torch
import torch.distributed as dist

from .model import BiLM


class NonFiniteTrainingError(FloatingPointError):
    """Pretraining met a non-finite loss, gradient or weight; the checkpoint on disk is the last
    good one (nothing non-finite is ever written)."""


_LIKELY_CAUSES = ("likely causes: a learning rate or initial Adagrad accumulator that lets the weights "
                  "overflow, a grad_clip too large to bound the step, or bf16 overflow; lower them and "
                  "rerun (the run resumes from the checkpoint)")


def last_good(ckpt_path: Path) -> str:
    if not ckpt_path.exists():
        return "no checkpoint was written yet"
    return f"the last good checkpoint is {ckpt_path}"


def stop_if_non_finite(loss: torch.Tensor, grad_norm: torch.Tensor, batch: int, ckpt_path: Path,
                        world: int, device: torch.device) -> None:
    """Raise :class:`NonFiniteTrainingError` naming ``batch`` (1-based) if the loss or the global
    gradient norm is not finite on any rank, before the optimizer applies it."""
    values = torch.stack([loss.detach().float().reshape(()), grad_norm.detach().float().reshape(())])
    bad = torch.tensor([0.0 if bool(torch.isfinite(values).all()) else 1.0], device=device)
    if world > 1:
        dist.all_reduce(bad)                       # every rank stops together
    if float(bad) > 0:
        raise NonFiniteTrainingError(
            f"pretraining batch {batch}: non-finite loss ({float(values[0])}) or gradient norm "
            f"({float(values[1])}); the update was not applied and {last_good(ckpt_path)}; {_LIKELY_CAUSES}")


def stop_if_non_finite_weights(model: BiLM, batch: int, ckpt_path: Path) -> None:
    """Raise :class:`NonFiniteTrainingError` if an update left a non-finite weight (checked before
    each checkpoint, so that none is saved)."""
    bad = [name for name, p in model.named_parameters() if not bool(torch.isfinite(p).all())]
    if bad:
        raise NonFiniteTrainingError(
            f"pretraining batch {batch}: the update left non-finite weights in {', '.join(bad[:5])}"
            f"{' ...' if len(bad) > 5 else ''}; not saved, {last_good(ckpt_path)}; {_LIKELY_CAUSES}")
