"""Evaluation text in training text: the sentence-level contamination check and document removal.

A training text is contaminated when one of its sentences is also a sentence of an evaluation
split (:mod:`elmo_repro.data.eval_text`). Sentences are compared by a normalised key
(:func:`sentence_key`): lower case, PTB bracket escapes undone, then everything except letters
and digits removed, so whitespace, tokenization (``don't`` / ``do n't`` / ``don 't``), quote style
(`````` / ``"``) and punctuation cannot hide a copy.

Short generic sentences ("He said .", "Thank you .") collide by chance across unrelated texts, so
an overlap only *counts* when the evaluation sentence has at least ``min_words`` word tokens
(tokens with a letter or digit; :func:`word_count`). Every overlap is reported; only counted ones
fail the check (:func:`check`) and remove training documents (:func:`remove_documents`).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Iterable, Iterator, Sequence

from ..io import InputError

# Penn Treebank escapes as written by CoNLL-2005, the PTB sample and SST.
_PTB_ESCAPES = {"-LRB-": "(", "-RRB-": ")", "-LCB-": "{", "-RCB-": "}", "-LSB-": "[", "-RSB-": "]"}


def sentence_key(tokens: Sequence[str]) -> str:
    """The comparison key of a sentence: its letters and digits, lower-cased, in order.

    ``["Don't", "-LRB-", "stop", "-RRB-", "."]`` and ``["do", "n't", "(", "STOP", ")"]`` both give
    ``"dontstop"``. Returns ``""`` for a sentence without letters or digits.
    """
    text = "".join(_PTB_ESCAPES.get(token, token) for token in tokens).lower()
    return "".join(ch for ch in text if ch.isalnum())


def word_count(tokens: Sequence[str]) -> int:
    """Number of tokens holding at least one letter or digit (punctuation tokens do not count)."""
    return sum(1 for token in tokens if any(ch.isalnum() for ch in _PTB_ESCAPES.get(token, token)))


@dataclass(frozen=True)
class EvalSentence:
    split: str
    location: str     # file:line (or file:item) of the evaluation sentence
    words: int        # word_count of the evaluation sentence


@dataclass(frozen=True)
class Overlap:
    """One training sentence equal (by key) to one evaluation sentence."""

    text: str          # name of the training text
    location: str      # where in the training text (file:line, or source document)
    split: str
    eval_location: str
    words: int         # word_count of the evaluation sentence
    counted: bool      # words >= min_words: fails the check


@dataclass
class EvalIndex:
    """Every evaluation sentence by key. Build with :meth:`build`."""

    min_words: int
    by_key: dict[str, list[EvalSentence]] = field(default_factory=dict)
    sentences: Counter = field(default_factory=Counter)   # split -> number of sentences read

    @classmethod
    def build(cls, splits: dict[str, Iterable[tuple[str, list[str]]]], min_words: int) -> "EvalIndex":
        """Index ``{split name: (location, tokens) pairs}``.

        Raises:
            ValueError: ``min_words`` < 1.
            InputError: a split has no sentence at all (a wrong or empty file would otherwise
                make the check pass vacuously).
        """
        if int(min_words) < 1:
            raise ValueError(f"min_words must be >= 1, got {min_words}")
        index = cls(int(min_words))
        for split, sentences in splits.items():
            for location, tokens in sentences:
                index.sentences[split] += 1
                key = sentence_key(tokens)
                if key:
                    index.by_key.setdefault(key, []).append(EvalSentence(split, location, word_count(tokens)))
            if not index.sentences[split]:
                raise InputError(split, "evaluation split has no sentences")
        return index

    def matches(self, tokens: Sequence[str]) -> list[EvalSentence]:
        return self.by_key.get(sentence_key(tokens), [])

    def is_counted(self, match: EvalSentence) -> bool:
        return match.words >= self.min_words


def find_overlaps(text: str, sentences: Iterable[tuple[str, Sequence[str]]], index: EvalIndex) -> Iterator[Overlap]:
    """Every (training sentence, evaluation sentence) pair with equal keys, in training order.

    Args:
        text: name of the training text (for the report).
        sentences: ``(location, tokens)`` of the training text.
    """
    for location, tokens in sentences:
        for match in index.matches(tokens):
            yield Overlap(text, location, match.split, match.location, match.words, index.is_counted(match))


def remove_documents(documents: Iterable[tuple[str, list[list[str]]]], index: EvalIndex
                     ) -> tuple[list[tuple[str, list[list[str]]]], dict[str, list[Overlap]]]:
    """Drop every training document that holds a counted overlap.

    Args:
        documents: ``(document id, sentences)`` in order.

    Returns:
        ``(kept documents, {removed document id: its counted overlaps})``; kept documents keep
        their order.
    """
    kept, removed = [], {}
    for doc_id, sentences in documents:
        overlaps = [o for o in find_overlaps("", ((doc_id, s) for s in sentences), index) if o.counted]
        if overlaps:
            removed[doc_id] = overlaps
        else:
            kept.append((doc_id, sentences))
    return kept, removed


def summarize(overlaps: Iterable[Overlap], index: EvalIndex, texts: dict[str, int]) -> dict:
    """The report: per training text and split, counted and uncounted overlaps (pairs) and the
    number of distinct evaluation sentences hit (locations go to the stage's overlaps.tsv).

    Args:
        texts: ``{training text name: number of sentences}``.
    """
    overlaps = list(overlaps)
    table = {text: {split: {"counted": 0, "below_threshold": 0, "eval_sentences_hit": 0}
                    for split in index.sentences} for text in texts}
    hit: dict[tuple[str, str], set[str]] = {}
    for o in overlaps:
        cell = table[o.text][o.split]
        if o.counted:
            cell["counted"] += 1
            hit.setdefault((o.text, o.split), set()).add(o.eval_location)
            cell["eval_sentences_hit"] = len(hit[(o.text, o.split)])
        else:
            cell["below_threshold"] += 1
    return {
        "min_words": index.min_words,
        "training_texts": texts,
        "eval_sentences": dict(index.sentences),
        "counted_overlaps": sum(o.counted for o in overlaps),
        "below_threshold_overlaps": sum(not o.counted for o in overlaps),
        "by_text_and_split": table,
        "passed": not any(o.counted for o in overlaps),
    }


def check(overlaps: Sequence[Overlap], min_words: int) -> None:
    """Raise :class:`ContaminationError` listing the counted overlaps, if any."""
    counted = [o for o in overlaps if o.counted]
    if counted:
        lines = [f"  {o.text} {o.location} = {o.split} {o.eval_location} ({o.words} words)" for o in counted[:20]]
        more = f"\n  ... and {len(counted) - 20} more" if len(counted) > 20 else ""
        raise ContaminationError(f"{len(counted)} training sentences of >= {min_words} words occur in "
                                 "evaluation splits:\n" + "\n".join(lines) + more)


class ContaminationError(RuntimeError):
    """A training text holds evaluation sentences above the length threshold."""
