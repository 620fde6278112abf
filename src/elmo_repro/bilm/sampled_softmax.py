"""Softmax shared by the forward and backward LMs: sampled in training, full in evaluation.

Training uses TensorFlow's ``sampled_softmax_loss`` semantics (Jean et al. 2015), as bilm-tf:
one set of ``n_samples`` distinct negatives per batch drawn from the log-uniform (Zipfian)
distribution over a frequency-sorted vocabulary, P(k) = log((k+2)/(k+1)) / log(V+1); every
logit is corrected by subtracting log of its expected count under the sampler; negatives that
equal a row's target ("accidental hits") are removed from that row. When ``n_samples`` is at
least the vocabulary size, sampling would ask for more negatives than exist: the loss is then the
exact full softmax (documented behaviour, and a warning).
"""

from __future__ import annotations

import math
import warnings

import torch
from torch import nn
from torch.nn import functional as F


def log_uniform_probs(vocab_size: int) -> torch.Tensor:
    """(V,) probabilities of the log-uniform sampler; sums to 1."""
    k = torch.arange(vocab_size, dtype=torch.float64)
    return ((torch.log(k + 2) - torch.log(k + 1)) / math.log(vocab_size + 1)).float()


def sample_log_uniform(vocab_size: int, n_samples: int, generator: torch.Generator | None = None
                       ) -> tuple[torch.Tensor, int]:
    """Draw ``n_samples`` distinct ids with replacement-and-rejection, as TensorFlow's unique
    log-uniform sampler. Returns the ids (n_samples,) and the number of draws it took."""
    if n_samples > vocab_size:
        raise ValueError(f"cannot draw {n_samples} distinct negatives from {vocab_size} classes")
    seen: dict[int, None] = {}
    tries = 0
    log_range = math.log(vocab_size + 1)
    while len(seen) < n_samples:
        u = torch.rand(max(2 * (n_samples - len(seen)), 64), generator=generator, dtype=torch.float64)
        draws = (torch.exp(u * log_range).floor().long() - 1).clamp_(0, vocab_size - 1).tolist()
        for d in draws:
            tries += 1
            if d not in seen:
                seen[d] = None
                if len(seen) == n_samples:
                    break
    return torch.tensor(list(seen), dtype=torch.long), tries


class SoftmaxLayer(nn.Module):
    """Output layer ``softmax_W`` (V, D), ``softmax_b`` (V,) shared by both directions."""

    def __init__(self, vocab_size: int, dim: int):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(vocab_size, dim).normal_(0.0, 1.0 / math.sqrt(dim)))
        self.bias = nn.Parameter(torch.zeros(vocab_size))
        self.register_buffer("sampler_probs", log_uniform_probs(vocab_size), persistent=False)
        self._warned = False

    @property
    def vocab_size(self) -> int:
        return self.weight.size(0)

    def full_nll(self, hidden: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        """Per-token negative log-likelihood (nats) under the full softmax: (N, D), (N,) -> (N,)."""
        logits = F.linear(hidden, self.weight, self.bias)                     # (N, V)
        return F.cross_entropy(logits, targets, reduction="none")

    def sampled_loss(self, hidden: torch.Tensor, targets: torch.Tensor, n_samples: int,
                     generator: torch.Generator | None = None) -> torch.Tensor:
        """Mean sampled-softmax loss (nats; *not* a perplexity): (N, D), (N,) -> scalar."""
        if n_samples >= self.vocab_size:
            if not self._warned:
                warnings.warn(f"{n_samples} sampled negatives >= vocabulary size {self.vocab_size}: "
                              "using the full softmax", stacklevel=2)
                self._warned = True
            return self.full_nll(hidden, targets).mean()
        sampled, tries = sample_log_uniform(self.vocab_size, n_samples, generator)
        sampled = sampled.to(hidden.device)
        # log expected count of each class in `tries` draws: log(1 - (1 - p)^tries)
        log_q = torch.log(-torch.expm1(tries * torch.log1p(-self.sampler_probs)))   # (V,)
        true_logits = (hidden * self.weight[targets]).sum(-1) + self.bias[targets] - log_q[targets]
        sampled_logits = F.linear(hidden, self.weight[sampled], self.bias[sampled]) - log_q[sampled]
        hits = targets[:, None] == sampled[None, :]                            # (N, S)
        sampled_logits = sampled_logits.masked_fill(hits, torch.finfo(sampled_logits.dtype).min)
        logits = torch.cat([true_logits[:, None], sampled_logits], dim=1)      # (N, 1 + S)
        return F.cross_entropy(logits, torch.zeros_like(targets))
