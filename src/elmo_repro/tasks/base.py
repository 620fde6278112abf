"""The task contract: what a task supplies to the one trainer (:mod:`elmo_repro.training.trainer`).

A task is a reader, an encoding with its collation, a model and a metric, plus a trivial floor
scored by the same metric. The trainer owns everything else (epochs, batches, optimizer,
selection on dev, history, seeding). Baseline and +ELMo are the same task with a different ELMo
spec: a model receives ``elmo=None`` or a resolved :class:`~elmo_repro.experiments.specs.ElmoSpec`
and never branches on a variant name.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any, Protocol, Sequence

import numpy as np
import torch
from torch import nn

from ..experiments.specs import ElmoSpec
from ..experiments.tasks import declaration

SPLITS = ("train", "dev", "test")


class TaskModel(Protocol):
    """A task model (an ``nn.Module``).

    ``elmo`` is its :class:`~elmo_repro.elmo.injection.ElmoInjection` or None; ``loss`` includes
    the ScalarMix penalty; ``predict`` returns one JSON-serialisable prediction (labels or ids,
    never text) per example of the batch, in batch order.
    """

    elmo: nn.Module | None

    def loss(self, batch: dict[str, Any]) -> torch.Tensor: ...

    def predict(self, batch: dict[str, Any]) -> list[Any]: ...


class Task(Protocol):
    """One downstream task of the paper's Table 1."""

    name: str                  # registry name, e.g. "ner"
    title: str                 # the paper's row name, e.g. "NER"
    metric: str                # primary metric key in score()'s result (metrics.json: dev_<metric>)
    data_dir: Path             # the prepared data (a stage output)
    features_dir: Path         # cached ELMo layers: <features_dir>/<biLM>/<split>.hdf5, keyed by text id
    fields: tuple[str, ...]    # the example keys holding the token lists the biLM embeds, each on its own
                               # (a field may hold a list of them: coreference's document sentences)

    def read(self, split: str, data_dir: Path | None = None) -> list[dict]:
        """Examples of a split in file order, token fields filled in from the split's texts and
        ``text_ids`` kept (the ELMo feature keys), from ``data_dir`` (default: the task's
        ``data_dir``, a pipeline output; :func:`elmo_repro.data.examples.read_split`)."""

    def build_vocab(self, train: list[dict], splits: dict[str, list[dict]], vectors: Any, seed: int) -> Any:
        """Vocabularies and embedding matrices from the training split (and vectors)."""

    def encode(self, vocab: Any, examples: list[dict], training: bool) -> list[Any]:
        """Id arrays per example; ``training`` adds the gold targets."""

    def collate(self, encoded: Sequence[Any], layers: list[dict[str, np.ndarray]] | None) -> dict[str, Any]:
        """Pad a batch; ``layers`` (per example, ``{field: (L+1, T_i, D)}``, a list of them for a field
        of several texts) become ``batch["elmo"]``."""

    def build_model(self, cfg: dict, vocab: Any, elmo: ElmoSpec | None,
                    elmo_shape: tuple[int, int] | None) -> nn.Module:
        """The task model; ``elmo_shape`` = (L+1, D) of the biLM layers when ``elmo`` is set."""

    def score(self, examples: list[dict], predictions: list[Any]) -> dict[str, float]:
        """The task's metrics (percent) of predictions against the examples' gold labels."""

    def floor(self, train: list[dict], examples: list[dict]) -> list[Any]:
        """Predictions of the trivial baseline fitted on ``train`` (scored with :meth:`score`)."""

    # Optional: ``batch_length(example) -> int``, what batches are bucketed by (:func:`example_length`).


def example_length(task: Task, example: dict) -> int:
    """What batches are bucketed by: the task's ``batch_length(example)`` where it defines one
    (SQuAD: the paragraph's tokens, so a paragraph's questions share batches and its encoding),
    else the tokens of the example over all its fields."""
    own = getattr(task, "batch_length", None)
    return own(example) if own is not None else sum(len(example[field]) for field in task.fields)


def pad_layers(layers: list[np.ndarray], lengths: Sequence[int]) -> np.ndarray:
    """Right-pad per-example (L+1, T_i, D) layers into one (B, L+1, T, D) float32 array.

    Raises:
        ValueError: an example whose layers do not match its token count (a feature file of
            another text or another tokenization).
    """
    first = layers[0]
    out = np.zeros((len(layers), first.shape[0], max(lengths), first.shape[2]), dtype=np.float32)
    for row, (array, n) in enumerate(zip(layers, lengths)):
        if array.ndim != 3 or array.shape[1] != n:
            raise ValueError(f"ELMo layers {array.shape} do not match an example of {n} tokens")
        out[row, :, :n] = array                                            # float16 on disk -> float32
    return out


def pad_ids(sequences: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Right-pad (T_i,) id arrays with 0: ids (B, T), mask (B, T) bool, lengths (B,)."""
    lengths = np.array([len(s) for s in sequences], dtype=np.int64)
    ids = np.zeros((len(sequences), int(lengths.max())), dtype=np.int64)
    for row, s in enumerate(sequences):
        ids[row, :len(s)] = s
    return ids, np.arange(ids.shape[1])[None, :] < lengths[:, None], lengths


def get_task(name: str) -> Task:
    """The registered task ``name``.

    Raises:
        ValueError: an unknown task name (the known ones are listed).
    """
    # Imported by name, so a stage's static import scan (workflow/imports.py) does not make every
    # task's runs depend on every task's code: the registry adds the run's own task package.
    return importlib.import_module(f"{__package__}.{declaration(name).name}.task").TASK
