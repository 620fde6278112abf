"""SQuAD v1.1 (paper §4, Table 1): extractive question answering with Clark and Gardner's BiDAF +
self-attention reader (:mod:`.model`), exact match and F1 as the official ``evaluate-v1.1.py``
(:mod:`elmo_repro.tasks.squad.metric`) on the report part.

* Data: ``data/squad/<split>.jsonl``, its texts (questions and paragraphs, each paragraph once) and
  ``<split>.paragraphs.jsonl`` (raw text and token offsets), from stage ``prepare_squad``; which
  articles form which part is ``tasks.squad.data``.
* Word vectors: exact form, else lowercased, else UNK (:mod:`elmo_repro.tasks.word_embeddings`),
  shared by question and paragraph; characters from the training part (unseen ones are UNK).
* ELMo: question and paragraph are embedded by the biLM each on its own and mixed by the same
  ScalarMix, at the input and after the shared GRU (:mod:`.model`). A paragraph is embedded whole,
  as one sequence, and once however many questions it has (the texts of ``data/squad``): document-qa
  runs its biLM over the paragraph's tokens too, so a word's vectors see the sentences around it.
  The biLM is stateless and trained on single sentences, so paragraphs (~145 tokens, up to ~700)
  are longer than anything it saw in training; domain fine-tuning reads them whole.
* Batches are bucketed by the paragraph's length (:meth:`SquadTask.batch_length`), so a paragraph's
  questions share batches; a batch holds each of its paragraphs once and the reader embeds and
  encodes it once (:meth:`SquadTask.collate`, :mod:`.model`).
* Loss: cross-entropy of the first answer's start and end token (+ the ScalarMix penalty).
  Selection on the selection part's F1. Predictions are inclusive token spans ``[first, last]``
  (ids, never text); scoring maps them to the paragraph's substring through the token offsets.
* Floor: Rajpurkar et al.'s sliding-window baseline (:mod:`.sliding_window`), which needs no
  training data.
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
from .metric import squad_scores
from .model import SIDES, SquadReader
from .reader import read_paragraphs, span_text
from .sliding_window import sliding_window_span

INFO = TASKS["squad"]


@dataclass
class SquadVocab:
    """Word index and (2 + V, dim) matrix over every split's words; characters of the training part."""

    word_index: dict[str, int]
    embeddings: np.ndarray
    char_vocab: dict[str, int]


def _check_example(path: Path, number: int, example: dict, paragraphs: list[dict]) -> None:
    """The fields a prepared SQuAD example must hold beyond its texts (``InputError`` otherwise)."""
    if not isinstance(example.get("id"), str) or not example["id"]:
        raise InputError(path, "'id' must be a question id (a non-empty string)", line=number)
    answers = example.get("answers")
    if not (isinstance(answers, list) and answers and all(isinstance(a, str) for a in answers)):
        raise InputError(path, f"question {example['id']}: 'answers' must be a non-empty list of strings", line=number)
    p = example.get("paragraph")
    if not (isinstance(p, int) and 0 <= p < len(paragraphs)):
        raise InputError(path, f"question {example['id']}: 'paragraph' {p!r} is not a line of the paragraphs "
                               f"file (0..{len(paragraphs) - 1})", line=number)
    if len(paragraphs[p]["offsets"]) != len(example["context"]):
        raise InputError(path, f"question {example['id']}: paragraph {p} has {len(paragraphs[p]['offsets'])} "
                               f"offsets for {len(example['context'])} context tokens", line=number)
    span = example.get("span")
    n = len(example["context"])
    if not (isinstance(span, list) and len(span) == 2 and all(isinstance(i, int) for i in span)
            and 0 <= span[0] <= span[1] < n):
        raise InputError(path, f"question {example['id']}: 'span' {span!r} is not [first, last] with "
                               f"0 <= first <= last < {n}", line=number)


