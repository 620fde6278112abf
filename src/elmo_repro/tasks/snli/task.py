"""SNLI (paper §4, Table 1): three-way textual entailment with ESIM (Chen et al. 2017), accuracy
on the test pairs.

* Data: ``data/snli/<split>.jsonl`` and its texts (stage ``prepare_snli``): ``{"premise", "hypothesis",
  "label"}``, tokenized; where the splits come from (the mirror has no training split) is the
  stage's ``tasks.snli.data``.
* Word vectors: exact form, else lowercased, else UNK (:mod:`elmo_repro.tasks.word_embeddings`),
  shared by premise and hypothesis.
* ELMo: premise and hypothesis are embedded by the biLM each on its own (each distinct sentence
  once: a premise serves ~3 pairs) and mixed by the same ScalarMix, at the input and at the output of the input-encoding
  biLSTM, before the soft alignment (the paper's SNLI placement).
* Loss: mean cross-entropy per pair (+ the ScalarMix penalty). Selection on dev accuracy.
  Predictions are label indices into ``elmo_repro.tasks.snli.reader.LABELS`` (entailment, neutral,
  contradiction).
* Floor: the training part's majority label for every pair.
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
from .model import Esim
from .reader import LABELS

INFO = TASKS["snli"]


class SnliTask(ClassificationTask):
    """The task contract (:class:`elmo_repro.tasks.base.Task`) for SNLI; ``read``, ``build_vocab``
    (premise and hypothesis words), ``score`` (pair accuracy) and ``floor`` come from
    :class:`ClassificationTask`; predictions are indices into ``LABELS``."""

    name, title, metric = INFO.name, INFO.title, INFO.metric
    data_dir, features_dir, fields = Path(INFO.data_dir), Path(INFO.features_dir), INFO.fields
    labels = LABELS

    def encode(self, vocab: WordVocab, examples: list[dict], training: bool) -> list[dict[str, Any]]:
        """Per pair: ``premise`` and ``hypothesis`` ids and, for training, the ``label`` index."""
        out = []
        for e in examples:
            item = {field: word_ids(e[field], vocab.word_index) for field in self.fields}
            if training:
                item["label"] = self.labels.index(e["label"])
            out.append(item)
        return out

    def collate(self, encoded: Sequence[dict], layers: list[dict[str, np.ndarray]] | None) -> dict[str, Any]:
        """``<field>_words`` (B, T_f), ``<field>_mask``, ``<field>_lengths`` for premise and
        hypothesis, ``labels`` (B,) or None, ``elmo`` None or ``{field: (B, L+1, T_f, D)}``.

        Raises:
            ValueError: ELMo layers that do not match a sentence's length.
        """
        batch: dict[str, Any] = {"elmo": None if layers is None else {}}
        for field in self.fields:
            words, mask, lengths = pad_ids([e[field] for e in encoded])
            batch.update({f"{field}_words": torch.from_numpy(words), f"{field}_mask": torch.from_numpy(mask),
                          f"{field}_lengths": torch.from_numpy(lengths)})
            if layers is not None:
                batch["elmo"][field] = torch.from_numpy(pad_layers([item[field] for item in layers], lengths))
        labels = np.array([e["label"] for e in encoded], dtype=np.int64) if "label" in encoded[0] else None
        batch["labels"] = None if labels is None else torch.from_numpy(labels)
        return batch

    def build_model(self, cfg: dict, vocab: WordVocab, elmo: ElmoSpec | None,
                    elmo_shape: tuple[int, int] | None) -> Esim:
        return Esim(vocab.embeddings, len(vocab.labels), cfg, elmo, elmo_shape)


TASK = SnliTask()
