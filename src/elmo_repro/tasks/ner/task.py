"""CoNLL-2003 NER (paper §4, Table 1): the BiLSTM-CRF tagger, entity span F1 (conlleval semantics).

* Data: ``data/conll2003/<split>.jsonl`` and its texts (stage ``prepare_conll2003``; dev = eng.testa,
  test = eng.testb); gold tags IOB1 as in the files, the tagger predicts BIOUL, the scorer reads IOB2.
* Word vectors: exact form, else lowercased, else the trainable UNK row
  (:mod:`elmo_repro.tasks.word_embeddings`). All rows are fine-tuned.
* Loss: mean CRF negative log-likelihood per sentence (+ the ScalarMix penalty).
* Floor: every token gets its most frequent training tag (unseen tokens ``O``), scored by the same
  span F1 -- what a tagger that ignores context scores.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import torch

from ...experiments.specs import ElmoSpec
from ...experiments.tasks import TASKS
from ...nn.char_cnn import build_char_vocab, encode_chars
from ..base import pad_layers
from ..word_embeddings import build_embeddings, word_id
from .floor import most_frequent_tags
from .metric import span_prf
from .model import NerTagger
from .reader import iob1_to_bioul, read_prepared, to_iob2


@dataclass
class NerVocab:
    """Built from the training split: word index and matrix, characters, BIOUL labels."""

    word_index: dict[str, int]
    embeddings: np.ndarray          # (2 + V, dim) float32: PAD (zeros), UNK (random), pretrained rows
    char_vocab: dict[str, int]
    labels: list[str]


def bioul_labels(sentences: list[dict]) -> list[str]:
    """``O`` then B/I/L/U of every entity type in ``sentences``, types sorted: the tagger's label set."""
    kinds = sorted({tag[2:] for s in sentences for tag in s["ner"] if tag != "O"})
    return ["O"] + [f"{prefix}-{kind}" for kind in kinds for prefix in "BILU"]


class NerTask:
    """The task contract (:class:`elmo_repro.tasks.base.Task`) for CoNLL-2003 NER."""

    name, title, metric, fields = "ner", TASKS["ner"].title, TASKS["ner"].metric, TASKS["ner"].fields
    data_dir, features_dir = Path(TASKS["ner"].data_dir), Path(TASKS["ner"].features_dir)

    def read(self, split: str, data_dir: Path | None = None) -> list[dict]:
        return read_prepared(data_dir or self.data_dir, split)

    def build_vocab(self, train: list[dict], splits: dict[str, list[dict]],
                    vectors: tuple[list[str], np.ndarray], seed: int) -> NerVocab:
        """Labels and characters from ``train``; word rows for every split's words (see module doc)."""
        labels = bioul_labels(train)
        word_index, embeddings = build_embeddings(
            vectors, (t for part in splits.values() for s in part for t in s["tokens"]), seed)
        return NerVocab(word_index, embeddings, build_char_vocab(t for s in train for t in s["tokens"]), labels)

    def encode(self, vocab: NerVocab, examples: list[dict], training: bool) -> list[dict[str, np.ndarray]]:
        """Per sentence: ``words`` (T,), ``chars`` (T, C) and, for training, BIOUL ``tags`` (T,).

        Raises:
            ValueError: a training tag outside the label set (cannot happen for labels built from it).
        """
        label_index = {label: i for i, label in enumerate(vocab.labels)}
        out = []
        for s in examples:
            item = {"words": np.array([word_id(t, vocab.word_index) for t in s["tokens"]], dtype=np.int64),
                    "chars": encode_chars(s["tokens"], vocab.char_vocab)}
            if training:
                item["tags"] = np.array([label_index[t] for t in iob1_to_bioul(s["ner"])], dtype=np.int64)
            out.append(item)
        return out

    def collate(self, encoded: Sequence[dict], layers: list[dict[str, np.ndarray]] | None) -> dict[str, Any]:
        """Pad sentences into a batch.

        Returns:
            ``words`` (B, T), ``chars`` (B, T, C), ``mask`` (B, T) bool, ``lengths`` (B,),
            ``tags`` (B, T) or None, ``elmo`` (B, L+1, T, D) float32 or None.

        Raises:
            ValueError: a sentence whose ELMo layers do not match its token count.
        """
        lengths = np.array([len(e["words"]) for e in encoded])
        b, t = len(encoded), int(lengths.max())
        c = max(e["chars"].shape[1] for e in encoded)
        words = np.zeros((b, t), dtype=np.int64)
        chars = np.zeros((b, t, c), dtype=np.int64)
        tags = np.zeros((b, t), dtype=np.int64) if "tags" in encoded[0] else None
        elmo = None if layers is None else pad_layers([item["tokens"] for item in layers], lengths)
        for row, e in enumerate(encoded):
            n = lengths[row]
            words[row, :n] = e["words"]
            chars[row, :n, :e["chars"].shape[1]] = e["chars"]
            if tags is not None:
                tags[row, :n] = e["tags"]
        return {
            "words": torch.from_numpy(words), "chars": torch.from_numpy(chars),
            "mask": torch.from_numpy(np.arange(t)[None, :] < lengths[:, None]),
            "lengths": torch.from_numpy(lengths),
            "tags": None if tags is None else torch.from_numpy(tags),
            "elmo": None if elmo is None else torch.from_numpy(elmo),
        }

    def build_model(self, cfg: dict, vocab: NerVocab, elmo: ElmoSpec | None,
                    elmo_shape: tuple[int, int] | None) -> NerTagger:
        return NerTagger(vocab.embeddings, len(vocab.char_vocab) + 2, vocab.labels, cfg, elmo, elmo_shape)

    def score(self, examples: list[dict], predictions: list[list[str]]) -> dict[str, float]:
        """Entity span precision, recall, F1 (percent; seqeval on IOB2 = conlleval's semantics)."""
        return span_prf([to_iob2(s["ner"]) for s in examples], predictions)

    def floor(self, train: list[dict], examples: list[dict]) -> list[list[str]]:
        """Each token's most frequent training tag (ties: the tag first seen), unseen tokens ``O``;
        IOB1 sequences converted to IOB2 as the model's predictions are."""
        return most_frequent_tags(train, examples)


TASK = NerTask()
