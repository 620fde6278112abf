"""The coreference reader and MUC, B³ and CEAFφ4 (reference scorer v8.01 semantics), with values
worked by hand from the metrics' definitions."""

import re

import pytest

from elmo_repro.tasks.coref.reader import read_coref_conll
from elmo_repro.io import InputError
from elmo_repro.tasks.coref.metric import coref_scores, remove_singletons


def _one(key, response):
    return coref_scores([(key, response)])


def test_muc_counts_links():
    s = _one([["A", "B", "C", "D"]], [["A", "B"], ["C", "D"]])
    assert s["muc_recall"] == pytest.approx(100 * 2 / 3) and s["muc_precision"] == pytest.approx(100.0)
    # a key mention the response lacks is a part of its own: {A,B,C} vs {A,B} -> recall 1/2
    assert _one([["A", "B", "C"]], [["A", "B"]])["muc_recall"] == pytest.approx(50.0)


def test_b3_and_ceafe_on_the_worked_pair():
    s = _one([["a", "b", "c"], ["d", "e"]], [["a", "b"], ["c", "d", "e"]])
    assert s["b3_precision"] == pytest.approx(100 * 11 / 15) and s["b3_recall"] == pytest.approx(100 * 11 / 15)
    assert s["ceafe_precision"] == pytest.approx(80.0) and s["ceafe_recall"] == pytest.approx(80.0)
    assert s["ceafe_f1"] == pytest.approx(80.0)
    # MUC: key links 2 + 1 = 3, kept: {a,b,c} split in 2 -> 1, {d,e} whole -> 1: recall 2/3;
    # response links 1 + 2 = 3, kept: {a,b} -> 1, {c,d,e} split in 2 -> 1: precision 2/3
    assert s["muc_f1"] == pytest.approx(100 * 2 / 3)
    assert s["avg_f1"] == pytest.approx((100 * 2 / 3 + 100 * 11 / 15 + 80.0) / 3)


def test_nothing_in_common_and_an_empty_response_score_zero():
    for response in ([["x", "y"]], []):
        s = _one([["a", "b"]], response)
        assert all(s[k] == 0.0 for k in s), s
    # B³ precision counts a twinless response mention in its denominator: {a,b,x} vs key {a,b}
    s = _one([["a", "b"]], [["a", "b", "x"]])
    assert s["b3_precision"] == pytest.approx(100 * (2 * 2 / 3) / 3) and s["b3_recall"] == pytest.approx(100.0)


def test_singletons_leave_the_key_and_a_repeated_mention_counts_once():
    key = remove_singletons([["a", "b"], ["c"], ["d", "d"]])
    assert key == [["a", "b"]]
    assert _one([["a", "b"]], [["a", "a", "b"]]) == _one([["a", "b"]], [["a", "b"]])
    # listed in two response clusters: the first keeps it, so the second is {c} alone
    assert _one([["a", "b"]], [["a", "b"], ["b", "c"]]) == _one([["a", "b"]], [["a", "b"], ["c"]])


def test_documents_are_summed_before_dividing():
    both = coref_scores([([["A", "B", "C", "D"]], [["A", "B"], ["C", "D"]]), ([["x", "y"]], [["x", "y"]])])
    assert both["muc_recall"] == pytest.approx(100 * (2 + 1) / (3 + 1))       # not the mean of 2/3 and 1


DOC = """#begin document (d1); part 0
d1\t0\t0\tSir\t_\t(0
d1\t0\t1\tWalter\t_\t0)
d1\t0\t2\tsaw\t_\t
d1\t0\t3\this\t_\t(0)|(1

d1\t0\t0\town\t_\t(1)|1)
d1\t0\t1\thouse\t_\t-
#end document
"""


def test_the_reader_keeps_document_offsets_and_nested_mentions(tmp_path):
    path = tmp_path / "d.conll"
    path.write_text(DOC)
    (doc,) = read_coref_conll(path)
    assert doc["doc_key"] == "d1_0" and doc["sentences"] == [["Sir", "Walter", "saw", "his"], ["own", "house"]]
    assert doc["clusters"] == [[(0, 1), (3, 3)], [(3, 4), (4, 4)]]          # cluster 1 nests in itself


def read_text(tmp_path, text: str) -> list[dict]:
    path = tmp_path / "t.conll"
    path.write_text(text)
    return read_coref_conll(path)


def test_a_cell_is_read_as_the_reference_scorer_reads_it(tmp_path):
    """CorScorer.pm (v8.01) takes a cell's one-token mentions, then its openings, then its closings,
    whatever separates them; a double antecedent is dropped; a trailing tab leaves the cell empty."""
    # several mentions opening and closing in one cell, without "|"
    (doc,) = read_text(tmp_path, "#begin document (t);\nt\t0\t0\tb1\t(1(2\nt\t0\t1\tb2\t-\n"
                                 "t\t0\t2\tb3\t1)2)\nt\t0\t3\t.\t-\t\n#end document\n")
    assert doc["clusters"] == [[(0, 2)], [(0, 2)]] and doc["sentences"] == [["b1", "b2", "b3", "."]]
    # openings before closings: "1)|(1" closes the mention it opens, the one opened before stays open
    (doc,) = read_text(tmp_path, "#begin document (t);\nt\t0\t0\ta\t(1\nt\t0\t1\tb\t1)|(1\n"
                                 "t\t0\t2\tc\t1)\n#end document\n")
    assert doc["clusters"] == [[(0, 2), (1, 1)]]
    (doc,) = read_text(tmp_path, "#begin document (t);\nt\t0\t0\ta\t(1+2)|(3)\n#end document\n")
    assert doc["clusters"] == [[(0, 0)]]


def test_two_column_files_of_the_scorers_tests_are_read(tmp_path):
    """The scorer's own test files hold a doc id and the coreference column only: no word."""
    (doc,) = read_text(tmp_path, "#begin document (t);\nt\t(1\nt\t1)\n\nt\t(2)\nt\t-\n#end document\n")
    assert doc["sentences"] == [["", ""], ["", ""]] and doc["clusters"] == [[(0, 1)], [(2, 2)]]


@pytest.mark.parametrize("text, line, problem", [
    ("#begin document (d); part 0\nd\t0\t0\tx\t_\t(3\n#end document\n", 3, "cluster 3 opened on line 2 never closes"),
    ("#begin document (d); part 0\nd\t0\t0\tx\t_\t3)\n#end document\n", 2, "closes no open mention"),
    ("d\t0\t0\tx\t_\t(3)\n", 1, "outside any document"),
    ("#begin document (d); part 0\nd\t0\t0\tx\t_\t(3x\n#end document\n", 2, "holds something other than"),
    ("#begin document (d); part 0\nd\n#end document\n", 2, "1 column"),
    ("#begin document (d); part 0\n#begin document (e); part 0\n", 2, "inside the document begun on line 1"),
])
def test_malformed_coreference_names_the_file_and_line(tmp_path, text, line, problem):
    path = tmp_path / "bad.conll"
    path.write_text(text)
    with pytest.raises(InputError, match=re.escape(problem)) as err:
        read_coref_conll(path)
    assert err.value.path == str(path) and err.value.line == line


def test_a_document_never_ended_is_an_error(tmp_path):
    path = tmp_path / "open.conll"
    path.write_text("#begin document (d); part 0\nd\t0\t0\tx\t_\t-\n")
    with pytest.raises(InputError, match="has no #end document"):
        read_coref_conll(path)
