"""BLEU of the translation model, scored with sacrebleu (Post 2018) on detokenized output.

The model writes tokens (the 1B Word-style tokenizer's, :mod:`elmo_repro.data.multi30k`); they are
detokenized with sacremoses' Moses detokenizer for German and scored against the raw, cased
references with sacrebleu's defaults (13a tokenization, exponential smoothing, mixed case), so the
number is comparable with other sacrebleu scores on Multi30k test 2016 and its signature string says
how it was computed.
"""

from __future__ import annotations

import functools
from typing import Sequence


@functools.lru_cache(maxsize=None)
def _detokenizer(lang: str):
    from sacremoses import MosesDetokenizer

    return MosesDetokenizer(lang=lang)


def detokenize(tokens: Sequence[str], lang: str = "de") -> str:
    """Moses detokenization (sacremoses): ``["Ein", "Mann", "."]`` -> ``"Ein Mann."``."""
    return _detokenizer(lang).detokenize(list(tokens))


def corpus_bleu(hypotheses: Sequence[str], references: Sequence[str]) -> tuple[float, str, str]:
    """``(BLEU, sacrebleu's score line, signature)`` of detokenized hypotheses against one reference
    each (sacrebleu ``BLEU()`` defaults).

    Raises:
        ValueError: a different number of hypotheses and references, or none.
    """
    from sacrebleu.metrics import BLEU

    if len(hypotheses) != len(references) or not references:
        raise ValueError(f"{len(hypotheses)} hypotheses for {len(references)} references")
    metric = BLEU()
    score = metric.corpus_score(list(hypotheses), [list(references)])
    return score.score, str(score), str(metric.get_signature())
