"""biLM pretraining (paper §3.4; bilm-tf ``train.py``): sampled softmax, Adagrad, global
gradient-norm clipping, state carried across batches, atomic checkpoints and exact resume.

The run length is either a number of epochs over the training text (the paper: 10) or a token
budget (target tokens per direction); either becomes a number of batches of
``batch_size x unroll_steps`` derived from the data, as bilm-tf's ``n_train_tokens``; the corpus
is cycled in seeded epochs as needed.
Resuming restores the weights, the optimizer, the carried LSTM states, every random generator
and the data-stream position, so a killed-and-resumed run ends with the weights of an
uninterrupted one.

Multi-GPU (data parallel), launched by ``torchrun`` from the repository root::

    torchrun --nproc-per-node 4 -m stages.pretrain_bilm --threads 8

When the ``torch.distributed`` environment says ``WORLD_SIZE`` > 1, :func:`pretrain` joins the
process group (``env://``; nccl on CUDA, gloo on CPU; the device is ``cuda:$LOCAL_RANK`` when CUDA
is available) unless the caller already did, and trains as bilm-tf does with ``n_gpus``:

- ``batch_size`` is per rank (bilm-tf: per GPU); one update consumes a global batch of
  ``world_size x batch_size`` rows, so the number of updates is the data (or the token budget)
  over ``batch_size x unroll_steps x world_size`` (:meth:`PretrainConfig.n_batches`).
- Every rank packs the same global batch from the same seeded streams and keeps only its own rows
  (rank r: rows ``r*B .. (r+1)*B - 1``), as bilm-tf splits ``iter_batches(batch_size * n_gpus)``
  across GPUs. Rows are refilled from one shared shuffled sentence order, so within an epoch each
  sentence is trained on by exactly one rank; a row's sentence continues on the same rank, whose
  carried LSTM state for that row is therefore correct.
- Every rank draws the same sampled-softmax negatives (one shared sampler seed and draw sequence)
  and gradients are averaged over ranks before clipping, so an update equals the single-process
  update on the concatenated global batch (up to float summation order; ``tests/unit/test_ddp.py``).
  Dropout masks differ between ranks (each rank reseeds its dropout generator from (seed, rank)).
- Only rank 0 writes the (atomic) checkpoint, after gathering every rank's carried states (stored
  as the rows of the global batch) and random generator states into it; every rank resumes from
  that one file, so ``checkpoint_dir`` must be on a file system all ranks see (one machine: any).
  A checkpoint is only resumed by a run with the same world size.
- ``log_metrics`` and the progress display run on rank 0; logged losses are averaged over ranks.

``pretrain.precision``: ``fp32`` (default) or ``bf16`` — bf16 autocast of the forward pass (master
weights, Adagrad state and the loss stay fp32, the carried LSTM states come out in bf16; no loss
scaling is needed with bf16). bf16 needs a
CUDA device; on CPU it is rejected with an error rather than silently trained in fp32, because the
recorded parameters would then misdescribe the model.

Without the torchrun environment nothing of the above applies: one process on the CPU, with
weights bit-identical to those of the code before multi-GPU support, for the same seed
(``torchrun --nproc-per-node 1`` trains one process on ``cuda:0``). The CUDA/NCCL and bf16 paths
are tested only as far as a CPU allows (gloo); see ``tests/unit/test_ddp.py``.
"""

from __future__ import annotations

import contextlib
import copy
import hashlib
import json
import math
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

import numpy as np
import torch
import torch.distributed as dist

from ..checks import check_count
from ..console import Progress, log
from ..data.lm_batches import LMStream, TypeTable
from ..data.prefetch import Prefetcher
from ..data.vocabulary import Vocabulary
from ..fingerprint import NOT_OUTPUT_MODULES, code_fingerprint, local_imports
from ..io import atomic_path, read_json, write_json
from .model import BiLM, BiLMConfig

CHECKPOINT = "checkpoint.pt"
PRECISIONS = ("fp32", "bf16")


