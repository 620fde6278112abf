"""ScalarMix (paper §3.2, Eq. 1).

    ELMo_k^task = gamma^task * sum_j s_j^task * h_{k,j}^LM,   s^task = softmax(w^task)

``w`` are free scalars (one per biLM layer, initialised to 0 so the mix starts as the plain
average), ``gamma`` scales the whole vector. Following bilm-tf's ``weight_layers``, the optional
regulariser is ``lambda * sum_j w_j**2``: it pulls ``w`` to 0, i.e. the softmax weights toward the
uniform average of the layers (paper §5.2). Optional layer normalisation (bilm-tf/allennlp
``do_layer_norm``) normalises each layer with the mean and variance over all unmasked positions
and dimensions of the batch before mixing.
"""

from __future__ import annotations

import torch
from torch import nn


class ScalarMix(nn.Module):
    """Softmax-weighted sum of ``n_layers`` tensors scaled by ``gamma``.

    Args:
        n_layers: number of biLM layers mixed (L + 1 for an L-layer biLM).
        do_layer_norm: normalise each layer over its unmasked entries before mixing.
        l2_coef: lambda of the regulariser returned by :meth:`penalty`.
        fixed_layer: use only this layer (s one-hot; 0 = the char layer, ``n_layers - 1`` = the
            top layer as bilm-tf's ``use_top_only``): s is not trained and there is no penalty.
        train_weights: train the layer weights s (ignored with ``fixed_layer``).
        train_gamma: train the scale gamma (a fixed-layer mix keeps it trainable by default).

    Raises:
        ValueError: ``fixed_layer`` outside 0..n_layers-1.
    """

    def __init__(self, n_layers: int, do_layer_norm: bool = False, l2_coef: float = 0.0,
                 fixed_layer: int | None = None, train_weights: bool = True, train_gamma: bool = True):
        super().__init__()
        if fixed_layer is not None and not 0 <= fixed_layer < n_layers:
            raise ValueError(f"fixed_layer {fixed_layer} outside the biLM's layers 0..{n_layers - 1}")
        self.n_layers, self.do_layer_norm, self.l2_coef = n_layers, do_layer_norm, l2_coef
        self.fixed_layer = fixed_layer
        self.scalar_parameters = nn.Parameter(torch.zeros(n_layers),
                                              requires_grad=train_weights and fixed_layer is None)
        self.gamma = nn.Parameter(torch.ones(1), requires_grad=train_gamma)
        self.gamma_init = 1.0                                        # γ before training (match_scale)

    def weights(self) -> torch.Tensor:
        """The normalised layer weights s, shape (n_layers,), summing to 1 (one-hot when fixed)."""
        if self.fixed_layer is not None:
            return nn.functional.one_hot(torch.tensor(self.fixed_layer, device=self.gamma.device),
                                         self.n_layers).to(self.gamma.dtype)
        return torch.softmax(self.scalar_parameters, dim=0)

    def penalty(self) -> torch.Tensor:
        """``l2_coef * sum(w**2)``, a scalar to add to the task loss (0 when ``l2_coef`` is 0 or s
        is not trained)."""
        if not self.scalar_parameters.requires_grad:
            return torch.zeros((), device=self.gamma.device)
        return self.l2_coef * (self.scalar_parameters ** 2).sum()

    def forward(self, layers: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        """Mix the layers.

        Args:
            layers: (B, n_layers, T, D) biLM activations.
            mask: (B, T) bool, True at real tokens; required when ``do_layer_norm``.

        Returns:
            (B, T, D) mixed representation.

        Raises:
            ValueError: wrong number of layers, or layer norm without a mask.
        """
        if layers.dim() != 4 or layers.size(1) != self.n_layers:
            raise ValueError(f"expected (B, {self.n_layers}, T, D) layers, got {tuple(layers.shape)}")
        return self.gamma.to(layers.dtype) * self._unscaled(layers, mask)

    def _unscaled(self, layers: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
        """(B, n_layers, T, D) -> (B, T, D): the mix before γ."""
        if self.do_layer_norm:
            if mask is None:
                raise ValueError("do_layer_norm needs the token mask")
            layers = _masked_layer_norm(layers, mask)
        if self.fixed_layer is not None:
            return layers[:, self.fixed_layer]                       # (B, T, D)
        s = self.weights().to(layers.dtype)                          # (n_layers,)
        return torch.einsum("l,bltd->btd", s, layers)                # (B, T, D)

    @torch.no_grad()
    def match_scale(self, layers: torch.Tensor, mask: torch.Tensor, target_rms: float) -> float:
        """Set γ so the mix's root mean square over the real tokens of ``layers`` is ``target_rms``.

        Args:
            layers: (B, n_layers, T, D) a sample of biLM activations (float32).
            mask: (B, T) bool, True at real tokens.
            target_rms: the scale to match, e.g. RMS of the static word vectors (> 0).

        Returns:
            The new γ (also recorded as ``gamma_init`` in :meth:`parameters_report`).

        Raises:
            ValueError: no real token, a non-positive target, or an all-zero mix.
        """
        if not mask.any():
            raise ValueError("match_scale needs at least one real token")
        if not target_rms > 0:
            raise ValueError(f"target_rms must be positive, got {target_rms}")
        mixed = self._unscaled(layers.float(), mask)[mask]           # (N, D) real tokens
        rms = float(mixed.pow(2).mean().sqrt())
        if not rms > 0:
            raise ValueError("the unscaled mix is zero on the sample: no scale to match")
        self.gamma.fill_(target_rms / rms)
        self.gamma_init = self.gamma.item()
        return self.gamma_init

    def parameters_report(self) -> dict[str, list[float] | float]:
        """The learned mix as reported per run: softmax-normalised ``s``, ``gamma`` and the γ it
        started from (``gamma_init``)."""
        return {"s": [float(x) for x in self.weights().detach()], "gamma": float(self.gamma.detach()),
                "gamma_init": self.gamma_init}


def _masked_layer_norm(layers: torch.Tensor, mask: torch.Tensor, eps: float = 1e-12) -> torch.Tensor:
    """Normalise each layer by the mean/variance of its unmasked entries (as allennlp's ScalarMix)."""
    m = mask[:, None, :, None].to(layers.dtype)                      # (B, 1, T, 1)
    count = m.sum(dim=(0, 2, 3)) * layers.size(-1)                   # (n_layers,) entries per layer
    mean = (layers * m).sum(dim=(0, 2, 3)) / count                   # (n_layers,)
    centred = (layers - mean[None, :, None, None]) * m
    var = (centred ** 2).sum(dim=(0, 2, 3)) / count
    return centred / torch.sqrt(var + eps)[None, :, None, None]
