"""Entity-level span precision / recall / F1 with conlleval semantics (CoNLL-2003 shared task scorer).

An entity counts as correct only if its type and both boundaries match a gold entity; the scores
are micro-averaged over all entities of the data set. Scoring is done by seqeval's default
(non-strict) mode, whose chunk start/end rules are conlleval's; it is given IOB2 on both sides:
gold tags are converted from the file's IOB1 (where ``I-PER I-PER B-PER`` is two entities) and
predictions from the tagger's BIOUL.
"""

from __future__ import annotations

from seqeval.metrics.sequence_labeling import precision_recall_fscore_support

from .reader import bioul_to_iob2, to_iob2


def span_prf(gold_iob2: list[list[str]], pred_iob2: list[list[str]]) -> dict[str, float]:
    """Micro span precision, recall and F1 in percent (0-100) of IOB2 sentences.

    Args:
        gold_iob2, pred_iob2: one tag list per sentence, pairwise of equal length.

    Returns:
        ``{"precision", "recall", "f1"}``; a zero denominator gives 0 (conlleval prints 0 too).
    """
    if len(gold_iob2) != len(pred_iob2) or any(len(g) != len(p) for g, p in zip(gold_iob2, pred_iob2)):
        raise ValueError("gold and predicted tag sequences differ in number or length")
    precision, recall, f1, _ = precision_recall_fscore_support(
        gold_iob2, pred_iob2, average="micro", zero_division=0)
    return {"precision": 100.0 * float(precision), "recall": 100.0 * float(recall), "f1": 100.0 * float(f1)}


def conll_span_f1(gold_iob1: list[list[str]], pred_bioul: list[list[str]]) -> dict[str, float]:
    """Span P/R/F1 (percent) of BIOUL predictions against CoNLL-2003 IOB1 gold tags."""
    return span_prf([to_iob2(tags) for tags in gold_iob1], [bioul_to_iob2(tags) for tags in pred_bioul])
