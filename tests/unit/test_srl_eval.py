"""The CoNLL-2005 reader and the SRL scorer (srl-eval.pl semantics), on hand-worked props files.

Every sentence here is invented; counts are worked by hand from the scorer's rules
(elmo_repro.tasks.srl.metric's docstring).
"""

import re

import pytest

from elmo_repro.tasks.srl.reader import (
    Proposition, bio_to_spans, cap_sentences, parse_start_end, read_conll2005, read_props, spans_to_bio,
    write_props)
from elmo_repro.io import InputError
from elmo_repro.tasks.srl.metric import arguments, score_props, srl_prf

# "Kim bought the red car yesterday ." -- buy at 1; "Prices , he said , fell ." -- say at 3 (A1
# discontinuous: "Prices ," ... "fell"); "Hello there !" -- no target verb.
WORDS = """Kim
bought
the
red
car
yesterday
.

Prices
,
he
said
,
fell
.

Hello
there
!
"""
GOLD = """-    (A0*)
buy  (V*)
-    (A1*
-    *
-    *)
-    (AM-TMP*)
-    *

-    (A1*
-    *)
-    (A0*)
say  (V*)
-    *
-    (C-A1*)
-    *

-
-
-
"""


def _write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return path


def _props(column_1, column_2):
    """A props file of the first two sentences with the given argument columns (one tag per
    token, space-separated), the third sentence unchanged."""
    verbs = [["-", "buy", "-", "-", "-", "-", "-"], ["-", "-", "-", "say", "-", "-", "-"]]
    blocks = ["\n".join(f"{v} {t}" for v, t in zip(vs, col.split())) for vs, col in zip(verbs, (column_1, column_2))]
    return "\n\n".join(blocks) + "\n\n-\n-\n-\n"


GOLD_1 = "(A0*) (V*) (A1* * *) (AM-TMP*) *"
GOLD_2 = "(A1* *) (A0*) (V*) * (C-A1*) *"


def test_the_reader_turns_start_end_columns_into_bio_propositions(tmp_path):
    sentences = read_conll2005(_write(tmp_path, "w", WORDS), _write(tmp_path, "p", GOLD))
    assert [s["tokens"][:2] for s in sentences] == [["Kim", "bought"], ["Prices", ","], ["Hello", "there"]]
    assert sentences[0]["propositions"] == [Proposition(1, "buy", (
        "B-A0", "B-V", "B-A1", "I-A1", "I-A1", "B-AM-TMP", "O"))]
    assert sentences[1]["propositions"][0].tags == ("B-A1", "I-A1", "B-A0", "B-V", "O", "B-C-A1", "O")
    assert sentences[2]["propositions"] == []
    # write_props is read_props's inverse
    write_props(tmp_path / "again", read_props(tmp_path / "p"))
    assert read_props(tmp_path / "again") == read_props(tmp_path / "p")


def test_a_continuation_joins_the_argument_it_continues():
    args = arguments(bio_to_spans(["B-A1", "I-A1", "B-A0", "B-V", "O", "B-C-A1", "O"]))
    assert [(a.label, a.phrases) for a in args] == [("A1", ((0, 1), (5, 5))), ("A0", ((2, 2),)), ("V", ((3, 3),))]
    # a continuation with nothing before it is a plain argument; R-A0 is a label of its own
    args = arguments([("C-A1", 0, 0), ("R-A0", 2, 2)])
    assert [(a.label, a.phrases) for a in args] == [("A1", ((0, 0),)), ("R-A0", ((2, 2),))]


@pytest.mark.parametrize("column_1, column_2, ok, op, ms", [
    (GOLD_1, GOLD_2, 5, 0, 0),                                       # perfect (V not counted)
    ("(A0*) (V*) (A1* * *) * *", GOLD_2, 4, 0, 1),                   # AM-TMP missing
    ("(A0*) (V*) (A1* * *) (AM-TMP*) (AM-LOC*)", GOLD_2, 5, 1, 0),   # a spurious AM-LOC
    ("(A0*) (V*) (A2* * *) (AM-TMP*) *", GOLD_2, 4, 1, 1),           # A1 labelled A2
    ("(A0*) (V*) (A1* *) * (AM-TMP*) *", GOLD_2, 4, 1, 1),           # A1 one word short
    (GOLD_1, "(A1* *) (A0*) (V*) * * *", 4, 1, 1),                   # A1 without its continuation
    (GOLD_1, "(A1* *) (A0*) (V*) * (A1*) *", 4, 2, 1),               # continuation as a second A1
    (GOLD_1, "(A1* *) (A0*) * (V*) (C-A1*) *", 5, 0, 0),             # the verb wrong: V is excluded
])
def test_props_files_score_as_srl_eval_pl_does(tmp_path, column_1, column_2, ok, op, ms):
    gold = _write(tmp_path, "gold.props", GOLD)
    pred = _write(tmp_path, "pred.props", _props(column_1, column_2))
    scores = score_props(gold, pred)
    assert (scores["correct"], scores["excess"], scores["missed"]) == (ok, op, ms)
    assert scores["precision"] == pytest.approx(100 * ok / (ok + op))
    assert scores["recall"] == pytest.approx(100 * ok / (ok + ms))
    assert scores["sentences"] == 3 and scores["propositions"] == 2    # the verbless sentence scores nothing
    assert scores["perfect_props"] == (100.0 if op + ms == 0 else 50.0)     # each case spoils one proposition


