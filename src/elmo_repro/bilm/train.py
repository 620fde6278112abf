"""biLM pretraining (paper §3.4; bilm-tf ``train.py``): sampled softmax, Adagrad, global
gradient-norm clipping, state carried across batches, atomic checkpoints and exact resume.

The run length is either a number of epochs over the training text (the paper: 10) or a token
budget (target tokens per direction); either becomes a number of batches of
``batch_size x unroll_steps`` derived from the data, as bilm-tf's ``n_train_tokens``; the corpus
is cycled in seeded epochs as needed.
Resuming restores the weights, the optimizer, the carried LSTM states, every random generator
and the data-stream position, so a killed-and-resumed run ends with the weights of an
uninterrupted one.
"""

from __future__ import annotations

import hashlib
import json
import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np
import torch

from ..console import Progress, log
from ..data.lm_batches import LMStream, TypeTable
from ..data.vocabulary import Vocabulary
from ..io import atomic_path, read_json, write_json
from .model import BiLM, BiLMConfig

CHECKPOINT = "checkpoint.pt"


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
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_params(cls, section: dict[str, Any]) -> "PretrainConfig":
        known = {k: v for k, v in section.items() if k in cls.__dataclass_fields__ and k != "extra"}
        return cls(**known, extra={k: v for k, v in section.items() if k not in known})

    def n_batches(self, n_train_tokens: int) -> int:
        """Number of updates: ``epochs x n_train_tokens`` (bilm-tf: word tokens of the training
        text, boundaries not counted) or the token budget, over ``batch_size x unroll_steps``."""
        if self.epochs < 0 or self.token_budget < 0:
            raise ValueError(f"epochs and token_budget must be >= 0, got {self.epochs}, {self.token_budget}")
        tokens = self.epochs * n_train_tokens if self.epochs > 0 else self.token_budget
        return max(1, math.ceil(tokens / (self.batch_size * self.unroll_steps)))


# Code whose edits invalidate a checkpoint (the same files the pretraining stage depends on).
_PACKAGE = Path(__file__).resolve().parents[1]
_CODE = [*sorted((_PACKAGE / "bilm").glob("*.py")),
         *(_PACKAGE / "data" / name for name in ("character_ids.py", "lm_batches.py", "vocabulary.py"))]


