"""The one trainer: every (task, ELMo spec, seed, training fraction) run goes through :func:`train_run`.

It owns what is common to the paper's task models; a task (:class:`elmo_repro.tasks.base.Task`)
supplies reading, encoding, collation, the model and the metric.

* Seeding: Python, NumPy and torch are seeded with the run's seed before anything random happens;
  the batch order comes from a NumPy generator seeded with it too. Same seed, same numbers.
* Training examples: the first ``max_train_examples`` of the training file (a documented cap of
  small profiles; 0 = all), then, for ``train_fraction`` < 1, a subset of that size drawn with a
  generator of fixed seed (``SUBSET_SEED``), kept in file order: every seed of a fraction sees the
  same subset, and the subset of a smaller fraction is part of a larger one's.
* Batches: each epoch the examples are shuffled, stably sorted by length and cut into batches of
  ``batch_size`` (similar lengths, little padding), and the batch order is shuffled.
* Small data (``small_data``): with ``epochs``, a run on a fraction of the training set makes the
  full run's number of passes, so a 1% run gets 1% of its updates; with ``updates``, an epoch of
  such a run is as many updates as a full-data epoch (passes over the subset, each shuffled
  anew, cut at that count), so every fraction gets the full run's updates and dev evaluations
  (the paper trained every point of its Figure 1 to convergence). ``updates`` in the metrics
  counts the steps taken.
* Updates: the optimizer from config (Adam, Adadelta or SGD), the gradient norm clipped to
  ``grad_clip`` (or, with ``grad_clip_kind: value``, each gradient element clamped to it); with ``lr_plateau`` the learning rate is multiplied by its ``factor`` after
  ``patience`` epochs without a better dev metric (ESIM's schedule). A non-finite loss stops the
  run naming the epoch and batch.
* Weight average: with ``ema`` (a decay), an exponential moving average of the weights is updated
  after every step and is what dev, test and the saved weights use (document-qa's SQuAD reader;
  :mod:`elmo_repro.training.ema`).
* Selection: the dev metric after every epoch; the best epoch's weights (the first on ties) are
  restored and scored on dev and test. Test is scored once, never used for a choice.
* Device: the model is built on the CPU (a seed gives the same initial weights on any device),
  then moved to ``device``; batches are collated on the CPU and moved there
  (:func:`elmo_repro.device.to_device`), forward passes run under the ``precision``'s autocast,
  and the kept weights are CPU copies.
"""

from __future__ import annotations

import contextlib
import copy
import math
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from torch import nn

from ..console import Progress
from ..device import autocast, on_cpu, to_device
from ..experiments.specs import RunSpec
from ..tasks.base import SPLITS, Task, example_length
from .ema import WeightAverage

SUBSET_SEED = 20180601          # the training-fraction subset is the same for every run seed


@dataclass
class RunResult:
    """What a run writes to ``results/runs/<run id>/``."""

    metrics: dict[str, float]                  # dev_<m>, test_<m> for the task's metrics; best_epoch, ...
    history: list[dict[str, float]]            # per epoch: epoch, train_loss, dev_<metric>
    mixes: dict[str, dict]                     # ElmoInjection.report() ({} without ELMo)
    predictions: dict[str, list[Any]]          # dev and test, labels or ids only
    state_dict: dict[str, torch.Tensor] = field(repr=False, default_factory=dict)
    seconds: list[float] = field(default_factory=list)   # per-epoch training time (MLflow only)


def seed_everything(seed: int) -> None:
    """Seed Python's, NumPy's and torch's global generators (initialisation and dropout)."""
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def select_training(n: int, max_examples: int, fraction: float) -> list[int]:
    """Indices of the training examples a run uses, in file order (see the module doc).

    Raises:
        ValueError: a fraction outside (0, 1] or a negative cap.
    """
    if not 0.0 < fraction <= 1.0 or max_examples < 0:
        raise ValueError(f"train_fraction must be in (0, 1] and max_train_examples >= 0, "
                         f"got {fraction}, {max_examples}")
    pool = n if max_examples == 0 else min(n, max_examples)
    if fraction == 1.0:
        return list(range(pool))
    keep = max(1, math.floor(fraction * pool))
    order = np.random.default_rng(SUBSET_SEED).permutation(pool)
    return sorted(order[:keep].tolist())


def train_batches(lengths: np.ndarray, batch_size: int, rng: np.random.Generator) -> list[list[int]]:
    """One epoch's batches: shuffle, stable sort by length, cut, shuffle the batch order."""
    order = rng.permutation(len(lengths))
    order = order[np.argsort(lengths[order], kind="stable")]
    batches = [order[i:i + batch_size].tolist() for i in range(0, len(order), batch_size)]
    return [batches[i] for i in rng.permutation(len(batches))]