def test_a_missing_prediction_misses_every_argument_and_an_empty_one_scores_zero():
    gold = [["B-A0", "B-V", "B-A1"]]
    assert srl_prf(gold, [None]) == {"precision": 0.0, "recall": 0.0, "f1": 0.0, "perfect_props": 0.0,
                                     "correct": 0.0, "excess": 0.0, "missed": 2.0}
    scores = srl_prf(gold, [["B-A0", "B-V", "I-A0"]])     # a free I-A0 starts its own phrase
    assert (scores["correct"], scores["excess"], scores["missed"]) == (1, 1, 1)
    assert scores["f1"] == pytest.approx(50.0)


@pytest.mark.parametrize("text, line, problem", [
    ("-   (A0*\nbuy *\n-   *\n", 3, "never closes"),
    ("-   (A0*)\nbuy (V*))\n-   *\n", 2, "closes no open phrase"),
    ("-   (A0*\nbuy (A1*)\n-   *)\n", 2, "opens inside"),
    ("-   (A0*)\nbuy (V*)\n-   * *\n", 3, "3 columns, expected 1 + 1"),
    ("-   (A0*)\nbuy *\n-   (V*)\n", 2, "not inside a (V*) phrase"),
    ("-   (A0*)\nbuy (V*)\n-   A1\n", 3, "not a Start-End tag"),
])
def test_malformed_props_name_the_file_and_line(tmp_path, text, line, problem):
    path = _write(tmp_path, "bad.props", "-\n-\n\n" + text)     # a first sentence: lines shift by 3
    with pytest.raises(InputError, match=re.escape(problem)) as err:
        read_props(path)
    assert err.value.path == str(path) and err.value.line == line + 3


def test_words_and_props_must_agree(tmp_path):
    words = _write(tmp_path, "w", "a\nb\n\nc\n")
    with pytest.raises(InputError, match="1 sentences, but .* has 2"):
        read_conll2005(words, _write(tmp_path, "p1", "-\n-\n"))
    with pytest.raises(InputError, match="a sentence of 3 lines"):
        read_conll2005(words, _write(tmp_path, "p2", "-\n-\n-\n\n-\n"))


def test_bio_round_trip_and_start_end_parsing():
    spans = parse_start_end(["(A0*", "*)", "(V*)", "*", "(C-A0*)"])
    assert spans == [("A0", 0, 1), ("V", 2, 2), ("C-A0", 4, 4)]
    assert bio_to_spans(spans_to_bio(spans, 5)) == spans


def test_the_training_cap_is_spread_over_sections_and_nested():
    by_section = {f"{n:02d}": [{"tokens": [str(i)], "propositions": []} for i in range(50)] for n in range(2, 22)}
    small, large = cap_sentences(by_section, 100), cap_sentences(by_section, 400)
    assert len(small) == 100 and len(large) == 400 and len(cap_sentences(by_section, None)) == 1000
    key = lambda s: (s["section"], s["index"])                                           # noqa: E731
    assert {key(s) for s in small} <= {key(s) for s in large}
    assert {s["section"]: 5 for s in small} == {s["section"]: sum(t["section"] == s["section"] for t in small)
                                                for s in small}    # 5 from each of the 20 sections
    assert len({s["section"] for s in small}) == 20
    assert small == sorted(small, key=key)                          # file order kept


def test_one_example_per_predicate_and_each_sentence_one_text(tmp_path):
    from elmo_repro.tasks.srl.reader import srl_examples
    from elmo_repro.data.examples import read_split, write_split
    sentences = read_conll2005(_write(tmp_path, "w", WORDS), _write(tmp_path, "p", GOLD))
    sentences.append({"tokens": sentences[1]["tokens"], "propositions": [
        Proposition(5, "fall", ("B-A1", "O", "O", "O", "O", "B-V", "O"))]})      # the same words, another verb
    examples = srl_examples(sentences)
    assert [(e["sentence"], e["predicate"], e["lemma"]) for e in examples] == [(0, 1, "buy"), (1, 3, "say"),
                                                                             (3, 5, "fall")]
    counts = write_split(tmp_path / "srl", "dev", examples, ("tokens",))
    assert counts == {"examples": 3, "texts": 2, "references": 3}         # "Prices , he said ..." stored once
    back = read_split(tmp_path / "srl", "dev", ("tokens",))
    assert [e["tokens"] for e in back] == [e["tokens"] for e in examples] and back[2]["tags"][0] == "B-A1"