@dataclass
class PretrainConfig:
    """The ``pretrain`` params section."""

    seed: int = 0
    token_budget: int = 1_000_000   # target tokens per direction; used when epochs is 0
    epochs: float = 0.0             # passes over the training text (paper: 10); overrides the budget
    batch_size: int = 128
    unroll_steps: int = 20
    n_negative_samples: int = 8192
    learning_rate: float = 0.2
    initial_accumulator: float = 1.0
    grad_clip: float = 10.0
    checkpoint_every: int = 500
    log_every: int = 50
    softmax_bias_init: str = "zeros"  # "zeros" (bilm-tf) or "unigram" (log training frequencies)
    precision: str = "fp32"         # "fp32" or "bf16" (autocast; CUDA only)
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_params(cls, section: dict[str, Any]) -> "PretrainConfig":
        known = {k: v for k, v in section.items() if k in cls.__dataclass_fields__ and k != "extra"}
        return cls(**known, extra={k: v for k, v in section.items() if k not in known})

    def check(self) -> None:
        """Every count, size and rate in its domain (the params schema checks the same for
        ``params.yaml``; this guards the Python API).

        Raises:
            ValueError: naming the first setting out of its domain and its value.
        """
        for name in ("batch_size", "unroll_steps", "n_negative_samples", "checkpoint_every", "log_every"):
            check_count(getattr(self, name), f"pretrain.{name}")
        for name, positive in (("learning_rate", True), ("grad_clip", True), ("initial_accumulator", False),
                               ("epochs", False), ("token_budget", False)):
            value = getattr(self, name)
            ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) \
                and (value > 0 if positive else value >= 0)
            if not ok:
                raise ValueError(f"pretrain.{name} must be a finite number {'> 0' if positive else '>= 0'}, "
                                 f"got {value!r}")
        if self.precision not in PRECISIONS:
            raise ValueError(f"pretrain.precision must be one of {PRECISIONS}, got {self.precision!r}")

    def n_batches(self, n_train_tokens: int, world_size: int = 1) -> int:
        """Number of updates: ``epochs x n_train_tokens`` (bilm-tf: word tokens of the training
        text, boundaries not counted) or the token budget, over ``batch_size x unroll_steps x
        world_size`` (``batch_size`` is per rank: bilm-tf's per-GPU batch times ``n_gpus``)."""
        if self.epochs < 0 or self.token_budget < 0:
            raise ValueError(f"epochs and token_budget must be >= 0, got {self.epochs}, {self.token_budget}")
        tokens = self.epochs * n_train_tokens if self.epochs > 0 else self.token_budget
        return max(1, math.ceil(tokens / (self.batch_size * self.unroll_steps * world_size)))


# Code whose edits invalidate a checkpoint: what this module runs, found by the project's one
# import scan (the same files the pretraining stage depends on, less the stage's own entry point),
# without the modules that only log.
_PACKAGE = Path(__file__).resolve().parents[1]
_CODE = sorted(local_imports(Path(__file__)) - set(NOT_OUTPUT_MODULES))


@dataclass(frozen=True)
class StartFrom:
    """Where a run starts instead of from random weights: domain fine-tuning (paper §3.4) continues
    a pretrained biLM as bilm-tf's restart does, with its weights and, when the pretraining
    checkpoint holds them, the Adagrad accumulators and step counts (``optimizer``; None starts
    them afresh at ``initial_accumulator``).

    Attributes:
        model: the biLM's state dict (its config must be the run's).
        optimizer: the ``torch.optim.Adagrad`` state dict saved with those weights, or None.
        identity: names the start point (e.g. a hash of the weight file); part of the run's
            fingerprint, so a fine-tuning checkpoint is only resumed on top of the same start.
    """

    model: dict[str, torch.Tensor]
    optimizer: dict[str, Any] | None
    identity: str