def _fingerprint(model_config: BiLMConfig, cfg: PretrainConfig, n_sentences: int, n_types: int) -> str:
    """Identifies a run: a checkpoint from a different configuration, corpus or biLM code is never
    resumed (it would silently stand in for a model the current code never trained)."""
    code = hashlib.sha256(b"".join(path.read_bytes() for path in _CODE)).hexdigest()
    blob = json.dumps([model_config.to_options(), cfg.__dict__, n_sentences, n_types, code], sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def _detach(states):
    return [(h.detach(), c.detach()) for h, c in states] if states is not None else None


def pretrain(model_config: BiLMConfig, cfg: PretrainConfig, sentences: list[list[str]],
             vocab: Vocabulary, checkpoint_dir: Path,
             log_metrics: Callable[[dict[str, float], int], None] | None = None,
             stop_after: int | None = None) -> tuple[BiLM, dict[str, float]]:
    """Train a biLM on tokenized sentences.

    Args:
        model_config: the biLM (its ``n_tokens_vocab`` must equal ``len(vocab)``).
        cfg: optimisation and budget.
        sentences: training sentences (token lists, without boundary tokens).
        vocab: frequency-sorted vocabulary (targets; OOV -> ``<UNK>``).
        checkpoint_dir: where ``checkpoint.pt`` is written every ``checkpoint_every`` batches and
            resumed from when its fingerprint matches.
        log_metrics: called with ({name: value}, batch) every ``log_every`` batches.
        stop_after: stop after this many batches in total (tests: simulate a kill).

    Returns:
        The trained model and summary statistics (``train_sampled_softmax_loss`` is the mean
        sampled-softmax loss of the last logging window, in nats — not a perplexity).
    """
    if model_config.n_tokens_vocab != len(vocab):
        raise ValueError(f"n_tokens_vocab={model_config.n_tokens_vocab} but the vocabulary has {len(vocab)}")
    # Multi-threaded CPU backward of the indexed token lookup accumulates in a run-dependent order;
    # deterministic kernels make the same seed give bit-identical weights across processes.
    previous = torch.are_deterministic_algorithms_enabled()
    torch.use_deterministic_algorithms(True)
    try:
        return _pretrain(model_config, cfg, sentences, vocab, checkpoint_dir, log_metrics, stop_after)
    finally:
        torch.use_deterministic_algorithms(previous)


def _pretrain(model_config: BiLMConfig, cfg: PretrainConfig, sentences: list[list[str]],
              vocab: Vocabulary, checkpoint_dir: Path,
              log_metrics: Callable[[dict[str, float], int], None] | None,
              stop_after: int | None) -> tuple[BiLM, dict[str, float]]:
    torch.manual_seed(cfg.seed)
    model = BiLM(model_config)
    if cfg.softmax_bias_init == "unigram":
        init_unigram_bias(model, vocab)
    elif cfg.softmax_bias_init != "zeros":
        raise ValueError(f"softmax_bias_init must be 'zeros' or 'unigram', got {cfg.softmax_bias_init!r}")
    optimizer = torch.optim.Adagrad(model.parameters(), lr=cfg.learning_rate,
                                    initial_accumulator_value=cfg.initial_accumulator)
    sampler = torch.Generator().manual_seed(cfg.seed + 7919)
    table, encoded = TypeTable.build(sentences, vocab)
    char_ids = torch.from_numpy(table.char_ids)                               # (n_types, 50)
    vocab_ids = torch.from_numpy(table.vocab_ids)                             # (n_types,)
    streams = [LMStream(encoded, cfg.batch_size, cfg.unroll_steps, seed=2 * cfg.seed + d, reverse=bool(d))
               for d in (0, 1)]
    states: list = [None, None]
    fingerprint = _fingerprint(model_config, cfg, len(encoded), len(table.types))
    start_batch = 0

    ckpt_path = Path(checkpoint_dir) / CHECKPOINT
    if ckpt_path.exists():
        ckpt = torch.load(ckpt_path, map_location="cpu", weights_only=True)
        if ckpt["fingerprint"] == fingerprint:
            model.load_state_dict(ckpt["model"])
            optimizer.load_state_dict(ckpt["optimizer"])
            torch.set_rng_state(ckpt["torch_rng"])
            sampler.set_state(ckpt["sampler_rng"])
            states = [None if not s else [tuple(hc) for hc in s] for s in ckpt["states"]]
            start_batch = int(ckpt["batch"])
            for stream in streams:
                stream.skip(start_batch)
            log(f"resumed from {ckpt_path} at batch {start_batch}")
        else:
            log(f"ignoring {ckpt_path}: it belongs to a different configuration or corpus")

    total_batches = cfg.n_batches(sum(len(s) for s in encoded))
    n_batches = total_batches if stop_after is None else min(total_batches, stop_after)
    log(f"pretraining {total_batches} batches of {cfg.batch_size}x{cfg.unroll_steps} "
        f"({total_batches * cfg.batch_size * cfg.unroll_steps:,} target tokens per direction), "
        f"{sum(p.numel() for p in model.parameters()):,} parameters, vocabulary {len(vocab):,}, "
        f"{len(table.types):,} input types")
    model.train()
    window_loss, window_batches, window_start = 0.0, 0, time.monotonic()
    summary: dict[str, float] = {}
    with Progress("pretraining", n_batches, "batches", completed=start_batch) as progress:
        for batch in range(start_batch, n_batches):
            (in_f, tg_f), (in_b, tg_b) = next(streams[0]), next(streams[1])
            inputs = torch.from_numpy(np.stack([in_f, in_b]))                 # (2, B, T) type ids
            unique, inverse = torch.unique(inputs, return_inverse=True)
            tokens = model.token_embedder(char_ids[unique])[inverse]          # (2, B, T, P)
            loss = 0.0
            for d, targets in enumerate((tg_f, tg_b)):
                hidden, states[d] = model.direction_hidden(tokens[d], bool(d), states[d])
                flat_targets = vocab_ids[torch.from_numpy(targets).reshape(-1)]   # (B*T,)
                loss = loss + 0.5 * model.softmax.sampled_loss(
                    hidden.reshape(-1, hidden.size(-1)), flat_targets, cfg.n_negative_samples, sampler)
            optimizer.zero_grad(set_to_none=True)
            # bilm-tf differentiates loss * unroll_steps: with Adagrad's initial accumulator of 1.0
            # this scale sets the effective step size, so it is part of the recipe.
            (loss * cfg.unroll_steps).backward()
            grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)
            optimizer.step()
            states = [_detach(s) for s in states]
            window_loss += float(loss.detach())
            window_batches += 1
            done = batch + 1
            if done % cfg.log_every == 0 or done == n_batches:
                elapsed = time.monotonic() - window_start
                summary = {"train_sampled_softmax_loss": window_loss / window_batches,
                           "grad_norm": float(grad_norm),
                           "tokens_per_second": window_batches * 2 * cfg.batch_size * cfg.unroll_steps / elapsed}
                if log_metrics:
                    log_metrics(summary, done)
                progress.note(f"sampled-softmax loss {summary['train_sampled_softmax_loss']:.3f} nats, "
                              f"{summary['tokens_per_second']:,.0f} tokens/s")
                window_loss, window_batches, window_start = 0.0, 0, time.monotonic()
            if done % cfg.checkpoint_every == 0 or done == n_batches:
                save_checkpoint(ckpt_path, model, optimizer, sampler, states, done, fingerprint)
            progress.advance()
    summary["batches"] = float(n_batches)
    summary["target_tokens_per_direction"] = float(n_batches * cfg.batch_size * cfg.unroll_steps)
    return model, summary


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
                    states: list, batch: int, fingerprint: str) -> None:
    """Write the full training state atomically (temporary file + rename)."""
    payload = {
        "model": model.state_dict(), "optimizer": optimizer.state_dict(),
        "torch_rng": torch.get_rng_state(), "sampler_rng": sampler.get_state(),
        "states": [[list(hc) for hc in s] if s is not None else [] for s in states],
        "batch": batch, "fingerprint": fingerprint,
    }
    with atomic_path(path) as tmp:
        torch.save(payload, tmp)


def save_model(model: BiLM, vocab: Vocabulary, out_dir: Path) -> None:
    """Write ``weights.pt`` (state dict), ``options.json`` (bilm-tf layout) and ``vocab.txt``."""
    out_dir = Path(out_dir)
    with atomic_path(out_dir / "weights.pt") as tmp:
        torch.save(model.state_dict(), tmp)
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
