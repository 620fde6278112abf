"""Exact match and F1 of SQuAD v1.1, with the semantics of its official evaluation script
(``evaluate-v1.1.py``, Rajpurkar et al. 2016).

An answer is normalised by lower-casing, removing ASCII punctuation (``string.punctuation`` only:
curly quotes and dashes stay), removing the words a/an/the and collapsing white space. EM is 1 when
the normalised prediction equals a normalised reference; F1 is the bag-of-tokens overlap F1 of the
normalised strings. Each question takes the maximum over its references; the data set's score is
the mean over questions, in percent.

v1.1's quirk is kept: an empty prediction against a reference that normalises to "" scores EM 1
and F1 0 (the F1 has no common token, so it is 0 before any division).
"""

from __future__ import annotations

import re
import string
from collections import Counter
from typing import Mapping, Sequence

_PUNCTUATION = set(string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b")


def normalize_answer(text: str) -> str:
    """The official script's normalisation: lower case, no ASCII punctuation, no articles, single spaces."""
    text = "".join(ch for ch in text.lower() if ch not in _PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())


def exact_match(prediction: str, reference: str) -> float:
    """1.0 when both normalise to the same string, else 0.0."""
    return float(normalize_answer(prediction) == normalize_answer(reference))


def token_f1(prediction: str, reference: str) -> float:
    """F1 (0-1) of the normalised strings' token bags; 0.0 when they share no token (empty ones included)."""
    predicted, gold = normalize_answer(prediction).split(), normalize_answer(reference).split()
    common = sum((Counter(predicted) & Counter(gold)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(predicted), common / len(gold)
    return 2 * precision * recall / (precision + recall)


def squad_scores(references: Mapping[str, Sequence[str]], predictions: Mapping[str, str]) -> dict[str, float]:
    """``{"em", "f1"}`` in percent over the questions of ``references`` (question id -> its
    reference answers), each the maximum over its references, as ``evaluate-v1.1.py``.

    Raises:
        ValueError: no questions, a question without references, or a question without a
            prediction (the official script scores it 0 with a warning; here a missing prediction
            is a bug of the caller, never a silent zero).
    """
    if not references:
        raise ValueError("no questions to score")
    em = f1 = 0.0
    for qid, answers in references.items():
        if not answers:
            raise ValueError(f"question {qid} has no reference answer")
        if qid not in predictions:
            raise ValueError(f"no prediction for question {qid}")
        em += max(exact_match(predictions[qid], a) for a in answers)
        f1 += max(token_f1(predictions[qid], a) for a in answers)
    return {"em": 100.0 * em / len(references), "f1": 100.0 * f1 / len(references)}