def _fingerprint(model_config: BiLMConfig, cfg: PretrainConfig, n_sentences: int, n_types: int,
                 world_size: int, start: str = "") -> str:
    """Identifies a run: a checkpoint from a different configuration, corpus, world size, start
    point or biLM code is never resumed (it would silently stand in for a model the current code
    never trained). The code is hashed without comments and docstrings, which cannot change what
    it trains."""
    code = code_fingerprint(_CODE, _PACKAGE)
    blob = json.dumps([model_config.to_options(), cfg.__dict__, n_sentences, n_types, world_size, code]
                      + ([start] if start else []), sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def _detach(states):
    return [(h.detach(), c.detach()) for h, c in states] if states is not None else None


@dataclass(frozen=True)
class _Dist:
    """This process's place in a data-parallel run (rank 0 of 1 on the CPU without torchrun)."""

    rank: int = 0
    world_size: int = 1
    device: torch.device = torch.device("cpu")
    owns_group: bool = False    # True: pretrain() created the process group and destroys it

    @classmethod
    def setup(cls) -> "_Dist":
        """Read the torchrun environment; join the process group when WORLD_SIZE > 1."""
        local_rank = os.environ.get("LOCAL_RANK")
        cuda = local_rank is not None and torch.cuda.is_available()
        device = torch.device("cuda", int(local_rank)) if cuda else torch.device("cpu")
        if cuda:
            torch.cuda.set_device(device)
            # cuBLAS is only deterministic with a fixed workspace (use_deterministic_algorithms)
            os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
        if dist.is_available() and dist.is_initialized():
            return cls(dist.get_rank(), dist.get_world_size(), device) if dist.get_world_size() > 1 \
                else cls(device=device)
        if int(os.environ.get("WORLD_SIZE", "1")) <= 1:
            return cls(device=device)
        if cuda:
            dist.init_process_group("nccl", device_id=device)
        else:
            dist.init_process_group("gloo")
        return cls(dist.get_rank(), dist.get_world_size(), device, owns_group=True)

    def rows(self, batch_size: int) -> slice:
        """This rank's rows of a global batch of ``world_size x batch_size`` rows."""
        return slice(self.rank * batch_size, (self.rank + 1) * batch_size)

    def close(self) -> None:
        if self.owns_group:
            dist.destroy_process_group()


def _average_gradients(params: list[torch.nn.Parameter], world_size: int) -> None:
    """Replace every gradient by its mean over the ranks.

    Why not DistributedDataParallel: training drives the model through ``token_embedder``,
    ``direction_hidden`` and ``softmax.sampled_loss`` (one token layer for both directions, state
    carried across batches), never through ``BiLM.forward``, while DDP prepares its gradient
    reduction in its wrapper's ``forward``; using it would take a wrapper module whose only job
    is to own that call. Averaging after ``backward`` is a few lines, makes the equivalence with a
    single-process step on the global batch evident (each rank's loss is the mean over its equal
    share of tokens, so the mean of the rank gradients is the gradient of the global mean), and
    clips the averaged gradient, as bilm-tf clips the tower-averaged one. The price is speed, not
    correctness: no overlap of communication with backward (the dense softmax gradient, V x 512,
    is the largest message).

    Every rank runs the same code on same-shaped batches, so the set of parameters with a
    gradient (here: all of them) is the same on every rank and the collectives line up.
    """
    for p in params:
        if p.grad is not None:
            dist.all_reduce(p.grad)
            p.grad.div_(world_size)


class _Quiet:
    """Stands in for :class:`Progress` on ranks other than 0."""

    def __enter__(self) -> "_Quiet":
        return self

    def __exit__(self, *exc) -> None:
        return None

    def advance(self, n: int = 1) -> None:
        pass

    def note(self, text: str) -> None:
        pass


def pretrain(model_config: BiLMConfig, cfg: PretrainConfig, sentences: list[list[str]],
             vocab: Vocabulary, checkpoint_dir: Path,
             log_metrics: Callable[[dict[str, float], int], None] | None = None,
             stop_after: int | None = None, start: StartFrom | None = None) -> tuple[BiLM, dict[str, float]]:
    """Train a biLM on tokenized sentences (data-parallel under torchrun: see the module docstring).

    Args:
        model_config: the biLM (its ``n_tokens_vocab`` must equal ``len(vocab)``).
        cfg: optimisation and budget; ``batch_size`` is per rank.
        sentences: training sentences (token lists, without boundary tokens); every rank passes
            the whole corpus and trains on its own rows of each global batch.
        vocab: frequency-sorted vocabulary (targets; OOV -> ``<UNK>``).
        checkpoint_dir: where ``checkpoint.pt`` is written (by rank 0) every ``checkpoint_every``
            batches and resumed from (by every rank) when its fingerprint matches.
        log_metrics: called with ({name: value}, batch) every ``log_every`` batches, on rank 0.
        stop_after: stop after this many batches in total (tests: simulate a kill).
        start: continue from these weights (and Adagrad state) instead of a fresh model: domain
            fine-tuning (:mod:`elmo_repro.bilm.finetune`). A checkpoint of this run still takes
            precedence (resume after a kill).

    Returns:
        The trained model (the same weights on every rank) and summary statistics
        (``train_sampled_softmax_loss`` is the mean sampled-softmax loss of the last logging
        window over all ranks, in nats — not a perplexity).
    """
    if model_config.n_tokens_vocab != len(vocab):
        raise ValueError(f"n_tokens_vocab={model_config.n_tokens_vocab} but the vocabulary has {len(vocab)}")
    cfg.check()
    # the sentences' shape, not every token (the corpus can hold ~800M): a str would train on characters
    if isinstance(sentences, str) or not isinstance(sentences, list):
        raise TypeError(f"pretrain: expected a list of tokenized sentences, got a {type(sentences).__name__}")
    bad = next((i for i, s in enumerate(sentences) if not isinstance(s, (list, tuple))), None)
    if bad is not None:
        raise TypeError(f"pretrain: sentence {bad}: expected a tokenized sentence (a list of str), "
                        f"got a {type(sentences[bad]).__name__}")
    # Multi-threaded CPU backward of the indexed token lookup accumulates in a run-dependent order;
    # deterministic kernels make the same seed give bit-identical weights across processes.
    previous = torch.are_deterministic_algorithms_enabled()
    ctx = _Dist.setup()
    try:
        if cfg.precision == "bf16" and ctx.device.type != "cuda":
            raise ValueError("pretrain.precision 'bf16' needs a CUDA device (bf16 autocast is GPU-only here); "
                             "use 'fp32' on the CPU")
        torch.use_deterministic_algorithms(True)
        return _pretrain(model_config, cfg, sentences, vocab, checkpoint_dir, log_metrics, stop_after, ctx, start)
    finally:
        torch.use_deterministic_algorithms(previous)
        ctx.close()


def _pretrain(model_config: BiLMConfig, cfg: PretrainConfig, sentences: list[list[str]],
              vocab: Vocabulary, checkpoint_dir: Path,
              log_metrics: Callable[[dict[str, float], int], None] | None,
              stop_after: int | None, ctx: _Dist, start: StartFrom | None = None) -> tuple[BiLM, dict[str, float]]:
    rank, world, device = ctx.rank, ctx.world_size, ctx.device
    say = log if rank == 0 else (lambda message: None)
    torch.manual_seed(cfg.seed)
    model = BiLM(model_config)
    if cfg.softmax_bias_init == "unigram":
        init_unigram_bias(model, vocab)
    elif cfg.softmax_bias_init != "zeros":
        raise ValueError(f"softmax_bias_init must be 'zeros' or 'unigram', got {cfg.softmax_bias_init!r}")
    model.to(device)
    if world > 1:
        for p in model.parameters():      # the same seed already gives the same weights; as DDP,
            dist.broadcast(p.data, src=0)  # make rank 0's authoritative anyway
        # dropout masks: one generator per rank (CPU and CUDA), seeded from (seed, rank)
        torch.manual_seed(int(np.random.SeedSequence([cfg.seed, rank]).generate_state(1)[0]))
    optimizer = torch.optim.Adagrad(model.parameters(), lr=cfg.learning_rate,
                                    initial_accumulator_value=cfg.initial_accumulator)
    if start is not None:
        _load_start(model, optimizer, start, cfg)
    # the negatives' generator is seeded alike on every rank and drawn from identically: all ranks
    # use the same negatives, as a single process on the global batch would
    sampler = torch.Generator().manual_seed(cfg.seed + 7919)
    table, encoded = TypeTable.build(sentences, vocab)
    char_ids = torch.from_numpy(table.char_ids).to(device)                   # (n_types, 50)
    vocab_ids = torch.from_numpy(table.vocab_ids).to(device)                 # (n_types,)
    # every rank packs the global batch (world x batch_size rows) and keeps its own rows
    streams = [LMStream(encoded, cfg.batch_size * world, cfg.unroll_steps, seed=2 * cfg.seed + d,
                        reverse=bool(d)) for d in (0, 1)]
    rows = ctx.rows(cfg.batch_size)
    states: list = [None, None]
    fingerprint = _fingerprint(model_config, cfg, len(encoded), len(table.types), world,
                               start.identity if start is not None else "")
    start_batch, resumed_summary = 0, {}

    ckpt_path = Path(checkpoint_dir) / CHECKPOINT
    if ckpt_path.exists():
        ckpt = torch.load(ckpt_path, map_location="cpu", weights_only=True)
        if ckpt["fingerprint"] == fingerprint:
            model.load_state_dict(ckpt["model"])
            optimizer.load_state_dict(ckpt["optimizer"])
            torch.set_rng_state(ckpt["torch_rng"][rank])
            if device.type == "cuda":
                torch.cuda.set_rng_state(ckpt["cuda_rng"][rank], device)
            sampler.set_state(ckpt["sampler_rng"])
            states = [None if not s else [(h[rows].to(device), c[rows].to(device)) for h, c in s]
                      for s in ckpt["states"]]
            start_batch = int(ckpt["batch"])
            resumed_summary = dict(ckpt.get("summary", {}))   # the last logged window's statistics
            for stream in streams:
                stream.skip(start_batch)
            say(f"resumed from {ckpt_path} at batch {start_batch}")
        else:
            say(f"ignoring {ckpt_path}: it belongs to a different configuration or corpus")
    if world > 1:
        starts: list = [None] * world
        dist.all_gather_object(starts, start_batch)
        if len(set(starts)) != 1:
            raise RuntimeError(f"ranks would resume at different batches {starts}: the checkpoint "
                               f"directory {checkpoint_dir} must be one that every rank sees")

    total_batches = cfg.n_batches(sum(len(s) for s in encoded), world)
    n_batches = total_batches if stop_after is None else min(total_batches, stop_after)
    global_batch = world * cfg.batch_size
    say(f"pretraining {total_batches} batches of {cfg.batch_size}x{cfg.unroll_steps}"
        + (f" per rank on {world} ranks" if world > 1 else "")
        + f" ({total_batches * global_batch * cfg.unroll_steps:,} target tokens per direction), "
        f"{sum(p.numel() for p in model.parameters()):,} parameters, vocabulary {len(vocab):,}, "
        f"{len(table.types):,} input types")
    autocast = (torch.autocast("cuda", dtype=torch.bfloat16) if cfg.precision == "bf16"
                else contextlib.nullcontext())
    model.train()
    window_loss, window_batches, window_start = 0.0, 0, time.monotonic()
    # A run resumed from its final checkpoint trains no batch: it reports the statistics saved there.
    summary: dict[str, float] = resumed_summary
    progress_display = (Progress("pretraining", n_batches, "batches", completed=start_batch) if rank == 0
                        else _Quiet())
    with progress_display as progress, Prefetcher(
            _packed_batches(streams, rows, n_batches - start_batch, device), name="lm-batches") as batches:
        for batch, (inputs, targets) in zip(range(start_batch, n_batches), batches):
            inputs = inputs.to(device, non_blocking=True)                     # (2, B, T) type ids
            targets = targets.to(device, non_blocking=True)                   # (2, B, T) type ids
            with autocast:
                unique, inverse = torch.unique(inputs, return_inverse=True)
                tokens = model.token_embedder(char_ids[unique])[inverse]      # (2, B, T, P)
                loss = 0.0
                for d in range(2):
                    hidden, states[d] = model.direction_hidden(tokens[d], bool(d), states[d])
                    flat_targets = vocab_ids[targets[d].reshape(-1)]          # (B*T,)
                    loss = loss + 0.5 * model.softmax.sampled_loss(
                        hidden.reshape(-1, hidden.size(-1)), flat_targets, cfg.n_negative_samples, sampler)
            optimizer.zero_grad(set_to_none=True)
            # bilm-tf differentiates loss * unroll_steps: with Adagrad's initial accumulator of 1.0
            # this scale sets the effective step size, so it is part of the recipe.
            (loss * cfg.unroll_steps).backward()
            if world > 1:
                _average_gradients(list(model.parameters()), world)
            grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)
            _stop_if_non_finite(loss, grad_norm, batch + 1, ckpt_path, world, device)   # before the update
            optimizer.step()
            states = [_detach(s) for s in states]
            window_loss += float(loss.detach())
            window_batches += 1
            done = batch + 1
            if done % cfg.log_every == 0 or done == n_batches:
                elapsed = time.monotonic() - window_start
                if world > 1:   # mean over ranks (equal token counts): the global batch's loss
                    total = torch.tensor([window_loss], dtype=torch.float64, device=device)
                    dist.all_reduce(total)
                    window_loss = float(total) / world
                summary = {"train_sampled_softmax_loss": window_loss / window_batches,
                           "grad_norm": float(grad_norm),
                           "tokens_per_second": window_batches * 2 * global_batch * cfg.unroll_steps / elapsed}
                if log_metrics and rank == 0:
                    log_metrics(summary, done)
                progress.note(f"sampled-softmax loss {summary['train_sampled_softmax_loss']:.3f} nats, "
                              f"{summary['tokens_per_second']:,.0f} tokens/s")
                window_loss, window_batches, window_start = 0.0, 0, time.monotonic()
            if done % cfg.checkpoint_every == 0 or done == n_batches:
                _stop_if_non_finite_weights(model, done, ckpt_path)                  # never save them
                save_checkpoint(ckpt_path, model, optimizer, sampler, states, done, fingerprint, ctx, summary)
            progress.advance()
    summary["batches"] = float(n_batches)
    summary["target_tokens_per_direction"] = float(n_batches * global_batch * cfg.unroll_steps)
    return model, summary


