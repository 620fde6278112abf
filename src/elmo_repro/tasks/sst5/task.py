"""SST-5 (paper §4, Table 1): five-class sentence sentiment with the biattentive classification
network (McCann et al. 2017), accuracy on the test sentences.

* Data: ``data/sst5/<split>.jsonl`` and its texts (stage ``prepare_sst5``): ``{"tokens", "label"}``, the
  label 0-4 (very negative .. very positive). Dev and test are whole sentences (their root labels);
  train is whole sentences or, with ``tasks.sst5.data.phrases``, every phrase of the treebank.
* Word vectors: exact form, else lowercased, else UNK (:mod:`elmo_repro.tasks.word_embeddings`);
  frozen or trained as ``model.freeze_embeddings`` says (the original keeps GloVe fixed).
* ELMo: at the input and at the integrator's output (the paper's placement; allennlp's released
  config uses the input only, a variant the ELMo spec can express).
* Loss: mean cross-entropy per sentence (+ the ScalarMix penalty). Selection on dev accuracy.
* Floor: the training set's majority class for every sentence.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

import numpy as np
import torch

from ...experiments.specs import ElmoSpec
from ...experiments.tasks import TASKS
from ..base import pad_ids, pad_layers
from ..classification import ClassificationTask, WordVocab
from ..word_embeddings import word_ids
from .model import BiattentiveClassifier
from .reader import LABELS

INFO = TASKS["sst5"]


class Sst5Task(ClassificationTask):
    """The task contract (:class:`elmo_repro.tasks.base.Task`) for SST-5; ``read``,
    ``build_vocab``, ``score`` (sentence accuracy) and ``floor`` come from :class:`ClassificationTask`."""

    name, title, metric = INFO.name, INFO.title, INFO.metric
    data_dir, features_dir, fields = Path(INFO.data_dir), Path(INFO.features_dir), INFO.fields
    labels = LABELS

    def encode(self, vocab: WordVocab, examples: list[dict], training: bool) -> list[dict[str, Any]]:
        """Per sentence: ``words`` (T,) and, for training, the ``label`` index (= the label, 0-4)."""
        return [{"words": word_ids(e["tokens"], vocab.word_index),
                 **({"label": self.labels.index(e["label"])} if training else {})} for e in examples]

    def collate(self, encoded: Sequence[dict], layers: list[dict[str, np.ndarray]] | None) -> dict[str, Any]:
        """``words`` (B, T), ``mask`` (B, T), ``lengths`` (B,), ``labels`` (B,) or None,
        ``elmo`` None or ``{"tokens": (B, L+1, T, D) float32}``.

        Raises:
            ValueError: ELMo layers that do not match a sentence's length.
        """
        words, mask, lengths = pad_ids([e["words"] for e in encoded])
        labels = np.array([e["label"] for e in encoded], dtype=np.int64) if "label" in encoded[0] else None
        elmo = None if layers is None else {"tokens": torch.from_numpy(
            pad_layers([item["tokens"] for item in layers], lengths))}
        return {"words": torch.from_numpy(words), "mask": torch.from_numpy(mask),
                "lengths": torch.from_numpy(lengths),
                "labels": None if labels is None else torch.from_numpy(labels), "elmo": elmo}

    def build_model(self, cfg: dict, vocab: WordVocab, elmo: ElmoSpec | None,
                    elmo_shape: tuple[int, int] | None) -> BiattentiveClassifier:
        return BiattentiveClassifier(vocab.embeddings, len(vocab.labels), cfg, elmo, elmo_shape)


TASK = Sst5Task()