def epoch_batches(lengths: np.ndarray, batch_size: int, rng: np.random.Generator,
                  updates: int | None = None) -> list[list[int]]:
    """One epoch's batches (:func:`train_batches`); with ``updates``, passes of them one after the
    other until there are that many, cut there (a small-data run's epoch of a full epoch's updates).
    One pass draws exactly what :func:`train_batches` draws, so ``updates`` = one pass's batches
    changes nothing."""
    batches = train_batches(lengths, batch_size, rng)
    while updates is not None and len(batches) < updates:
        batches += train_batches(lengths, batch_size, rng)
    return batches if updates is None else batches[:updates]


def eval_batches(lengths: np.ndarray, batch_size: int) -> list[list[int]]:
    """Length-sorted batches in a fixed order (decoding does not depend on the batch)."""
    order = np.argsort(lengths, kind="stable")
    return [order[i:i + batch_size].tolist() for i in range(0, len(order), batch_size)]


def build_optimizer(params: list[nn.Parameter], cfg: dict) -> torch.optim.Optimizer:
    """``cfg``: ``{"name": "adam" | "adadelta" | "sgd", "lr": float, ...}`` (extra keys are passed on;
    a key set to None, e.g. a profile's ``rho: null`` under Adam, is the optimizer's default).

    Raises:
        ValueError: an unknown optimizer name.
    """
    kwargs = {k: v for k, v in cfg.items() if k != "name" and v is not None}
    if cfg["name"] == "adam":
        # The fused (single-kernel) CPU Adam is ~3x faster than the per-tensor loop, same update rule.
        return torch.optim.Adam(params, fused=True, **kwargs)
    if cfg["name"] == "adadelta":
        return torch.optim.Adadelta(params, **kwargs)
    if cfg["name"] == "sgd":
        return torch.optim.SGD(params, **kwargs)
    raise ValueError(f"unknown optimizer {cfg['name']!r} (adam, adadelta, sgd)")


class EncodedSplit:
    """A split ready for batching: examples, their encodings, lengths and ELMo layers."""

    def __init__(self, task: Task, examples: list[dict], encoded: list[Any], layers: Any | None,
                 index: list[int] | None = None, device: torch.device = torch.device("cpu")):
        self.task, self.examples, self.encoded, self.layers = task, examples, encoded, layers
        self.index = index if index is not None else list(range(len(examples)))  # -> layer-source index
        self.lengths = np.array([example_length(task, e) for e in examples])
        self.device = device

    def batch(self, indices: list[int]) -> dict[str, Any]:
        """The collated batch of these examples, on the split's device."""
        layers = self.layers.batch([self.index[i] for i in indices]) if self.layers is not None else None
        with on_cpu():
            batch = self.task.collate([self.encoded[i] for i in indices], layers)
        return to_device(batch, self.device)


def predict(model: nn.Module, split: EncodedSplit, batch_size: int, precision: str = "fp32") -> list[Any]:
    """The model's predictions for every example of a split, in example order."""
    model.eval()
    out: list[Any] = [None] * len(split.examples)
    for indices in eval_batches(split.lengths, batch_size):
        with autocast(split.device, precision):
            predictions = model.predict(split.batch(indices))
        for i, prediction in zip(indices, predictions):
            out[i] = prediction
    return out


@dataclass
class PreparedRun:
    """A run ready to train: what :func:`prepare_run` builds, in the order the seed is consumed."""

    model: nn.Module
    optimizer: torch.optim.Optimizer
    splits: dict[str, EncodedSplit]
    rng: np.random.Generator                   # the batch order's generator


def prepare_run(task: Task, spec: RunSpec, cfg: dict, data: dict[str, list[dict]], vectors: Any,
                layers: dict[str, Any] | None, device: torch.device = torch.device("cpu")) -> PreparedRun:
    """Seed, select the training examples, build the vocabularies, encode every split, build the
    model (on the CPU, then moved to ``device``) and the optimizer (arguments as :func:`train_run`).

    Raises:
        ValueError: ELMo requested without layers (or layers without ELMo).
    """
    if (spec.elmo is None) != (layers is None):
        raise ValueError(f"run {spec.id}: ELMo layers must be given exactly when the spec has ELMo")
    trainer, seed = cfg["trainer"], spec.seed
    seed_everything(seed)
    keep = select_training(len(data["train"]), trainer["max_train_examples"], spec.train_fraction)
    train = [data["train"][i] for i in keep]
    vocab = task.build_vocab(train, {"train": train, "dev": data["dev"], "test": data["test"]}, vectors, seed)
    splits = {name: EncodedSplit(task, examples, task.encode(vocab, examples, training=name == "train"),
                                 None if layers is None else layers[name], keep if name == "train" else None, device)
              for name, examples in (("train", train), ("dev", data["dev"]), ("test", data["test"]))}
    elmo_shape = None if layers is None else (layers["train"].n_layers, layers["train"].dim)
    with on_cpu():
        model = task.build_model(cfg["model"], vocab, spec.elmo, elmo_shape)
        if spec.elmo is not None and spec.elmo.gamma_init == "matched":
            match_elmo_scale(model.elmo, splits["train"], vectors)
    model.to(device)
    optimizer = build_optimizer(list(model.parameters()), trainer["optimizer"])
    return PreparedRun(model, optimizer, splits, np.random.default_rng(seed))