def _load_start(model: BiLM, optimizer: torch.optim.Optimizer, start: StartFrom, cfg: PretrainConfig) -> None:
    """Put ``start``'s weights and Adagrad state into the fresh ``model`` and ``optimizer``; the
    learning rate stays this run's (bilm-tf's restart keeps its accumulators, not its schedule)."""
    model.load_state_dict(start.model)
    if start.optimizer is not None:
        # a copy: Optimizer.load_state_dict keeps same-device tensors as they are, and Adagrad's
        # in-place updates would change the start point under a later run from it
        optimizer.load_state_dict(copy.deepcopy(start.optimizer))
        for group in optimizer.param_groups:
            group["lr"] = cfg.learning_rate


class NonFiniteTrainingError(FloatingPointError):
    """Pretraining met a non-finite loss, gradient or weight; the checkpoint on disk is the last
    good one (nothing non-finite is ever written)."""


_LIKELY_CAUSES = ("likely causes: a learning rate or initial Adagrad accumulator that lets the weights "
                  "overflow, a grad_clip too large to bound the step, or bf16 overflow; lower them and "
                  "rerun (the run resumes from the checkpoint)")


def _last_good(ckpt_path: Path) -> str:
    if not ckpt_path.exists():
        return "no checkpoint was written yet"
    return f"the last good checkpoint is {ckpt_path}"


