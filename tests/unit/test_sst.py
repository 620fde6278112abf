"""SST-5 trees: the parser on hand-made trees, errors naming file and line, counts on the real files."""

from pathlib import Path

import pytest

from elmo_repro.tasks.sst5.reader import parse_tree, read_trees
from elmo_repro.io import InputError
from elmo_repro.tasks.classification import accuracy, majority_label
from elmo_repro.tasks.sst5.task import TASK

TREES = Path(__file__).resolve().parents[3] / "shared" / "data" / "sst5" / "trees"


def test_parse_tree_leaves_labels_and_subtrees():
    tree = parse_tree("(3 (2 It) (4 (2 's) (3 (3 very) (4 good))))")
    assert tree.label == 3 and tree.leaves() == ["It", "'s", "very", "good"]
    assert [(node.label, node.leaves()) for node in tree.subtrees()][:3] == [
        (3, ["It", "'s", "very", "good"]), (2, ["It"]), (4, ["'s", "very", "good"])]
    assert len(list(tree.subtrees())) == 7                      # 4 leaves + 3 inner nodes
    # A leaf holding several words (SST writes "8 1\/2") gives one token per word, as nltk does.
    assert parse_tree(r"(2 (2 8 1\/2) (2 .))").leaves() == ["8", r"1\/2", "."]


@pytest.mark.parametrize("text, problem", [
    ("(3 (2 It) (4 good)", "not closed"),
    ("(7 (2 It) (4 good))", "label '7' is not one of 0-4"),
    ("(x (2 It))", "label 'x'"),
    ("(3 (2 It)) (2 x)", "after the tree"),
    ("(3 )", "neither a word nor children"),
])
def test_malformed_trees_name_file_line_and_problem(tmp_path, text, problem):
    path = tmp_path / "train.txt"
    path.write_text("(2 (2 fine) (2 .))\n" + text + "\n")
    with pytest.raises(InputError, match=rf"train.txt:2: malformed tree: .*{problem}"):
        read_trees(path)


def test_read_trees_sentences_or_phrases(tmp_path):
    path = tmp_path / "t.txt"
    path.write_text("(3 (2 It) (4 good))\n(0 (0 awful) (2 .))\n")
    assert read_trees(path) == [{"tokens": ["It", "good"], "label": 3}, {"tokens": ["awful", "."], "label": 0}]
    phrases = read_trees(path, subtrees=True)
    assert len(phrases) == 6 and phrases[1] == {"tokens": ["It"], "label": 2}
    path.write_text("(3 (2 It) (4 good))\n\n")
    with pytest.raises(InputError, match="t.txt:2: blank line"):
        read_trees(path)


def test_accuracy_and_majority_floor_by_hand():
    assert accuracy([0, 1, 2, 3], [0, 1, 0, 0]) == {"accuracy": 50.0}
    with pytest.raises(ValueError, match="3 predictions for 4"):
        accuracy([0, 1, 2, 3], [0, 1, 2])
    assert majority_label([3, 1, 1, 3, 2], (0, 1, 2, 3, 4)) == 1          # tie 1 vs 3: the first in order
    train = [{"tokens": ["x"], "label": label} for label in (4, 4, 2)]
    test = [{"tokens": ["y"], "label": label} for label in (4, 0, 4, 4)]
    assert TASK.score(test, TASK.floor(train, test)) == {"accuracy": 75.0}


def test_real_files_match_the_official_counts():
    if not TREES.is_dir():
        pytest.skip("SST-5 mirror not present (the task code is covered by tests/fixtures/sst5)")
    counts = {split: len(read_trees(TREES / f"{split}.txt")) for split in ("train", "dev", "test")}
    assert counts == {"train": 8544, "dev": 1101, "test": 2210}
    labels = [e["label"] for e in read_trees(TREES / "test.txt")]
    assert [labels.count(k) for k in range(5)] == [279, 633, 389, 510, 399]
    assert len(read_trees(TREES / "dev.txt", subtrees=True)) > 20 * 1101      # every phrase
