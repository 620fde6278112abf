"""The floor beside SQuAD's row: Rajpurkar et al. (2016, §5.1)'s sliding-window baseline.

Their candidates are the parse constituents of the paragraph; the data mirror has no parses, so
here a candidate is every span of up to :data:`MAX_TOKENS` tokens within one sentence that starts
and ends with a word (a token with a letter or digit). Then, as theirs:

1. a candidate's overlap is the number of distinct unigrams and bigrams (lower-cased words) that
   its sentence, *without the candidate*, shares with the question; only the candidates with the
   largest overlap are kept;
2. among those, the sliding window of Richardson et al. (2013, MCTest): with S = the question's
   words ∪ the candidate's words, a window of |S| tokens slides over the paragraph and scores
   Σ IC(w) over its tokens w in S, IC(w) = log(1 + 1/count(w in paragraph)); the candidate with the
   best window wins (ties: the earliest, then the shortest).

It needs no training data: it is the same for every seed.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Sequence

import numpy as np

from .reader import sentence_bounds

MAX_TOKENS = 5


def _is_word(token: str) -> bool:
    return any(ch.isalnum() for ch in token)


def _ngrams(words: Sequence[str | None]) -> set:
    """Distinct unigrams and bigrams of a sequence; None (removed or punctuation) breaks bigrams."""
    grams = {w for w in words if w is not None}
    grams |= {(a, b) for a, b in zip(words, words[1:]) if a is not None and b is not None}
    return grams


def sliding_window_span(question: Sequence[str], context: Sequence[str]) -> tuple[int, int]:
    """The baseline's inclusive (first, last) token span for one question over its paragraph.

    Raises:
        ValueError: a paragraph without a word.
    """
    lower = [t.lower() if _is_word(t) else None for t in context]
    asked = _ngrams([t.lower() if _is_word(t) else None for t in question])
    best_overlap, kept = -1, []
    for first, last in sentence_bounds(context):
        words = lower[first:last + 1]
        n = len(words)
        # matched n-grams of the sentence's first k words (left[k]) and of its words from k on
        # (right[k]); a candidate's rest is left[i] ∪ right[j + 1], no bigram across the gap
        left, right = [set()], [set() for _ in range(n + 1)]
        for k in range(n):                   # what word k adds going right: itself, (k-1, k)
            grams = {words[k], (words[k - 1], words[k]) if k else None} & asked
            left.append(left[k] | grams)
        for k in range(n - 1, -1, -1):       # going left: itself, (k, k+1)
            grams = {words[k], (words[k], words[k + 1]) if k + 1 < n else None} & asked
            right[k] = right[k + 1] | grams
        for i in range(n):
            if words[i] is None:
                continue
            for j in range(i, min(i + MAX_TOKENS, n)):
                if words[j] is None:
                    continue
                overlap = len(left[i] | right[j + 1])
                if overlap > best_overlap:
                    best_overlap, kept = overlap, [(first + i, first + j)]
                elif overlap == best_overlap:
                    kept.append((first + i, first + j))
    if not kept:
        raise ValueError("a paragraph without a word has no candidate span")
    counts = Counter(w for w in lower if w is not None)
    ic = np.array([math.log(1.0 + 1.0 / counts[w]) if w is not None else 0.0 for w in lower])
    question_words = {w for w in asked if isinstance(w, str)}
    positions: dict[str, list[int]] = {}
    for k, w in enumerate(lower):
        positions.setdefault(w, []).append(k)
    base = np.array([ic[k] if w in question_words else 0.0 for k, w in enumerate(lower)])
    best, best_score = kept[0], -1.0
    for i, j in kept:
        answer_words = {w for w in lower[i:j + 1] if w is not None}
        weights = base.copy()
        for w in answer_words - question_words:
            weights[positions[w]] = ic[positions[w]]
        width = min(len(question_words | answer_words), len(lower))
        cumulative = np.concatenate([[0.0], np.cumsum(weights)])
        score = float((cumulative[width:] - cumulative[:-width]).max())     # the best window of |S| tokens
        if score > best_score + 1e-9:                                        # kept is in (start, end) order
            best, best_score = (i, j), score
    return best