class SquadTask:
    """The task contract (:class:`elmo_repro.tasks.base.Task`) for SQuAD v1.1."""

    name, title, metric = INFO.name, INFO.title, INFO.metric
    data_dir, features_dir, fields = Path(INFO.data_dir), Path(INFO.features_dir), INFO.fields

    def read(self, split: str, data_dir: Path | None = None) -> list[dict]:
        """The prepared split, checked: ``question`` and ``context`` tokens filled in, plus
        ``paragraph_text`` and ``offsets`` (shared with the other questions of the paragraph).

        Raises:
            InputError: naming the file and line (:func:`elmo_repro.data.examples.read_split`,
                :func:`elmo_repro.tasks.squad.reader.read_paragraphs`, and a missing or malformed ``id``,
                ``answers``, ``paragraph`` or ``span``).
        """
        root = Path(data_dir or self.data_dir)
        examples = read_split(root, split, self.fields)
        paragraphs = read_paragraphs(root, split)
        path = examples_path(root, split)
        for number, example in enumerate(examples, 1):
            _check_example(path, number, example, paragraphs)
            paragraph = paragraphs[example["paragraph"]]
            example["paragraph_text"], example["offsets"] = paragraph["text"], paragraph["offsets"]
        return examples

    def build_vocab(self, train: list[dict], splits: dict[str, list[dict]],
                    vectors: tuple[list[str], np.ndarray], seed: int) -> SquadVocab:
        """Word rows for every split's words; characters from ``train``'s questions and paragraphs."""
        tokens = (t for part in splits.values() for e in part for field in self.fields for t in e[field])
        word_index, embeddings = build_embeddings(vectors, tokens, seed)
        chars = build_char_vocab(t for e in train for field in self.fields for t in e[field])
        return SquadVocab(word_index, embeddings, chars)

    def encode(self, vocab: SquadVocab, examples: list[dict], training: bool) -> list[dict[str, Any]]:
        """Per question: ``<side>_words`` (T,) and ``<side>_chars`` (T, C) for question and context
        (a paragraph's arrays shared by its questions) and, for training, ``span`` (2,)."""
        # keyed by the token list's identity: the questions of a paragraph share its list
        # (read_split, data.squad.examples), and the lists outlive this loop
        cache: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        out = []
        for e in examples:
            item: dict[str, Any] = {}
            for side in SIDES:
                key = id(e[side])
                if key not in cache:
                    cache[key] = (word_ids(e[side], vocab.word_index), encode_chars(e[side], vocab.char_vocab))
                item[f"{side}_words"], item[f"{side}_chars"] = cache[key]
            if training:
                item["span"] = np.array(e["span"], dtype=np.int64)
            out.append(item)
        return out

    def batch_length(self, example: dict) -> int:
        """Batches are bucketed by the paragraph's tokens alone, so the questions of a paragraph
        fall into the same batches and share its encoding (:meth:`collate`)."""
        return len(example["context"])

    def collate(self, encoded: Sequence[dict], layers: list[dict[str, np.ndarray]] | None) -> dict[str, Any]:
        """A batch of B questions over its U distinct paragraphs (each encoded once by the model):
        ``question_words`` (B, Tq), ``question_chars`` (B, Tq, C), ``question_mask`` (B, Tq) bool,
        ``question_lengths`` (B,); ``context_words`` (U, Tc), ``context_chars`` (U, Tc, C),
        ``context_mask`` (U, Tc) bool, ``context_lengths`` (U,) and ``context_index`` (B,), each
        question's paragraph row; ``spans`` (B, 2) or None; ``elmo`` None or
        ``{"question": (B, L+1, Tq, D), "context": (U, L+1, Tc, D)}``.

        Raises:
            ValueError: ELMo layers that do not match a text's length.
        """
        # a paragraph's questions share its encoded arrays (encode's cache): identity is the key
        rows: dict[int, int] = {}
        members: dict[str, list[int]] = {"question": list(range(len(encoded))), "context": []}
        index = []
        for i, e in enumerate(encoded):
            if id(e["context_words"]) not in rows:
                rows[id(e["context_words"])] = len(members["context"])
                members["context"].append(i)
            index.append(rows[id(e["context_words"])])
        batch: dict[str, Any] = {"elmo": None if layers is None else {},
                                 "context_index": torch.tensor(index, dtype=torch.long)}
        for side in SIDES:
            chosen = [encoded[i] for i in members[side]]
            words, mask, lengths = pad_ids([e[f"{side}_words"] for e in chosen])
            width = max(e[f"{side}_chars"].shape[1] for e in chosen)
            chars = np.zeros((*words.shape, width), dtype=np.int64)
            for row, e in enumerate(chosen):
                c = e[f"{side}_chars"]
                chars[row, :c.shape[0], :c.shape[1]] = c
            batch.update({f"{side}_words": torch.from_numpy(words), f"{side}_chars": torch.from_numpy(chars),
                          f"{side}_mask": torch.from_numpy(mask), f"{side}_lengths": torch.from_numpy(lengths)})
            if layers is not None:
                batch["elmo"][side] = torch.from_numpy(pad_layers([layers[i][side] for i in members[side]], lengths))
        batch["spans"] = torch.from_numpy(np.stack([e["span"] for e in encoded])) if "span" in encoded[0] else None
        return batch

    def build_model(self, cfg: dict, vocab: SquadVocab, elmo: ElmoSpec | None,
                    elmo_shape: tuple[int, int] | None) -> SquadReader:
        return SquadReader(vocab.embeddings, len(vocab.char_vocab) + 2, cfg, elmo, elmo_shape)

    def score(self, examples: list[dict], predictions: list[list[int]]) -> dict[str, float]:
        """``{"em", "f1"}`` (percent, the official v1.1 script's semantics) of the predicted spans'
        paragraph substrings against every reference answer.

        Raises:
            ValueError: different numbers of examples and predictions.
        """
        if len(examples) != len(predictions):
            raise ValueError(f"{len(predictions)} predictions for {len(examples)} questions")
        references = {e["id"]: e["answers"] for e in examples}
        answers = {e["id"]: span_text(e["paragraph_text"], e["offsets"], first, last)
                   for e, (first, last) in zip(examples, predictions)}
        return squad_scores(references, answers)

    def floor(self, train: list[dict], examples: list[dict]) -> list[list[int]]:
        """The sliding-window baseline's span per question (``train`` is not used: it has no parameters)."""
        return [list(sliding_window_span(e["question"], e["context"])) for e in examples]


TASK = SquadTask()
