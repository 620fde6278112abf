"""CoNLL-2005 semantic role labelling (paper §4, Table 1's SRL row): He et al.'s (2017) deep
highway BiLSTM tagger (:mod:`.model`), scored with the official scorer's semantics
(:mod:`elmo_repro.tasks.srl.metric`).

* Data: ``data/srl/<split>.jsonl`` (one proposition per line: its sentence's text id, the
  predicate's token index, BIO tags) and the split's sentences, each once (stage
  ``prepare_srl``). Test = WSJ 23 then Brown, each proposition marked with its ``domain``.
* Word vectors: exact form, else lowercased, else UNK (:mod:`elmo_repro.tasks.word_embeddings`),
  fine-tuned. Tags: the BIO tags of the training split (``O`` first, then sorted); a gold tag
  never seen in training cannot be predicted, and its argument counts as missed.
* ELMo: each sentence is embedded once (its text) and its layers are shared by all its
  propositions (issue 25: 2.3x fewer tokens than one embedding per predicate).
* Metrics: ``precision``, ``recall``, ``f1`` over WSJ propositions (dev, and the WSJ test set:
  the primary metric, ``test_f1``) and ``brown_precision``, ``brown_recall``, ``brown_f1`` over
  the Brown test set (``test_brown_f1``, out of domain), as ``srl-eval.pl`` (``V`` not scored,
  continuations merged, exact spans).
* Floor: each token's most frequent training tag at its clipped position relative to the
  predicate (:mod:`.floor`).
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
from ..base import pad_ids, pad_layers
from ..word_embeddings import build_embeddings, word_ids
from .floor import fit_position_tags, predict_position_tags
from .metric import srl_prf
from .model import SrlTagger

INFO = TASKS["srl"]
DOMAINS = ("wsj", "brown")
PRIMARY = "wsj"                   # scored without a prefix; the others as <domain>_<metric>
REPORTED = ("precision", "recall", "f1", "perfect_props")


@dataclass
class SrlVocab:
    """Word index and (2 + V, dim) matrix over every split's words; the training split's tags."""

    word_index: dict[str, int]
    embeddings: np.ndarray
    labels: list[str]


def bio_labels(examples: Sequence[dict]) -> list[str]:
    """``O`` then every other tag of ``examples``, sorted: the tagger's label set."""
    return ["O"] + sorted({tag for e in examples for tag in e["tags"] if tag != "O"})


def _check_example(path: Path, number: int, example: dict) -> None:
    """The fields a prepared proposition must hold beyond its text (``InputError`` otherwise)."""
    n = len(example["tokens"])
    if len(example["tags"]) != n:
        raise InputError(path, f"{len(example['tags'])} tags for a sentence of {n} tokens", line=number)
    p = example.get("predicate")
    if not (isinstance(p, int) and 0 <= p < n):
        raise InputError(path, f"'predicate' {p!r} is not a token index (0..{n - 1})", line=number)
    if example.get("domain") not in DOMAINS:
        raise InputError(path, f"'domain' {example.get('domain')!r} is not one of {', '.join(DOMAINS)}", line=number)
    bad = next((t for t in example["tags"] if t != "O" and t[:2] not in ("B-", "I-")), None)
    if bad is not None:
        raise InputError(path, f"{bad!r} is not a BIO tag (O, B-X, I-X)", line=number)


