"""BLEU of the translation model, scored with sacrebleu (Post 2018) on detokenized output.

The model writes tokens (the 1B Word-style tokenizer's, :mod:`elmo_repro.data.multi30k`); they are
detokenized with sacremoses' Moses detokenizer for German and scored against the raw, cased
references with sacrebleu's defaults (13a tokenization, exponential smoothing, mixed case), so the
number is comparable with other sacrebleu scores on Multi30k test 2016 and its signature string says
how it was computed.

Published Multi30k En-De scores (McCann et al. 2017 among them) are instead multi-bleu.perl on
Moses-tokenized, lower-cased text: :func:`tokenized_lowercased_bleu` reproduces that convention with
sacrebleu (the output and the references re-tokenized by sacremoses' Moses tokenizer for German,
then ``tokenize="none", lowercase=True``), so it is the figure to set beside published numbers.
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


@functools.lru_cache(maxsize=None)
def _tokenizer(lang: str):
    from sacremoses import MosesTokenizer

    return MosesTokenizer(lang=lang)


def tokenized_lowercased_bleu(hypotheses: Sequence[str], references: Sequence[str],
                              lang: str = "de") -> tuple[float, str, str]:
    """``(BLEU, score line, signature)`` as published Multi30k scores are computed: detokenized
    hypotheses and raw references Moses-tokenized (sacremoses, no escaping), lower-cased, no further
    tokenization (sacrebleu ``BLEU(tokenize="none", lowercase=True)``, the multi-bleu.perl ``-lc``
    convention).

    Raises:
        ValueError: a different number of hypotheses and references, or none.
    """
    from sacrebleu.metrics import BLEU

    if len(hypotheses) != len(references) or not references:
        raise ValueError(f"{len(hypotheses)} hypotheses for {len(references)} references")
    tokenizer = _tokenizer(lang)
    tokenize = lambda text: tokenizer.tokenize(text, escape=False, return_str=True)  # noqa: E731
    metric = BLEU(tokenize="none", lowercase=True, force=True)
    score = metric.corpus_score([tokenize(h) for h in hypotheses], [[tokenize(r) for r in references]])
    return score.score, str(score), str(metric.get_signature())


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
