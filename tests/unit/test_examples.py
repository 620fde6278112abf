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
