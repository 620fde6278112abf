"""biLM pretraining (paper §3.4; bilm-tf ``train.py``): sampled softmax, Adagrad, global
gradient-norm clipping, state carried across batches, atomic checkpoints and exact resume.

The softmax update is sparse, as bilm-tf's (``IndexedSlices``): only the rows of ``softmax_W`` that
are a target or a sampled negative of the batch get a gradient and an Adagrad step
(:class:`~elmo_repro.bilm.sampled_softmax.SoftmaxRows`), the others and their accumulators stay as
they are, which is what the dense update does to them (a zero gradient). On a CPU the weights are
bit-identical to the dense update's (``tests/unit/test_sparse_softmax_update.py``; the tiny
profile's too); on CUDA the global gradient norm sums in another order, so they agree to float
rounding. With the full softmax (negatives >= vocabulary) every row is touched and the update is
dense.

The run length is either a number of epochs over the training text (the paper: 10) or a token
budget (target tokens per direction); either becomes a number of batches of
``batch_size x unroll_steps`` derived from the data, as bilm-tf's ``n_train_tokens``; the corpus
is cycled in seeded epochs as needed.
Resuming restores the weights, the optimizer, the carried LSTM states, every random generator
and the data-stream position, so a killed-and-resumed run ends with the weights of an
uninterrupted one. The text is streamed shard by shard (:class:`~elmo_repro.data.lm_shards.ShardedText`;
a list of sentences is one shard); the checkpoint stores each stream's position (shard, sentence,
generator, unfinished rows), so resuming reads only the current shard, not the text before it.

Multi-GPU (data parallel), launched by ``torchrun`` from the repository root::

    torchrun --nproc-per-node 4 -m stages.pretrain_bilm --threads 8

When the ``torch.distributed`` environment says ``WORLD_SIZE`` > 1, :func:`pretrain` joins the
process group (``env://``; nccl on CUDA, gloo on CPU; the device is ``cuda:$LOCAL_RANK`` when CUDA
is available) unless the caller already did, and trains as bilm-tf does with ``n_gpus``:

- ``batch_size`` is per rank (bilm-tf: per GPU); one update consumes a global batch of
  ``world_size x batch_size`` rows, so the number of updates is the data (or the token budget)
  over ``batch_size x unroll_steps x world_size`` (:func:`count_batches`).
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
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping

import numpy as np
import torch
import torch.distributed as dist
from pydantic import ValidationError

from ..console import Progress, log
from ..data.lm_batches import InMemoryText, LMStream, TypeTable
from ..data.lm_shards import ShardedText
from ..data.prefetch import Prefetcher
from ..data.vocabulary import Vocabulary
from ..device import on_cpu
from ..experiments.pretraining import PretrainSection
from ..fingerprint import NOT_OUTPUT_MODULES, code_fingerprint, local_imports
from .checkpoint import CHECKPOINT, load_model, save_checkpoint, save_model  # noqa: F401  (the training API)
from .distributed import RankContext, all_ranks, average_gradients, packed_batches
from .model import BiLM, BiLMConfig
from .nonfinite import NonFiniteTrainingError, stop_if_non_finite, stop_if_non_finite_weights  # noqa: F401
from .sampled_softmax import SoftmaxRows

# The ``pretrain`` params section is the training configuration: declared once, in the schema.
PretrainConfig = PretrainSection


def pretrain_config(section: Mapping[str, Any]) -> PretrainConfig:
    """The training configuration from a ``pretrain`` section (fine-tuning: ``pretrain`` updated
    by ``finetune``), checked as ``params.yaml`` is.

    Raises:
        ValueError: every setting missing, unknown or out of its domain, by key path
            (``pretrain.learning_rate: must be > 0, got 0.0``).
    """
    try:
        return PretrainConfig.model_validate(dict(section))
    except ValidationError as err:
        raise ValueError("; ".join(_problem(error) for error in err.errors(include_url=False))) from None


def _problem(error: dict) -> str:
    """``pretrain.<key>: <pydantic's message> (got <value>)``, as the params schema words it."""
    where = ".".join(str(part) for part in ("pretrain", *error["loc"]))
    got = f" (got {error['input']!r})" if error["type"] not in ("missing", "value_error") else ""
    message = error["msg"].removeprefix("Value error, ")
    return f"{where}: {'unknown key' if error['type'] == 'extra_forbidden' else message}{got}"


