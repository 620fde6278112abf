"""Span P/R/F1 with conlleval semantics on a hand-scored case."""

import pytest
from fp_bounds import U64, gamma

from elmo_repro.tasks.ner.metric import conll_span_f1, span_prf

GOLD_IOB1 = [
    ["I-PER", "I-PER", "B-PER", "O", "I-LOC"],     # PER[0:2], PER[2] (IOB1: B- splits), LOC[4]
    ["I-ORG", "I-ORG", "I-ORG", "O"],              # ORG[0:3]
    ["O", "O", "I-MISC"],                          # MISC[2]
]
PRED_BIOUL = [
    ["B-PER", "L-PER", "U-PER", "O", "U-ORG"],     # 2 correct, LOC predicted as ORG (type error)
    ["B-ORG", "L-ORG", "O", "O"],                  # ORG[0:2]: boundary error
    ["O", "O", "O"],                               # MISC missed
]


def test_hand_scored_case():
    # gold 5 entities, predicted 4, correct 2: P = 2/4, R = 2/5, F1 = 2PR/(P+R) = 4/9.
    scores = conll_span_f1(GOLD_IOB1, PRED_BIOUL)
    # float64 (u = 2^-53): P and R are one division and a product by 100 (2 roundings); F1 adds
    # 2 P R / (P + R) (4) and 400 / 9 is rounded too (1)
    assert scores["precision"] == pytest.approx(50.0, rel=gamma(2, U64), abs=0)
    assert scores["recall"] == pytest.approx(40.0, rel=gamma(2, U64), abs=0)
    assert scores["f1"] == pytest.approx(400 / 9, rel=gamma(7, U64), abs=0)


def test_iob1_adjacent_same_type_is_two_entities():
    # Predicting one 3-token PER where IOB1 gold has two entities gets neither right.
    assert conll_span_f1([["I-PER", "I-PER", "B-PER"]], [["B-PER", "I-PER", "L-PER"]])["f1"] == 0.0
    assert conll_span_f1([["I-PER", "I-PER", "B-PER"]], [["B-PER", "L-PER", "U-PER"]])["f1"] == 100.0


def test_edge_cases():
    assert span_prf([["O", "O"]], [["O", "O"]]) == {"precision": 0.0, "recall": 0.0, "f1": 0.0}
    # conlleval: an I- after O opens a chunk, so a malformed prediction still scores its span.
    assert span_prf([["O", "B-LOC", "I-LOC"]], [["O", "I-LOC", "I-LOC"]])["f1"] == 100.0
    with pytest.raises(ValueError):
        span_prf([["O"]], [["O", "O"]])