class SrlTask:
    """The task contract (:class:`elmo_repro.tasks.base.Task`) for CoNLL-2005 SRL."""

    name, title, metric = INFO.name, INFO.title, INFO.metric
    data_dir, features_dir, fields = Path(INFO.data_dir), Path(INFO.features_dir), INFO.fields

    def read(self, split: str, data_dir: Path | None = None) -> list[dict]:
        """The prepared split, checked; ``tokens`` filled in (shared by a sentence's propositions).

        Raises:
            InputError: naming the file and line (:func:`elmo_repro.data.examples.read_split`, and
                tags of another length than the sentence, a predicate outside it, an unknown
                domain, a tag that is not BIO).
        """
        root = Path(data_dir or self.data_dir)
        examples = read_split(root, split, self.fields, list_fields=("tags",))
        path = examples_path(root, split)
        for number, example in enumerate(examples, 1):
            _check_example(path, number, example)
        return examples

    def build_vocab(self, train: list[dict], splits: dict[str, list[dict]],
                    vectors: tuple[list[str], np.ndarray], seed: int) -> SrlVocab:
        """Word rows for every split's words; tags from ``train``."""
        tokens = (t for part in splits.values() for e in part for t in e["tokens"])
        word_index, embeddings = build_embeddings(vectors, tokens, seed)
        return SrlVocab(word_index, embeddings, bio_labels(train))

    def encode(self, vocab: SrlVocab, examples: list[dict], training: bool) -> list[dict[str, Any]]:
        """Per proposition: ``words`` (T,) (shared by a sentence's propositions), ``predicate``
        (T,) 0/1 and, for training, ``tags`` (T,) label ids.

        Raises:
            ValueError: a training tag outside the label set (cannot happen for labels built from it).
        """
        label_index = {label: i for i, label in enumerate(vocab.labels)}
        cache: dict[int, np.ndarray] = {}          # keyed by the shared token list's identity (read_split)
        out = []
        for e in examples:
            key = id(e["tokens"])
            if key not in cache:
                cache[key] = word_ids(e["tokens"], vocab.word_index)
            indicator = np.zeros(len(e["tokens"]), dtype=np.int64)
            indicator[e["predicate"]] = 1
            item = {"words": cache[key], "predicate": indicator}
            if training:
                unknown = sorted(set(e["tags"]) - label_index.keys())
                if unknown:
                    raise ValueError(f"training tags outside the label set: {unknown}")
                item["tags"] = np.array([label_index[t] for t in e["tags"]], dtype=np.int64)
            out.append(item)
        return out

    def collate(self, encoded: Sequence[dict], layers: list[dict[str, np.ndarray]] | None) -> dict[str, Any]:
        """Pad propositions into a batch: ``words`` (B, T), ``predicate`` (B, T), ``mask`` (B, T)
        bool, ``lengths`` (B,), ``tags`` (B, T) or None, ``elmo`` (B, L+1, T, D) float32 or None
        (a sentence's layers repeated for each of its propositions in the batch).

        Raises:
            ValueError: a sentence whose ELMo layers do not match its token count.
        """
        words, mask, lengths = pad_ids([e["words"] for e in encoded])
        predicate, _, _ = pad_ids([e["predicate"] for e in encoded])
        tags = pad_ids([e["tags"] for e in encoded])[0] if "tags" in encoded[0] else None
        elmo = None if layers is None else pad_layers([item["tokens"] for item in layers], lengths)
        return {"words": torch.from_numpy(words), "predicate": torch.from_numpy(predicate),
                "mask": torch.from_numpy(mask), "lengths": torch.from_numpy(lengths),
                "tags": None if tags is None else torch.from_numpy(tags),
                "elmo": None if elmo is None else torch.from_numpy(elmo)}

    def build_model(self, cfg: dict, vocab: SrlVocab, elmo: ElmoSpec | None,
                    elmo_shape: tuple[int, int] | None) -> SrlTagger:
        return SrlTagger(vocab.embeddings, vocab.labels, cfg, elmo, elmo_shape)

    def score(self, examples: list[dict], predictions: list[list[str]]) -> dict[str, float]:
        """Precision, recall, F1 and perfect propositions (percent; ``srl-eval.pl``'s semantics) of
        the WSJ propositions, and ``brown_<metric>`` of the Brown ones where the split has any.

        Raises:
            ValueError: different numbers of examples and predictions, or a prediction of another
                length than its sentence.
        """
        if len(examples) != len(predictions):
            raise ValueError(f"{len(predictions)} predictions for {len(examples)} propositions")
        scores: dict[str, float] = {}
        for domain in DOMAINS:
            chosen = [(e["tags"], p) for e, p in zip(examples, predictions) if e["domain"] == domain]
            if not chosen:
                continue
            result = srl_prf([g for g, _ in chosen], [p for _, p in chosen])
            prefix = "" if domain == PRIMARY else f"{domain}_"
            scores.update({f"{prefix}{key}": result[key] for key in REPORTED})
        return scores

    def floor(self, train: list[dict], examples: list[dict]) -> list[list[str]]:
        """The position floor (:mod:`.floor`) fitted on ``train``'s propositions."""
        table = fit_position_tags((e["predicate"], e["tags"]) for e in train)
        return [predict_position_tags(table, e["predicate"], len(e["tokens"])) for e in examples]


TASK = SrlTask()
