"""An exponential moving average of a model's weights, for evaluation and model selection
(document-qa's reader keeps ``tf.train.ExponentialMovingAverage(0.999)`` of its trainable
variables and evaluates with the averages; the ELMo paper's SQuAD model inherits it).

As TensorFlow's without ``num_updates``: the shadow starts at the initial weights and after each
optimizer step becomes ``decay * shadow + (1 - decay) * weight`` (no bias correction).
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

import torch
from torch import nn


class WeightAverage:
    """The moving average of ``model``'s trainable parameters (frozen ones and buffers are used as
    they are).

    Args:
        model: the module whose parameters are averaged.
        decay: the weight of the old average per update, in [0, 1).

    Raises:
        ValueError: a decay outside [0, 1).
    """

    def __init__(self, model: nn.Module, decay: float):
        if not 0.0 <= decay < 1.0:
            raise ValueError(f"EMA decay {decay} must be in [0, 1)")
        self.decay = decay
        self.params = {name: p for name, p in model.named_parameters() if p.requires_grad}
        self.shadow = {name: p.detach().clone() for name, p in self.params.items()}

    @torch.no_grad()
    def update(self) -> None:
        """One step after an optimizer step: shadow ← decay·shadow + (1−decay)·weight."""
        for name, p in self.params.items():
            self.shadow[name].lerp_(p.detach(), 1.0 - self.decay)

    @contextmanager
    @torch.no_grad()
    def applied(self) -> Iterator[None]:
        """Within the block the model holds the averaged weights; the trained ones come back after
        it, even when the block raises."""
        saved = {name: p.detach().clone() for name, p in self.params.items()}
        for name, p in self.params.items():
            p.copy_(self.shadow[name])
        try:
            yield
        finally:
            for name, p in self.params.items():
                p.copy_(saved[name])

    def state_dict(self) -> dict[str, torch.Tensor]:
        """The averages by parameter name (a checkpoint's part, so training resumes exactly)."""
        return {name: t.clone() for name, t in self.shadow.items()}

    def load_state_dict(self, state: dict[str, torch.Tensor]) -> None:
        """Restore :meth:`state_dict`'s averages.

        Raises:
            KeyError: naming the parameters missing from ``state`` or unknown to the model.
        """
        if set(state) != set(self.shadow):
            missing, unknown = sorted(set(self.shadow) - set(state)), sorted(set(state) - set(self.shadow))
            raise KeyError(f"EMA state does not match the model (missing: {missing}, unknown: {unknown})")
        for name, t in state.items():
            self.shadow[name].copy_(t)
