"""Prepared task examples (JSONL): round trip and errors naming file and line."""

import pytest

from elmo_repro.data.examples import read_examples, write_examples
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