def count_batches(cfg: PretrainConfig, n_train_tokens: int, world_size: int = 1) -> int:
    """Number of updates: ``epochs x n_train_tokens`` (bilm-tf: word tokens of the training text,
    boundaries not counted) or the token budget, over ``batch_size x unroll_steps x world_size``
    (``batch_size`` is per rank: bilm-tf's per-GPU batch times ``n_gpus``)."""
    tokens = cfg.epochs * n_train_tokens if cfg.epochs > 0 else cfg.token_budget
    return max(1, math.ceil(tokens / (cfg.batch_size * cfg.unroll_steps * world_size)))


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


def _fingerprint(model_config: BiLMConfig, cfg: PretrainConfig, shard_sizes: list[int], n_types: int,
                 world_size: int, start: str = "") -> str:
    """Identifies a run: a checkpoint from a different configuration, corpus (sentences per
    shard), world size, start point or biLM code is never resumed (it would silently stand in for
    a model the current code never trained). The code is hashed without comments and docstrings,
    which cannot change what it trains."""
    code = code_fingerprint(_CODE, _PACKAGE)
    blob = json.dumps([model_config.to_options(), cfg.model_dump(), shard_sizes, n_types, world_size, code]
                      + ([start] if start else []), sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def _detach(states):
    return [(h.detach(), c.detach()) for h, c in states] if states is not None else None


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


def pretrain(model_config: BiLMConfig, cfg: PretrainConfig, sentences: list[list[str]] | ShardedText,
             vocab: Vocabulary, checkpoint_dir: Path,
             log_metrics: Callable[[dict[str, float], int], None] | None = None,
             stop_after: int | None = None, start: StartFrom | None = None,
             sparse_softmax_update: bool = True, device: torch.device | None = None) -> tuple[BiLM, dict[str, float]]:
    """Train a biLM on tokenized sentences (data-parallel under torchrun: see the module docstring).

    Args:
        model_config: the biLM (its ``n_tokens_vocab`` must equal ``len(vocab)``).
        cfg: optimisation and budget; ``batch_size`` is per rank.
        sentences: the training text: a :class:`~elmo_repro.data.lm_shards.ShardedText` (streamed
            one shard at a time), or tokenized sentences (token
            lists, without boundary tokens; one shard). Every rank passes the whole text and
            trains on its own rows of each global batch.
        vocab: frequency-sorted vocabulary (targets; OOV -> ``<UNK>``).
        checkpoint_dir: where ``checkpoint.pt`` is written (by rank 0) every ``checkpoint_every``
            batches and resumed from (by every rank) when its fingerprint matches.
        log_metrics: called with ({name: value}, batch) every ``log_every`` batches, on rank 0.
        stop_after: stop after this many batches in total (tests: simulate a kill).
        start: continue from these weights (and Adagrad state) instead of a fresh model: domain
            fine-tuning (:mod:`elmo_repro.bilm.finetune`). A checkpoint of this run still takes
            precedence (resume after a kill).
        sparse_softmax_update: step only the softmax rows the batch touches (the default, as
            bilm-tf; see the module docstring); False: the dense (V, D) gradient and Adagrad step
            of every row (the same arithmetic; kept as the reference the tests and the benchmark
            compare with). Not part of the run's identity: a checkpoint resumes with either.
        device: where to train (the stage's ``--device``; see
            :meth:`~elmo_repro.bilm.distributed.RankContext.setup`): ``cpu``, or ``cuda`` (under
            torchrun each rank's own GPU). None: CUDA exactly under torchrun with a GPU.

    Returns:
        The trained model (the same weights on every rank) and summary statistics
        (``train_sampled_softmax_loss`` is the mean sampled-softmax loss of the last logging
        window over all ranks, in nats — not a perplexity).
    """
    if model_config.n_tokens_vocab != len(vocab):
        raise ValueError(f"n_tokens_vocab={model_config.n_tokens_vocab} but the vocabulary has {len(vocab)}")
    cfg = pretrain_config(cfg.model_dump())        # guards the Python API as the schema guards params.yaml
    # the sentences' shape, not every token: a str would train on characters
    if not isinstance(sentences, (list, ShardedText)):
        raise TypeError(f"pretrain: expected a ShardedText or a list of tokenized sentences, "
                        f"got a {type(sentences).__name__}")
    bad = next((i for i, s in enumerate(sentences) if not isinstance(s, (list, tuple))), None) \
        if isinstance(sentences, list) else None
    if bad is not None:
        raise TypeError(f"pretrain: sentence {bad}: expected a tokenized sentence (a list of str), "
                        f"got a {type(sentences[bad]).__name__}")
    # Multi-threaded CPU backward of the indexed token lookup accumulates in a run-dependent order;
    # deterministic kernels make the same seed give bit-identical weights across processes.
    previous = torch.are_deterministic_algorithms_enabled()
    ctx = RankContext.setup(device)
    try:
        if cfg.precision == "bf16" and ctx.device.type != "cuda":
            raise ValueError("pretrain.precision 'bf16' needs a CUDA device (bf16 autocast is GPU-only here); "
                             "use 'fp32' on the CPU")
        torch.use_deterministic_algorithms(True)
        return _pretrain(model_config, cfg, sentences, vocab, checkpoint_dir, log_metrics, stop_after, ctx, start,
                         sparse_softmax_update)
    finally:
        torch.use_deterministic_algorithms(previous)
        ctx.close()


def _pretrain(model_config: BiLMConfig, cfg: PretrainConfig, sentences: list[list[str]] | ShardedText,
              vocab: Vocabulary, checkpoint_dir: Path,
              log_metrics: Callable[[dict[str, float], int], None] | None,
              stop_after: int | None, ctx: RankContext, start: StartFrom | None = None,
              sparse_softmax_update: bool = True) -> tuple[BiLM, dict[str, float]]:
    rank, world, device = ctx.rank, ctx.world_size, ctx.device
    say = log if rank == 0 else (lambda message: None)
    torch.manual_seed(cfg.seed)
    with on_cpu():                        # the seed's weights on any device, then moved there
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
    with on_cpu():                        # Adagrad keeps its step counts on the default device
        optimizer = torch.optim.Adagrad(model.parameters(), lr=cfg.learning_rate,
                                        initial_accumulator_value=cfg.initial_accumulator)
    if start is not None:
        _load_start(model, optimizer, start, cfg)
    # the negatives' generator is seeded alike on every rank and drawn from identically: all ranks
    # use the same negatives, as a single process on the global batch would
    sampler = torch.Generator().manual_seed(cfg.seed + 7919)
    if isinstance(sentences, ShardedText):
        table, text, n_tokens = TypeTable.from_index(sentences.types, vocab), sentences, sentences.n_tokens
        shard_sizes = [shard.sentences for shard in sentences.shards]
    else:
        table, encoded = TypeTable.build(sentences, vocab)
        text, n_tokens, shard_sizes = InMemoryText(encoded), sum(len(s) for s in encoded), [len(encoded)]
    char_ids = torch.from_numpy(table.char_ids).to(device)                   # (n_types, 50)
    vocab_ids = torch.from_numpy(table.vocab_ids).to(device)                 # (n_types,)
    # every rank packs the global batch (world x batch_size rows) and keeps its own rows
    streams = [LMStream(text, cfg.batch_size * world, cfg.unroll_steps, seed=2 * cfg.seed + d,
                        reverse=bool(d)) for d in (0, 1)]
    rows = ctx.rows(cfg.batch_size)
    states: list = [None, None]
    fingerprint = _fingerprint(model_config, cfg, shard_sizes, len(table.types), world,
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
            for stream, position in zip(streams, ckpt["streams"]):
                stream.restore(position)
            say(f"resumed from {ckpt_path} at batch {start_batch}")
        else:
            say(f"ignoring {ckpt_path}: it belongs to a different configuration or corpus")
    if world > 1:
        starts: list = [None] * world
        dist.all_gather_object(starts, start_batch)
        if len(set(starts)) != 1:
            raise RuntimeError(f"ranks would resume at different batches {starts}: the checkpoint "
                               f"directory {checkpoint_dir} must be one that every rank sees")

    total_batches = count_batches(cfg, n_tokens, world)
    n_batches = total_batches if stop_after is None else min(total_batches, stop_after)
    global_batch = world * cfg.batch_size
    say(f"pretraining {total_batches} batches of {cfg.batch_size}x{cfg.unroll_steps}"
        + (f" per rank on {world} ranks" if world > 1 else "")
        + f" ({total_batches * global_batch * cfg.unroll_steps:,} target tokens per direction), "
        f"{sum(p.numel() for p in model.parameters()):,} parameters, vocabulary {len(vocab):,}, "
        f"{len(table.types):,} input types")
    autocast = (torch.autocast("cuda", dtype=torch.bfloat16) if cfg.precision == "bf16"
                else contextlib.nullcontext())
    sparse = sparse_softmax_update and cfg.n_negative_samples < model.softmax.vocab_size
    params = list(model.parameters())
    model.train()
    window_loss, window_batches, window_start = 0.0, 0, time.monotonic()
    # A run resumed from its final checkpoint trains no batch: it reports the statistics saved there.
    summary: dict[str, float] = resumed_summary
    progress_display = (Progress("pretraining", n_batches, "batches", completed=start_batch) if rank == 0
                        else _Quiet())
    with progress_display as progress, Prefetcher(
            packed_batches(streams, rows, n_batches - start_batch, device), name="lm-batches") as batches:
        for batch, (inputs, targets, stream_positions) in zip(range(start_batch, n_batches), batches):
            inputs = inputs.to(device, non_blocking=True)                     # (2, B, T) type ids
            targets = targets.to(device, non_blocking=True)                   # (2, B, T) type ids
            flat_targets = vocab_ids[targets.reshape(2, -1)]                  # (2, B*T) row ids
            negatives, rows, grads = [None, None], None, params
            if sparse:
                # the rows this step touches, known before the forward pass: both directions'
                # negatives (drawn in the order sampled_loss would draw them) and the targets of
                # every rank, so that all ranks gather the same rows
                negatives = [model.softmax.draw_negatives(cfg.n_negative_samples, sampler) for _ in range(2)]
                rows = SoftmaxRows.gather(model.softmax, torch.cat(
                    [all_ranks(flat_targets, world), negatives[0][0], negatives[1][0]]))
                grads = [rows.weight if p is model.softmax.weight else p for p in params]   # same order
            with autocast:
                unique, inverse = torch.unique(inputs, return_inverse=True)
                tokens = model.token_embedder(char_ids[unique])[inverse]      # (2, B, T, P)
                loss = 0.0
                for d in range(2):
                    hidden, states[d] = model.direction_hidden(tokens[d], bool(d), states[d])
                    loss = loss + 0.5 * model.softmax.sampled_loss(
                        hidden.reshape(-1, hidden.size(-1)), flat_targets[d], cfg.n_negative_samples, sampler,
                        negatives=negatives[d], rows=rows)
            optimizer.zero_grad(set_to_none=True)
            # bilm-tf differentiates loss * unroll_steps: with Adagrad's initial accumulator of 1.0
            # this scale sets the effective step size, so it is part of the recipe.
            (loss * cfg.unroll_steps).backward()
            if world > 1:
                average_gradients(grads, world)
            # the global norm over every gradient, the softmax rows' in softmax_W's place
            grad_norm = torch.nn.utils.clip_grad_norm_(grads, cfg.grad_clip)
            stop_if_non_finite(loss, grad_norm, batch + 1, ckpt_path, world, device)   # before the update
            optimizer.step()                       # sparse: softmax_W has no gradient and is skipped
            if rows is not None:
                rows.adagrad_step(optimizer, model.softmax.weight)
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
                stop_if_non_finite_weights(model, done, ckpt_path)                  # never save them
                save_checkpoint(ckpt_path, model, optimizer, sampler, states, done, fingerprint, ctx, summary,
                                stream_positions)
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


