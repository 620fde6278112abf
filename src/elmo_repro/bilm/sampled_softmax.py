"""Softmax shared by the forward and backward LMs: sampled in training, full in evaluation.

Training uses TensorFlow's ``sampled_softmax_loss`` semantics (Jean et al. 2015), as bilm-tf:
one set of ``n_samples`` distinct negatives per batch drawn from the log-uniform (Zipfian)
distribution over a frequency-sorted vocabulary, P(k) = log((k+2)/(k+1)) / log(V+1); every
logit is corrected by subtracting log of its expected count under the sampler; negatives that
equal a row's target ("accidental hits") are removed from that row. When ``n_samples`` is at
least the vocabulary size, sampling would ask for more negatives than exist: the loss is then the
exact full softmax (documented behaviour, and a warning).

The update is sparse (:class:`SoftmaxRows`), as bilm-tf's: TensorFlow differentiates the
``embedding_lookup`` of ``softmax_W`` into ``IndexedSlices`` and its Adagrad updates only the rows
of the batch's targets and sampled negatives (duplicate indices summed first). Gathering those
rows into one small leaf table before the forward pass gives the same effect here: autograd
computes the (U, D) gradient of the U touched rows instead of a (V, D) one that is zero almost
everywhere (V = 793,471 rows of 512 at paper size: 406M values per step to zero, sum, clip,
all-reduce and step), and :meth:`SoftmaxRows.adagrad_step` applies ``torch.optim.Adagrad``'s own
arithmetic to those rows only. Adagrad with a zero gradient leaves a row and its accumulator
unchanged, so the untouched rows end exactly as the dense update leaves them, and on a CPU the
touched ones too (the same kernels on the same values; see :class:`SoftmaxRows`).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import torch
from torch import nn
from torch.nn import functional as F
from torch.optim.adagrad import adagrad


def log_uniform_probs(vocab_size: int) -> torch.Tensor:
    """(V,) probabilities of the log-uniform sampler; sums to 1."""
    k = torch.arange(vocab_size, dtype=torch.float64)
    return ((torch.log(k + 2) - torch.log(k + 1)) / math.log(vocab_size + 1)).float()


def sample_log_uniform(vocab_size: int, n_samples: int, generator: torch.Generator | None = None
                       ) -> tuple[torch.Tensor, int]:
    """Draw ``n_samples`` distinct ids with replacement-and-rejection, as TensorFlow's unique
    log-uniform sampler. Returns the ids (n_samples,), on the generator's device (the CPU's
    generator: the same draws wherever the model is), and the number of draws it took."""
    if n_samples > vocab_size:
        raise ValueError(f"cannot draw {n_samples} distinct negatives from {vocab_size} classes")
    seen: dict[int, None] = {}
    tries = 0
    log_range = math.log(vocab_size + 1)
    device = generator.device if generator is not None else torch.device("cpu")
    while len(seen) < n_samples:
        u = torch.rand(max(2 * (n_samples - len(seen)), 64), generator=generator, dtype=torch.float64, device=device)
        draws = (torch.exp(u * log_range).floor().long() - 1).clamp_(0, vocab_size - 1).tolist()
        for d in draws:
            tries += 1
            if d not in seen:
                seen[d] = None
                if len(seen) == n_samples:
                    break
    return torch.tensor(list(seen), dtype=torch.long, device=device), tries


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

    def draw_negatives(self, n_samples: int, generator: torch.Generator | None = None
                       ) -> tuple[torch.Tensor, int] | None:
        """The next batch's negatives, as :meth:`sampled_loss` would draw them: ``(ids (S,) on the
        softmax's device, number of draws)``, or None when ``n_samples`` is at least the
        vocabulary size (the loss is then the full softmax and draws nothing)."""
        if n_samples >= self.vocab_size:
            return None
        sampled, tries = sample_log_uniform(self.vocab_size, n_samples, generator)
        return sampled.to(self.weight.device), tries

    def sampled_loss(self, hidden: torch.Tensor, targets: torch.Tensor, n_samples: int,
                     generator: torch.Generator | None = None, *,
                     negatives: tuple[torch.Tensor, int] | None = None,
                     rows: "SoftmaxRows | None" = None) -> torch.Tensor:
        """Mean sampled-softmax loss (nats; *not* a perplexity): (N, D), (N,) -> scalar.

        Args:
            hidden: (N, D) top-layer outputs.
            targets: (N,) target row ids.
            n_samples: negatives per batch (S); at least the vocabulary size: the full softmax.
            generator: draws the negatives when ``negatives`` is not given.
            negatives: ``(ids (S,), draws)`` from :meth:`draw_negatives`, drawn ahead (the rows a
                sparse update touches must be known before the forward pass).
            rows: take ``softmax_W``'s rows from this gathered table (sparse update) instead of
                the (V, D) parameter; it must hold every target and negative. The loss is the same
                to the bit; only where the weight's gradient lands differs (``rows.weight.grad``).
                The bias is always read from the (V,) parameter (see :class:`SoftmaxRows`).

        Raises:
            ValueError: ``rows`` with the full softmax (every row is touched: update densely), or
                a target or negative that ``rows`` does not hold.
        """
        if n_samples >= self.vocab_size:
            if rows is not None:
                raise ValueError("a sparse softmax update needs sampled negatives; with the full softmax "
                                 "every row is touched: update it densely")
            if not self._warned:
                warnings.warn(f"{n_samples} sampled negatives >= vocabulary size {self.vocab_size}: "
                              "using the full softmax", stacklevel=2)
                self._warned = True
            return self.full_nll(hidden, targets).mean()
        if negatives is None:
            sampled, tries = sample_log_uniform(self.vocab_size, n_samples, generator)
            sampled = sampled.to(hidden.device)
        else:
            sampled, tries = negatives
        # the same expression either way (the same autograd graph, so the same summation order
        # of a row's gradient contributions): only the table and its row indices differ
        table, target_rows, sampled_rows = ((self.weight, targets, sampled) if rows is None
                                            else (rows.weight, rows.positions(targets), rows.positions(sampled)))
        # log expected count of each class in `tries` draws: log(1 - (1 - p)^tries)
        log_q = torch.log(-torch.expm1(tries * torch.log1p(-self.sampler_probs)))   # (V,)
        true_logits = (hidden * table[target_rows]).sum(-1) + self.bias[targets] - log_q[targets]
        sampled_logits = F.linear(hidden, table[sampled_rows], self.bias[sampled]) - log_q[sampled]
        hits = targets[:, None] == sampled[None, :]                            # (N, S)
        sampled_logits = sampled_logits.masked_fill(hits, torch.finfo(sampled_logits.dtype).min)
        logits = torch.cat([true_logits[:, None], sampled_logits], dim=1)      # (N, 1 + S)
        return F.cross_entropy(logits, torch.zeros_like(targets))


@dataclass(eq=False)       # tensors: identity, not elementwise ==
class SoftmaxRows:
    """The rows of ``softmax_W`` one training step touches, as a small table with its own gradient.

    bilm-tf (TensorFlow) gets ``IndexedSlices`` gradients for ``softmax_W`` and ``softmax_b`` from
    ``sampled_softmax_loss``'s ``embedding_lookup`` of the targets and negatives; its
    ``average_gradients`` concatenates the towers' slices and sums the slices of a repeated row
    (``_deduplicate_indexed_slices``), the global norm for clipping is taken over those rows, and
    its Adagrad updates only those rows and their accumulators. Here: :meth:`gather` copies the U
    distinct touched rows into a leaf ``weight`` (U, D) before the forward pass;
    :meth:`SoftmaxLayer.sampled_loss` reads them from it, so backward leaves their (U, D) gradient
    in ``weight.grad`` (each row's contributions summed by autograd in the same order as into the
    (V, D) gradient: the same graph, only the table differs) and nothing in ``softmax_W.grad``;
    :meth:`adagrad_step` then steps those rows with ``torch.optim.Adagrad``'s own function and
    writes them and their accumulators back. Global-norm clipping and the data-parallel average
    take ``weight`` in ``softmax_W``'s place. On a CPU the norm of the (U, D) rows (``ids``
    ascending) is bit-identical to that of the (V, D) gradient when D is a multiple of the float
    vector width (8 with AVX2, 16 with AVX-512; D is 64 and 512 in the profiles): the kernel adds
    element k's square into lane k mod width, in order, so the same squares meet in the same
    order, the (V, D) one's zeros aside (exact to add). On CUDA the reduction tree depends on the
    layout: the two norms, hence the weights, agree to float rounding.

    The bias (V,) keeps its dense gradient and dense Adagrad step: it is 1/D of the weight (3 MB
    at paper size), and its norm then sums exactly as before (a gathered (U,) bias would not:
    its lanes would differ). Its zero entries leave Adagrad's other bias rows unchanged, as above.

    Attributes:
        ids: (U,) int64 distinct touched row ids, ascending, on the softmax's device.
        weight: (U, D) leaf of ``softmax_W``'s dtype (float32), requires grad: ``softmax_W[ids]``
            at gather time.
    """

    ids: torch.Tensor
    weight: torch.Tensor

    @classmethod
    def gather(cls, softmax: SoftmaxLayer, ids: torch.Tensor) -> "SoftmaxRows":
        """The table of the distinct rows among ``ids`` (any shape, repeats allowed: every target
        and negative of the step, of every rank in a data-parallel run)."""
        unique = torch.unique(ids.reshape(-1))                              # sorted
        return cls(unique, softmax.weight.detach()[unique].requires_grad_())

    def positions(self, ids: torch.Tensor) -> torch.Tensor:
        """Each id's row in the table: same shape as ``ids``.

        Raises:
            ValueError: an id the table does not hold (it would silently train another row).
        """
        where = torch.searchsorted(self.ids, ids)
        if not torch.equal(self.ids[where.clamp(max=self.ids.numel() - 1)], ids):
            raise ValueError("an id outside the gathered softmax rows: gather every target and negative "
                             "of the step (of every rank) before the forward pass")
        return where

    def adagrad_step(self, optimizer: torch.optim.Optimizer, param: torch.nn.Parameter) -> None:
        """Apply ``weight.grad`` (after averaging and clipping) to ``param``'s rows ``ids`` with
        ``optimizer``'s Adagrad arithmetic and state: for each touched row r (step t, the group's
        lr, lr_decay and eps), ``sum_r += g_r^2``, ``w_r -= lr / (1 + (t - 1) lr_decay) * g_r /
        (sqrt(sum_r) + eps)``, computed by ``torch.optim.adagrad.adagrad`` (single-tensor or
        foreach, as the optimizer chooses for the device); the other rows and their
        accumulators are not touched (a zero gradient would leave them unchanged). ``param``'s
        step count advances by one, as a dense step's would, and the optimizer's state dict keeps
        its format: a checkpoint saved with either update resumes with the other.

        Raises:
            TypeError: ``optimizer`` is not a ``torch.optim.Adagrad``.
            ValueError: ``param`` is not in ``optimizer``; its group has weight decay (it would
                change every row, not only the touched ones); no gradient (backward not run).
        """
        if not isinstance(optimizer, torch.optim.Adagrad):
            raise TypeError(f"the sparse softmax update is Adagrad's; got {type(optimizer).__name__}")
        group = next((g for g in optimizer.param_groups if any(p is param for p in g["params"])), None)
        if group is None:
            raise ValueError("the softmax weight is not among the optimizer's parameters")
        if group["weight_decay"] != 0:
            raise ValueError("weight decay changes every softmax row: a sparse update cannot apply it")
        if self.weight.grad is None:
            raise ValueError("the gathered softmax rows have no gradient: run backward first")
        state = optimizer.state[param]
        with torch.no_grad():
            values, sums = param[self.ids], state["sum"][self.ids]               # (U, D) copies
            adagrad([values], [self.weight.grad], [sums], [state["step"]], fused=group["fused"],
                    foreach=group["foreach"], differentiable=False, has_complex=False, lr=group["lr"],
                    weight_decay=0.0, lr_decay=group["lr_decay"], eps=group["eps"], maximize=group["maximize"])
            param.index_copy_(0, self.ids, values)
            state["sum"].index_copy_(0, self.ids, sums)
