"""BLEU as published Multi30k En→De scores are computed (McCann et al. 2017 among them): multi-bleu.perl
on Moses-tokenized, lower-cased text, reproduced with sacrebleu so the signature says how.

The translation model's own score (:mod:`.bleu`) is sacrebleu's default: cased, 13a-tokenized
detokenized output, the reproducible figure. This one re-tokenizes the detokenized output and the
raw references with sacremoses' Moses tokenizer for German (no escaping), lower-cases them and
scores them with ``BLEU(tokenize="none", lowercase=True)``: the figure to set beside published
numbers. Kept apart from training (stage ``cove_published_bleu``), so it never retrains the model.
"""

from __future__ import annotations

import functools
from typing import Sequence


@functools.lru_cache(maxsize=None)
def _tokenizer(lang: str):
    from sacremoses import MosesTokenizer

    return MosesTokenizer(lang=lang)


def moses_tokenize(text: str, lang: str = "de") -> str:
    """Moses tokenization (sacremoses, no escaping): ``"Ein Mann."`` -> ``"Ein Mann ."``."""
    return _tokenizer(lang).tokenize(text, escape=False, return_str=True)


def tokenized_lowercased_bleu(hypotheses: Sequence[str], references: Sequence[str],
                              lang: str = "de") -> tuple[float, str, str]:
    """``(BLEU, sacrebleu's score line, signature)`` of detokenized hypotheses against one raw
    reference each, both Moses-tokenized and lower-cased (the multi-bleu.perl ``-lc`` convention).

    Raises:
        ValueError: a different number of hypotheses and references, or none.
    """
    from sacrebleu.metrics import BLEU

    if len(hypotheses) != len(references) or not references:
        raise ValueError(f"{len(hypotheses)} hypotheses for {len(references)} references")
    metric = BLEU(tokenize="none", lowercase=True, force=True)
    score = metric.corpus_score([moses_tokenize(h, lang) for h in hypotheses],
                                [[moses_tokenize(r, lang) for r in references]])
    return score.score, str(score), str(metric.get_signature())