GAMMA_SAMPLE = 1000   # training examples (in training order) whose texts set a matched γ


def static_rms(vectors: tuple[list[str], np.ndarray]) -> float:
    """Root mean square of every entry of the static word vectors ``(words, (V, D) matrix)``."""
    matrix = vectors[1]
    return float(np.sqrt(np.mean(np.square(matrix, dtype=np.float64))))


def match_elmo_scale(injection: Any, train: EncodedSplit, vectors: tuple[list[str], np.ndarray]) -> list[float]:
    """Start γ of each ELMo mix at RMS(static vectors) / RMS(unscaled mix) over the distinct texts of
    the first :data:`GAMMA_SAMPLE` training examples (``ElmoSpec.gamma_init == "matched"``).

    Consumes no random numbers, so the rest of the run draws what it drew with ``gamma_init: one``.

    Returns:
        γ of each mix (:meth:`~elmo_repro.elmo.injection.ElmoInjection.match_scale`).
    """
    indices = [train.index[i] for i in range(min(GAMMA_SAMPLE, len(train.examples)))]
    texts = {id(a): a for example in train.layers.batch(indices) for value in example.values()
             for a in (value if isinstance(value, list) else [value])}      # a document field: its sentences
    return injection.match_scale(list(texts.values()), static_rms(vectors))


