"""SNLI readers: parallel line files, the official JSONL, the premise-disjoint selection slice."""

import json
from pathlib import Path

import pytest

from elmo_repro.tasks.snli.reader import parse_leaves, read_jsonl, read_line_files, split_by_premise
from elmo_repro.io import InputError
from elmo_repro.tasks.snli.task import TASK

SNLI = Path(__file__).resolve().parents[3] / "shared" / "data" / "snli" / "esnli_infersent_format"


def write_line_files(directory, premises, hypotheses, labels, split="dev"):
    for name, lines in (("s1", premises), ("s2", hypotheses), ("labels", labels)):
        (directory / f"{name}.{split}").write_text("".join(line + " \n" for line in lines))


def test_line_files_parallel_and_checked(tmp_path):
    write_line_files(tmp_path, ["A man sleeps .", "A dog runs ."], ["A person sleeps .", "A cat sits ."],
                     ["entailment", "contradiction"])
    assert read_line_files(tmp_path, "dev") == [
        {"premise": ["A", "man", "sleeps", "."], "hypothesis": ["A", "person", "sleeps", "."], "label": "entailment"},
        {"premise": ["A", "dog", "runs", "."], "hypothesis": ["A", "cat", "sits", "."], "label": "contradiction"}]
    write_line_files(tmp_path, ["A .", "B ."], ["C ."], ["neutral", "neutral"])
    with pytest.raises(InputError, match=r"s2.dev: has 1 lines but .*s1.dev has 2"):
        read_line_files(tmp_path, "dev")
    write_line_files(tmp_path, ["A .", "B ."], ["C .", "D ."], ["neutral", "maybe"])
    with pytest.raises(InputError, match=r"labels.dev:2: unknown label 'maybe'"):
        read_line_files(tmp_path, "dev")
    write_line_files(tmp_path, ["A .", " "], ["C .", "D ."], ["neutral", "neutral"])
    with pytest.raises(InputError, match=r"s1.dev:2: empty sentence"):
        read_line_files(tmp_path, "dev")


def test_official_jsonl_drops_pairs_without_gold_label(tmp_path):
    rows = [{"gold_label": "neutral", "sentence1_binary_parse": "( ( A man ) ( sleeps . ) )",
             "sentence2_binary_parse": "( He ( is tired ) )"},
            {"gold_label": "-", "sentence1_binary_parse": "( A b )", "sentence2_binary_parse": "( c )"}]
    path = tmp_path / "snli_1.0_dev.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert read_jsonl(path) == [{"premise": ["A", "man", "sleeps", "."], "hypothesis": ["He", "is", "tired"],
                                 "label": "neutral"}]
    assert parse_leaves("( ( x ) y )") == ["x", "y"]
    path.write_text(json.dumps({"gold_label": "neutral"}) + "\n")
    with pytest.raises(InputError, match=r"snli_1.0_dev.jsonl:1: missing or malformed key"):
        read_jsonl(path)


def test_selection_slice_is_premise_disjoint_and_fixed():
    pairs = [{"premise": [f"p{i // 3}"], "hypothesis": [f"h{i}"], "label": "neutral"} for i in range(30)]
    rest, chosen = split_by_premise(pairs, 4)
    assert len(chosen) == 12 and len(rest) == 18                     # 4 premises x 3 hypotheses
    assert not {p["premise"][0] for p in rest} & {p["premise"][0] for p in chosen}
    assert chosen == sorted(chosen, key=pairs.index)                 # file order kept
    assert split_by_premise(list(reversed(pairs)), 4)[1] == list(reversed(chosen))   # not order-dependent
    with pytest.raises(ValueError, match="1..9"):
        split_by_premise(pairs, 10)


def test_accuracy_of_label_indices_and_floor():
    train = [{"premise": ["a"], "hypothesis": ["b"], "label": label}
             for label in ("neutral", "neutral", "contradiction")]
    test = [{"premise": ["a"], "hypothesis": ["b"], "label": label} for label in ("neutral", "entailment")]
    assert TASK.floor(train, test) == [1, 1]                          # neutral, as a label index
    assert TASK.score(test, [1, 0]) == {"accuracy": 100.0}
    assert TASK.score(test, TASK.floor(train, test)) == {"accuracy": 50.0}


def test_real_files_match_the_official_counts():
    if not SNLI.is_dir():
        pytest.skip("SNLI mirror not present (the task code is covered by tests/fixtures/snli)")
    dev, test = read_line_files(SNLI, "dev"), read_line_files(SNLI, "test")
    assert (len(dev), len(test)) == (9842, 9824)
    assert [sum(p["label"] == k for p in test) for k in ("entailment", "neutral", "contradiction")] == [3368, 3219, 3237]
    rest, chosen = split_by_premise(dev, 500)
    assert (len(rest), len(chosen)) == (8365, 1477)                  # the README's sizes
    assert len({" ".join(p["premise"]) for p in dev}) == 3319
