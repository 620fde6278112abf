"""ELMo as a task model uses it (paper §3.3): a ScalarMix per insertion point, then dropout.

The paper concatenates ELMo with the task model's input token vectors and, for some tasks, also
with the output of the task's first RNN (a second, separately weighted mix). Which of the two, and
how the layers are mixed, is an :class:`~elmo_repro.experiments.specs.ElmoSpec` (data, not code).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import torch
from torch import nn

from ..experiments.specs import ElmoSpec
from .scalar_mix import ScalarMix


class ElmoInjection(nn.Module):
    """The mixes one run's ELMo spec asks for.

    Args:
        n_layers: biLM layers L + 1 (layer 0 is the char layer).
        spec: the resolved ELMo spec (placement ``input``, ``output`` or ``both``).
        dim: D, the width of each biLM layer (2 x projection).

    Attributes:
        input_dim / output_dim: D where ELMo is added at that point, else 0.

    Raises:
        ValueError: an unresolved placement, or a fixed layer outside 0..n_layers-1.
    """

    def __init__(self, n_layers: int, spec: ElmoSpec, dim: int):
        super().__init__()
        if spec.placement not in ("input", "output", "both"):
            raise ValueError(f"placement {spec.placement!r} must be resolved to input, output or both")
        fixed = {"learned": None, "last": n_layers - 1, "fixed": spec.layer}[spec.mix]
        self.points = [p for p in ("input", "output") if spec.placement in (p, "both")]
        self.mixes = nn.ModuleList(
            ScalarMix(n_layers, spec.layer_norm, spec.l2_coef, fixed_layer=fixed,
                      train_weights=spec.train_weights, train_gamma=spec.train_gamma)
            for _ in self.points)
        self.dropout = nn.Dropout(spec.dropout)
        self.input_dim = dim if "input" in self.points else 0
        self.output_dim = dim if "output" in self.points else 0

    def forward(self, layers: torch.Tensor, mask: torch.Tensor) -> dict[str, torch.Tensor]:
        """(B, L+1, T, D) layers, (B, T) mask -> {point: (B, T, D) dropped-out mix}."""
        return {point: self.dropout(mix(layers, mask)) for point, mix in zip(self.points, self.mixes)}

    def match_scale(self, sample: Sequence[np.ndarray | torch.Tensor], target_rms: float) -> list[float]:
        """Start every mix's γ so the unscaled mix over ``sample`` has RMS ``target_rms``
        (``ElmoSpec.gamma_init == "matched"``; :meth:`ScalarMix.match_scale`).

        Args:
            sample: texts' layers, each (L+1, T_i, D); every position is a real token.
            target_rms: RMS of the vectors ELMo joins (the static word vectors).

        Returns:
            γ of each mix, in the order of ``points``.

        Raises:
            ValueError: an empty sample, or as :meth:`ScalarMix.match_scale`.
        """
        if not sample:
            raise ValueError("match_scale needs at least one text's layers")
        device = self.mixes[0].gamma.device
        layers = torch.cat([torch.as_tensor(np.asarray(a), dtype=torch.float32, device=device) for a in sample],
                           dim=1)[None]
        mask = torch.ones(1, layers.size(2), dtype=torch.bool, device=device)   # (1, ΣT_i): all real
        return [mix.match_scale(layers, mask, target_rms) for mix in self.mixes]

    def penalty(self) -> torch.Tensor:
        """Sum of the mixes' λ·Σw² (Eq. 1's regulariser); a scalar."""
        return sum((mix.penalty() for mix in self.mixes), torch.zeros((), device=self.mixes[0].gamma.device))

    def report(self) -> dict[str, dict]:
        """{point: {"s": softmax-normalised layer weights, "gamma": γ, "gamma_init": γ before
        training}} of every mix."""
        return {point: mix.parameters_report() for point, mix in zip(self.points, self.mixes)}
