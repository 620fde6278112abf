"""SRL precision, recall and F1 with the semantics of the official CoNLL-2005 scorer.

``srl-eval.pl`` (Carreras & Màrquez; srlconll-1.1) scores each gold proposition (target verb)
against the predicted one at the same position:

* **Arguments** are read from a proposition's phrases in order: a phrase labelled ``C-X``
  continues the latest argument X of that proposition (the argument becomes discontinuous, spanning
  from its first phrase's start to its last phrase's end); a ``C-X`` with no X before it becomes a
  plain X argument. ``R-X`` is an ordinary label of its own.
* **Matching**: a predicted argument is correct when a gold argument has the same start and end,
  the same label and, for a discontinuous argument, the same set of phrases (a continuous one
  never matches a discontinuous one). Each predicted argument is then correct (``ok``) or excess
  (``op``); every gold argument left unmatched is missed (``ms``).
* **Excluded**: arguments labelled ``V`` (the verb, with its ``C-V`` particle) are counted apart
  and left out of the overall figures (the excess ones by the predicted label, the missed ones by
  the gold label).
* precision = ok / (ok + op), recall = ok / (ok + ms), F1 their harmonic mean, in percent, summed
  over all propositions (micro-averaged); a gold proposition without a prediction has all its
  arguments missed, and a predicted one without gold is skipped.

Propositions here are BIO tag sequences, one per target verb (:func:`elmo_repro.tasks.srl.reader.
spans_to_bio` turns a props column into them; the tagger predicts them).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Sequence

from ...io import InputError
from .reader import Span, bio_to_spans, read_props

EXCLUDED = frozenset({"V"})


@dataclass(frozen=True)
class Argument:
    """An argument of a proposition: its label and its phrases ``(start, end)`` (inclusive token
    indices) in order; more than one phrase for a discontinuous (``C-``) argument."""

    label: str
    phrases: tuple[tuple[int, int], ...]

    @property
    def start(self) -> int:
        return self.phrases[0][0]

    @property
    def end(self) -> int:
        return self.phrases[-1][1]


def arguments(spans: Sequence[Span]) -> list[Argument]:
    """The arguments of a proposition's phrases (ordered by start), ``C-X`` joined to the latest X
    before it as ``srl-eval.pl``'s ``prop->load_SE_tagging`` does."""
    args: list[list] = []                      # [label, [phrases]] in order of their first phrase
    latest: dict[str, list] = {}
    for label, start, end in sorted(spans, key=lambda s: (s[1], s[2])):
        if label.startswith("C-"):
            base = label[2:]
            if base in latest:
                latest[base][1].append((start, end))
                continue
            label = base                       # a continuation with nothing to continue
        arg = [label, [(start, end)]]
        args.append(arg)
        latest[label] = arg
    return [Argument(label, tuple(phrases)) for label, phrases in args]


@dataclass
class Counts:
    """Correct, excess and missed arguments (``srl-eval.pl``'s ok, op, ms)."""

    ok: int = 0
    op: int = 0
    ms: int = 0

    def add(self, other: "Counts") -> None:
        self.ok, self.op, self.ms = self.ok + other.ok, self.op + other.op, self.ms + other.ms

    def prf(self) -> dict[str, float]:
        """precision, recall, F1 in percent (0 where undefined, as ``precrecf1``)."""
        p = 100.0 * self.ok / (self.ok + self.op) if self.ok + self.op else 0.0
        r = 100.0 * self.ok / (self.ok + self.ms) if self.ok + self.ms else 0.0
        return {"precision": p, "recall": r, "f1": 2 * p * r / (p + r) if p + r else 0.0}


def score_proposition(gold: Sequence[Argument], predicted: Sequence[Argument]) -> tuple[Counts, Counts]:
    """``(scored, excluded)`` counts of one proposition (``discriminate_args`` then the ``V``
    exclusion of ``evaluate_proposition``)."""
    remaining = {(a.start, a.end): a for a in gold}
    scored, excluded = Counts(), Counts()
    for arg in predicted:
        bucket = excluded if arg.label in EXCLUDED else scored
        match = remaining.get((arg.start, arg.end))
        if match is not None and match.label == arg.label and match.phrases == arg.phrases:   # both in order
            bucket.ok += 1
            del remaining[(arg.start, arg.end)]
        else:
            bucket.op += 1
    for arg in remaining.values():
        (excluded if arg.label in EXCLUDED else scored).ms += 1
    return scored, excluded


def srl_prf(gold: Sequence[Sequence[str]], predicted: Sequence[Sequence[str] | None]) -> dict[str, float]:
    """Overall scores of predicted propositions against gold ones, ``srl-eval.pl``'s semantics.

    Args:
        gold: BIO tags per gold proposition.
        predicted: BIO tags per proposition, aligned with ``gold``; None for a proposition left
            unpredicted (all its arguments are missed).

    Returns:
        ``precision``, ``recall``, ``f1`` (percent, ``V`` excluded), ``perfect_props`` (percent of
        propositions with no excess and no missed argument), and the counts ``correct``,
        ``excess``, ``missed``.

    Raises:
        ValueError: ``gold`` and ``predicted`` of different lengths, or a proposition whose
            predicted tags do not cover its tokens.
    """
    if len(gold) != len(predicted):
        raise ValueError(f"{len(predicted)} predicted propositions for {len(gold)} gold ones")
    total, perfect = Counts(), 0
    for index, (g, p) in enumerate(zip(gold, predicted)):
        if p is not None and len(p) != len(g):
            raise ValueError(f"proposition {index}: {len(p)} predicted tags for {len(g)} tokens")
        scored, _ = score_proposition(arguments(bio_to_spans(g)), arguments(bio_to_spans(p)) if p else [])
        total.add(scored)
        perfect += scored.op == 0 and scored.ms == 0
    return {**total.prf(), "perfect_props": 100.0 * perfect / len(gold) if gold else 0.0,
            "correct": float(total.ok), "excess": float(total.op), "missed": float(total.ms)}


def score_props(gold: str | os.PathLike, predicted: str | os.PathLike) -> dict[str, float]:
    """``srl-eval.pl <gold props> <predicted props>``: overall scores of two props files.

    Sentences are paired in file order and propositions by the position of their verb: a gold
    proposition without a predicted one at its position, or with one for another verb, has all its
    arguments missed; a predicted one without gold is skipped (the script's warnings).

    Returns:
        As :func:`srl_prf`, plus ``sentences`` and ``propositions`` (gold ones).

    Raises:
        InputError: as :func:`elmo_repro.tasks.srl.reader.read_props`; naming the predicted file for
            a different number of sentences, or a sentence of a different length.
    """
    gold_sentences, pred_sentences = read_props(gold), read_props(predicted, verb_check=False)
    if len(gold_sentences) != len(pred_sentences):
        raise InputError(predicted, f"{len(pred_sentences)} sentences, but {gold} has {len(gold_sentences)}")
    gold_tags, pred_tags = [], []
    for number, ((length, gold_props), (pred_length, pred_props)) in enumerate(zip(gold_sentences, pred_sentences)):
        if length != pred_length:
            raise InputError(predicted, f"sentence {number + 1} has {pred_length} tokens, {length} in {gold}")
        by_position = {p.predicate: p for p in pred_props}
        for prop in gold_props:
            match = by_position.get(prop.predicate)
            gold_tags.append(prop.tags)
            pred_tags.append(match.tags if match is not None and match.lemma == prop.lemma else None)
    return {**srl_prf(gold_tags, pred_tags), "sentences": float(len(gold_sentences)),
            "propositions": float(len(gold_tags))}