def _stop_if_non_finite(loss: torch.Tensor, grad_norm: torch.Tensor, batch: int, ckpt_path: Path,
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
            f"({float(values[1])}); the update was not applied and {_last_good(ckpt_path)}; {_LIKELY_CAUSES}")


def _stop_if_non_finite_weights(model: BiLM, batch: int, ckpt_path: Path) -> None:
    """Raise :class:`NonFiniteTrainingError` if an update left a non-finite weight (checked before
    each checkpoint, so that none is saved)."""
    bad = [name for name, p in model.named_parameters() if not bool(torch.isfinite(p).all())]
    if bad:
        raise NonFiniteTrainingError(
            f"pretraining batch {batch}: the update left non-finite weights in {', '.join(bad[:5])}"
            f"{' ...' if len(bad) > 5 else ''}; not saved, {_last_good(ckpt_path)}; {_LIKELY_CAUSES}")


def _packed_batches(streams: list[LMStream], rows: slice, n: int, device: torch.device
                    ) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
    """The next ``n`` (inputs, targets) pairs of this rank's rows, each (2, B, T) int64 type ids
    (forward, backward), pinned for a CUDA copy; run ahead in a :class:`Prefetcher` thread."""
    for _ in range(n):
        (in_f, tg_f), (in_b, tg_b) = next(streams[0]), next(streams[1])
        inputs = torch.from_numpy(np.stack([in_f[rows], in_b[rows]]))
        targets = torch.from_numpy(np.stack([tg_f[rows], tg_b[rows]]))
        if device.type == "cuda":
            inputs, targets = inputs.pin_memory(), targets.pin_memory()
        yield inputs, targets


