"""Coreference on LitBank (paper §4, Table 1's coreference row; issue 26): Lee et al.'s (2017)
end-to-end span-ranking model (:mod:`.model`), scored with MUC, B³ and CEAFφ4
(:mod:`elmo_repro.tasks.coref.metric`).

* Data: ``data/coref/<split>.jsonl``, one document a line: its sentences as text ids, its gold
  clusters as inclusive document-level token spans (stage ``prepare_coref``; LitBank split by
  document, its dev the selection part, its test the report part).
* Word vectors fixed (e2e-coref keeps GloVe fixed): exact form, else lowercased, else UNK
  (:mod:`elmo_repro.tasks.word_embeddings`); characters from the training split.
* ELMo: each sentence is embedded once (a text) and the model joins its layers to the sentence's
  tokens (the paper's placement for coreference is the input).
* One example = one document: a training batch of ``batch_size`` documents (e2e-coref: 1), a
  training document cut to a random window of ``max_training_sentences`` (the model's ``loss``),
  evaluation on whole documents.
* Metrics (percent, the reference scorer v8.01's semantics): ``muc_*``, ``b3_*``, ``ceafe_*``
  (precision, recall, f1) and ``avg_f1``, their F1s' mean (the primary metric; the paper's
  "average F1"), with **singletons removed from the key** (OntoNotes keys have none; 73% of
  LitBank's clusters are singletons, and the model's response has none by construction); the
  same with singletons kept as ``singletons_<metric>`` (F1s), for comparison with LitBank work.
* Floor: identical names clustered, pronouns to the nearest name (:mod:`.floor`); no training.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import torch

from ...data.examples import examples_path, read_split
from ...experiments.specs import ElmoSpec
from ...experiments.tasks import TASKS
from ...io import InputError
from ...nn.char_cnn import build_char_vocab, encode_chars
from ..base import pad_ids, pad_layers
from ..word_embeddings import build_embeddings, word_ids
from .floor import string_match_clusters
from .metric import METRICS, clusters_of, coref_scores, remove_singletons
from .model import CorefModel

INFO = TASKS["coref"]
Span = tuple[int, int]


@dataclass
class CorefVocab:
    """Word index and (2 + V, dim) fixed matrix over every split's words; training characters."""

    word_index: dict[str, int]
    embeddings: np.ndarray
    char_vocab: dict[str, int]


def _check_document(path: Path, number: int, document: dict) -> None:
    """Gold clusters: lists of ``[start, end]`` inside the document (``InputError`` otherwise)."""
    n = sum(len(s) for s in document["sentences"])
    clusters = document.get("clusters")
    if not isinstance(clusters, list):
        raise InputError(path, "'clusters' must be a list of clusters", line=number)
    for c, cluster in enumerate(clusters):
        for span in cluster if isinstance(cluster, list) else [None]:
            if not (isinstance(span, list) and len(span) == 2 and all(isinstance(i, int) for i in span)
                    and 0 <= span[0] <= span[1] < n):
                raise InputError(path, f"cluster {c}: {span!r} is not an inclusive [start, end] span of "
                                       f"the document's {n} tokens", line=number)


