"""Prepared task splits (JSONL): examples and the texts they point at; round trip and errors naming file and line."""

import pytest

from elmo_repro.data.examples import read_examples, read_split, write_examples, write_split
from elmo_repro.io import InputError


def test_round_trip_and_checks(tmp_path):
    path = tmp_path / "dev.jsonl"
    examples = [{"premise": ["Ein", "Mann", "."], "hypothesis": ["x"], "label": "neutral"}]
    assert write_examples(path, examples) == 1
    assert read_examples(path, ("premise", "hypothesis"), "label", ("neutral",)) == examples
    for line, problem in [('{"premise": [], "hypothesis": ["x"], "label": "neutral"}', "'premise' must be a non-empty"),
                          ('{"premise": ["a"], "hypothesis": ["x", ""], "label": "neutral"}', "'hypothesis' must"),
                          ('{"premise": ["a"], "hypothesis": ["x"]}', "missing 'label'"),
                          ('{"premise": ["a"], "hypothesis": ["x"], "label": "maybe"}', "unknown label 'maybe'"),
                          ('{"premise": ["a"', "malformed JSON"), ("", "blank line"), ("[1]", "a JSON object")]:
        path.write_text('{"premise": ["a"], "hypothesis": ["b"], "label": "neutral"}\n' + line + "\n")
        with pytest.raises(InputError, match=rf"dev.jsonl:2: .*{problem}"):
            read_examples(path, ("premise", "hypothesis"), "label", ("neutral",))


def test_split_stores_each_text_once(tmp_path):
    examples = [{"premise": ["A", "dog", "runs", "."], "hypothesis": ["A", "dog", "moves", "."], "label": "entailment"},
                {"premise": ["A", "dog", "runs", "."], "hypothesis": ["A", "cat", "sleeps", "."], "label": "contradiction"},
                {"premise": ["A", "dog", "moves", "."], "hypothesis": ["A", "dog", "runs", "."], "label": "neutral"}]
    counts = write_split(tmp_path, "train", examples, ("premise", "hypothesis"))
    assert counts == {"examples": 3, "texts": 3, "references": 6}
    lines = (tmp_path / "train.texts.jsonl").read_text(encoding="utf-8").splitlines()
    assert lines == ['{"id": 0, "tokens": ["A", "dog", "runs", "."]}', '{"id": 1, "tokens": ["A", "dog", "moves", "."]}',
                     '{"id": 2, "tokens": ["A", "cat", "sleeps", "."]}']
    stored = (tmp_path / "train.jsonl").read_text(encoding="utf-8").splitlines()
    assert stored[2] == '{"text_ids": {"premise": 1, "hypothesis": 0}, "label": "neutral"}'
    back = read_split(tmp_path, "train", ("premise", "hypothesis"), "label")
    assert [{k: e[k] for k in ("premise", "hypothesis", "label")} for e in back] == examples
    assert back[0]["premise"] is back[1]["premise"] is back[2]["hypothesis"]      # one list per text
    with pytest.raises(InputError, match=r"dev.texts.jsonl: file not found"):
        read_split(tmp_path, "dev", ("premise",))


def test_a_document_field_stores_its_sentences_as_a_list_of_text_ids(tmp_path):
    documents = [{"sentences": [["Anna", "left", "."], ["She", "smiled", "."]], "doc_key": "a"},
                 {"sentences": [["She", "smiled", "."], ["Tom", "too", "."], ["She", "smiled", "."]], "doc_key": "b"}]
    counts = write_split(tmp_path, "train", documents, ("sentences",))
    assert counts == {"examples": 2, "texts": 3, "references": 5}
    stored = (tmp_path / "train.jsonl").read_text(encoding="utf-8").splitlines()
    assert stored[1] == '{"text_ids": {"sentences": [1, 2, 1]}, "doc_key": "b"}'
    back = read_split(tmp_path, "train", ("sentences",))
    assert [e["sentences"] for e in back] == [d["sentences"] for d in documents]
    assert back[1]["sentences"][0] is back[1]["sentences"][2] is back[0]["sentences"][1]
    for ids, problem in [("[]", r"\[\] , not a text id"), ("[0, 3]", r"\[0, 3\], not a text id"), ('"0"', "'0', not")]:
        (tmp_path / "train.jsonl").write_text('{"text_ids": {"sentences": [0]}}\n'
                                              f'{{"text_ids": {{"sentences": {ids}}}}}\n')
        with pytest.raises(InputError, match=rf"train.jsonl:2: text_ids.sentences is {problem.replace(' , ', ', ')}"):
            read_split(tmp_path, "train", ("sentences",))


def test_field_texts_and_references(tmp_path):
    from elmo_repro.data.examples import count_references, field_texts
    assert field_texts(["a", "b"]) == [["a", "b"]]
    assert field_texts([["a"], ["b", "c"]]) == [["a"], ["b", "c"]]
    write_split(tmp_path, "dev", [{"sentences": [["a"], ["b"], ["a"]], "question": ["q"]}], ("sentences", "question"))
    assert count_references(tmp_path, "dev") == 4