def init_unigram_bias(model: BiLM, vocab: Vocabulary) -> None:
    """Start the softmax at the unigram model: bias_w = log((count_w + 1) / (total + V)).

    With tiny token budgets the sampled softmax needs many updates to learn the word frequencies
    from a zero bias; starting from them lets the LSTM spend its budget on context.
    """
    if vocab.counts is None:
        raise ValueError("unigram bias initialisation needs the vocabulary's counts")
    counts = torch.tensor(vocab.counts, dtype=torch.float64) + 1.0
    with torch.no_grad():
        model.softmax.bias.copy_(torch.log(counts / counts.sum()).float())


def save_checkpoint(path: Path, model: BiLM, optimizer: torch.optim.Optimizer, sampler: torch.Generator,
                    states: list, batch: int, fingerprint: str, ctx: _Dist = _Dist(),
                    summary: dict[str, float] | None = None) -> None:
    """Write the full training state atomically (temporary file + rename).

    Data-parallel: every rank's carried states and random generators are gathered to rank 0,
    which alone writes one file (the states as the rows of the global batch, in rank order; the
    generators as one entry per rank); all ranks wait until it is in place, so a run that resumes
    straight away reads it on every rank. Weights, optimizer and sampler are equal on all ranks.
    """
    cuda = ctx.device.type == "cuda"
    local = {"states": [[(h.cpu(), c.cpu()) for h, c in s] if s is not None else [] for s in states],
             "torch_rng": torch.get_rng_state(),
             "cuda_rng": torch.cuda.get_rng_state(ctx.device) if cuda else None}
    if ctx.world_size > 1:
        gathered: list | None = [None] * ctx.world_size if ctx.rank == 0 else None
        dist.gather_object(local, gathered, dst=0)
    else:
        gathered = [local]
    if ctx.rank == 0:
        assert gathered is not None
        merged = []
        for d in range(len(states)):
            per_rank = [g["states"][d] for g in gathered]
            merged.append([] if not per_rank[0] else
                          [[torch.cat([r[k][i] for r in per_rank]) for i in (0, 1)] for k in range(len(per_rank[0]))])
        payload = {
            "model": model.state_dict(), "optimizer": optimizer.state_dict(),
            "torch_rng": [g["torch_rng"] for g in gathered], "sampler_rng": sampler.get_state(),
            "cuda_rng": [g["cuda_rng"] for g in gathered] if cuda else [],
            "states": merged, "batch": batch, "fingerprint": fingerprint, "world_size": ctx.world_size,
            "summary": dict(summary or {}),
        }
        _save_reproducibly(payload, path)
    if ctx.world_size > 1:
        dist.barrier()