def train_run(task: Task, spec: RunSpec, cfg: dict, data: dict[str, list[dict]], vectors: Any,
              layers: dict[str, Any] | None,
              log_metrics: Callable[[dict[str, float], int], None] | None = None,
              device: torch.device = torch.device("cpu"), precision: str = "fp32") -> RunResult:
    """Train one run and score its best-dev-epoch weights on dev and test.

    Args:
        task: the task (reader, encoding, model, metric).
        spec: the run (its ELMo spec, seed and training fraction).
        cfg: ``tasks.<task>``: ``trainer`` (epochs, batch_size, eval_batch_size, optimizer,
            grad_clip, max_train_examples; optional lr_plateau, ema, patience) and ``model`` (the
            task model's section).
        data: ``{"train", "dev", "test"}`` -> examples in file order.
        vectors: the static word vectors, as the task's ``build_vocab`` takes them.
        layers: per split, a layer source (:mod:`elmo_repro.elmo.layer_source`) indexed like
            ``data``; None for a run without ELMo.
        log_metrics: called as ``log_metrics(metrics, epoch)`` after every epoch with
            ``train_loss``, ``epoch_dev_<metric>`` and ``epoch_seconds``.
        device: where the model trains (``--device``; :mod:`elmo_repro.device`).
        precision: ``fp32``, or ``bf16`` autocast of the forward passes (CUDA only; the
            optimizer's weights stay fp32).

    Returns:
        The run's :class:`RunResult`; ``metrics`` holds ``dev_*``/``test_*`` of every metric the
        task scores, ``best_epoch``, ``epochs`` and ``train_examples``.

    Raises:
        ValueError: ELMo requested without layers (or layers without ELMo); a non-finite loss.
    """
    trainer = cfg["trainer"]
    run = prepare_run(task, spec, cfg, data, vectors, layers, device)
    model, splits = run.model, run.splits
    train_split = splits["train"]
    metric, eval_size = task.metric, trainer["eval_batch_size"]

    plateau = trainer.get("lr_plateau")
    scheduler = None if plateau is None else torch.optim.lr_scheduler.ReduceLROnPlateau(
        run.optimizer, mode="max", factor=plateau["factor"], patience=plateau["patience"])
    ema = None if trainer.get("ema") is None else WeightAverage(model, trainer["ema"])
    best_score, best_epoch, best_state, best_dev, best_dev_predictions = -math.inf, 0, None, {}, []
    history, seconds = [], []
    # a small-data run with small_data "updates": an epoch of the full run's updates
    matched = trainer.get("small_data", "epochs") == "updates" and spec.train_fraction < 1.0
    epoch_examples = len(select_training(len(data["train"]), trainer["max_train_examples"], 1.0)) if matched \
        else len(train_split.examples)
    n_batches = -(-epoch_examples // trainer["batch_size"])
    with Progress(f"{spec.id}", trainer["epochs"] * n_batches, "batches") as progress:
        for epoch in range(1, trainer["epochs"] + 1):
            start = time.monotonic()
            loss = train_epoch(model, run.optimizer, train_split,
                               epoch_batches(train_split.lengths, trainer["batch_size"], run.rng,
                                             n_batches if matched else None),
                               trainer["grad_clip"], epoch, progress, ema, precision,
                               trainer.get("grad_clip_kind", "norm"))
            seconds.append(time.monotonic() - start)
            with ema.applied() if ema is not None else contextlib.nullcontext():
                dev_predictions = predict(model, splits["dev"], eval_size, precision)
                dev = task.score(splits["dev"].examples, dev_predictions)
                state = cpu_copy(model.state_dict()) if dev[metric] > best_score else None
            history.append({"epoch": epoch, "train_loss": loss, f"dev_{metric}": dev[metric]})
            progress.note(f"epoch {epoch} dev {metric} {dev[metric]:.2f}")
            if log_metrics is not None:
                # Named apart from the final dev_<metric> so MLflow's latest value is not mistaken for it.
                log_metrics({"train_loss": loss, f"epoch_dev_{metric}": dev[metric],
                             "epoch_seconds": seconds[-1]}, epoch)
            if state is not None:
                best_score, best_epoch, best_dev = dev[metric], epoch, dev
                best_state, best_dev_predictions = state, dev_predictions
            if scheduler is not None:
                scheduler.step(dev[metric])
            if trainer.get("patience") is not None and epoch - best_epoch >= trainer["patience"]:
                break                          # allennlp's patience: no dev improvement for that many epochs
    model.load_state_dict(best_state)
    test_predictions = predict(model, splits["test"], eval_size, precision)
    test = task.score(splits["test"].examples, test_predictions)
    metrics = {**{f"dev_{k}": v for k, v in best_dev.items()}, **{f"test_{k}": v for k, v in test.items()},
               "best_epoch": best_epoch, "epochs": len(history), "train_examples": len(train_split.examples),
               "updates": n_batches * len(history)}
    return RunResult(metrics=metrics, history=history,
                     mixes=model.elmo.report() if getattr(model, "elmo", None) is not None else {},
                     predictions={"dev": best_dev_predictions, "test": test_predictions},
                     state_dict=best_state, seconds=seconds)


def cpu_copy(state: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """A copy of a state dict on the CPU (what a run keeps and saves, wherever it trained), with its
    type and version metadata, as ``copy.deepcopy`` of a CPU state dict."""
    copied = type(state)((name, tensor.detach().to("cpu", copy=True)) for name, tensor in state.items())
    if hasattr(state, "_metadata"):
        copied._metadata = copy.deepcopy(state._metadata)  # type: ignore[attr-defined]
    return copied


def train_epoch(model: nn.Module, optimizer: torch.optim.Optimizer, split: EncodedSplit, batches: list[list[int]],
                 grad_clip: float, epoch: int, progress: Progress | None = None,
                 ema: WeightAverage | None = None, precision: str = "fp32", grad_clip_kind: str = "norm") -> float:
    """One pass over the batches (``ema`` updated after each step); returns the mean training loss per batch.
    ``grad_clip_kind``: ``norm`` scales the gradients to a global norm of at most ``grad_clip``
    (allennlp's ``grad_norm``), ``value`` clamps each element to ±``grad_clip`` (its
    ``grad_clipping``, the SRL configuration's).

    Raises:
        ValueError: a non-finite loss (the epoch and batch are named; nothing is saved after it).
    """
    model.train()
    total = 0.0
    for number, indices in enumerate(batches, 1):
        with autocast(split.device, precision):
            loss = model.loss(split.batch(indices))
        if not torch.isfinite(loss):
            raise ValueError(f"non-finite training loss {loss.item()} at epoch {epoch}, batch {number}: "
                             "lower the learning rate or check the inputs")
        optimizer.zero_grad()
        loss.backward()
        if grad_clip_kind == "value":
            nn.utils.clip_grad_value_(model.parameters(), grad_clip, foreach=True)
        else:
            nn.utils.clip_grad_norm_(model.parameters(), grad_clip, foreach=True)
        optimizer.step()
        if ema is not None:
            ema.update()
        total += loss.item()
        if progress is not None:
            progress.advance()
    return total / max(1, len(batches))