class CorefTask:
    """The task contract (:class:`elmo_repro.tasks.base.Task`) for document coreference."""

    name, title, metric = INFO.name, INFO.title, INFO.metric
    data_dir, features_dir, fields = Path(INFO.data_dir), Path(INFO.features_dir), INFO.fields

    def read(self, split: str, data_dir: Path | None = None) -> list[dict]:
        """The prepared documents of a split, checked, ``sentences`` filled in (token lists).

        Raises:
            InputError: naming the file and line (:func:`elmo_repro.data.examples.read_split`, and
                a cluster span outside its document).
        """
        root = Path(data_dir or self.data_dir)
        documents = read_split(root, split, self.fields)
        path = examples_path(root, split)
        for number, document in enumerate(documents, 1):
            if not isinstance(document["text_ids"]["sentences"], list):
                raise InputError(path, "text_ids.sentences must be a list of text ids (a document)", line=number)
            _check_document(path, number, document)
        return documents

    def batch_length(self, example: dict) -> int:
        """A document's tokens (what evaluation batches are bucketed by)."""
        return sum(len(s) for s in example["sentences"])

    def build_vocab(self, train: list[dict], splits: dict[str, list[dict]],
                    vectors: tuple[list[str], np.ndarray], seed: int) -> CorefVocab:
        """Word rows for every split's words; characters from ``train``."""
        tokens = (t for part in splits.values() for d in part for s in d["sentences"] for t in s)
        word_index, embeddings = build_embeddings(vectors, tokens, seed)
        chars = build_char_vocab(t for d in train for s in d["sentences"] for t in s)
        return CorefVocab(word_index, embeddings, chars)

    def encode(self, vocab: CorefVocab, examples: list[dict], training: bool) -> list[dict[str, Any]]:
        """Per document: ``words`` and ``chars`` per sentence, and, for training, ``clusters``."""
        out = []
        for d in examples:
            item = {"words": [word_ids(s, vocab.word_index) for s in d["sentences"]],
                    "chars": [encode_chars(s, vocab.char_vocab) for s in d["sentences"]]}
            if training:
                item["clusters"] = clusters_of(d["clusters"])
            out.append(item)
        return out

    def collate(self, encoded: Sequence[dict], layers: list[dict[str, list[np.ndarray]]] | None) -> dict[str, Any]:
        """``{"documents": [...]}``, per document ``words`` (S, T), ``chars`` (S, T, C), ``lengths``
        (S,), ``clusters`` (training) and ``elmo`` (S, L+1, T, D) float32 or None.

        Raises:
            ValueError: a sentence whose ELMo layers do not match its token count.
        """
        documents = []
        for i, e in enumerate(encoded):
            words, _, lengths = pad_ids(e["words"])
            c = max(x.shape[1] for x in e["chars"])
            chars = np.zeros((*words.shape, c), dtype=np.int64)
            for row, x in enumerate(e["chars"]):
                chars[row, :x.shape[0], :x.shape[1]] = x
            elmo = None if layers is None else pad_layers(layers[i]["sentences"], lengths)
            documents.append({"words": torch.from_numpy(words), "chars": torch.from_numpy(chars),
                              "lengths": torch.from_numpy(lengths), "clusters": e.get("clusters"),
                              "elmo": None if elmo is None else torch.from_numpy(elmo)})
        return {"documents": documents}

    def build_model(self, cfg: dict, vocab: CorefVocab, elmo: ElmoSpec | None,
                    elmo_shape: tuple[int, int] | None) -> CorefModel:
        return CorefModel(vocab.embeddings, len(vocab.char_vocab) + 2, cfg, elmo, elmo_shape)

    def score(self, examples: list[dict], predictions: list[list[list[Span]]]) -> dict[str, float]:
        """MUC, B³, CEAFφ4 and their average F1 (percent), singletons removed from the key, and
        ``singletons_<metric>_f1`` / ``singletons_avg_f1`` with them kept (module doc).

        Raises:
            ValueError: different numbers of documents and predictions.
        """
        if len(examples) != len(predictions):
            raise ValueError(f"{len(predictions)} predictions for {len(examples)} documents")
        keys = [clusters_of(d["clusters"]) for d in examples]
        responses = [clusters_of(p) for p in predictions]
        scores = coref_scores((remove_singletons(k), r) for k, r in zip(keys, responses))
        kept = coref_scores(zip(keys, responses))
        scores.update({f"singletons_{m}_f1": kept[f"{m}_f1"] for m in METRICS})
        scores["singletons_avg_f1"] = kept["avg_f1"]
        return scores

    def floor(self, train: list[dict], examples: list[dict]) -> list[list[list[Span]]]:
        """The string-match floor (:mod:`.floor`); it reads no training document."""
        return [string_match_clusters(d["sentences"]) for d in examples]


TASK = CorefTask()