def _save_reproducibly(obj: Any, path: Path) -> None:
    """``torch.save`` atomically, through a file handle: given a path, torch names the zip
    archive's records after the (temporary, random) file name, so equal weights would give
    different bytes, and a different DVC hash, on every run."""
    with atomic_path(path) as tmp, open(tmp, "wb") as handle:
        torch.save(obj, handle)


def save_model(model: BiLM, vocab: Vocabulary, out_dir: Path) -> None:
    """Write ``weights.pt`` (state dict), ``options.json`` (bilm-tf layout) and ``vocab.txt``."""
    out_dir = Path(out_dir)
    _save_reproducibly(model.state_dict(), out_dir / "weights.pt")
    write_json(out_dir / "options.json", model.config.to_options())
    vocab.save(out_dir / "vocab.txt", out_dir / "counts.tsv")


def load_model(model_dir: Path) -> tuple[BiLM, Vocabulary]:
    """Load a model written by :func:`save_model` (``weights_only`` torch loading), in eval mode."""
    model_dir = Path(model_dir)
    options = read_json(model_dir / "options.json")
    vocab = Vocabulary.load(model_dir / "vocab.txt", model_dir / "counts.tsv")
    model = BiLM(BiLMConfig.from_options(options))
    model.load_state_dict(torch.load(model_dir / "weights.pt", map_location="cpu", weights_only=True))
    return model.eval(), vocab
