"""bilm-tf vocabulary file: specials first, descending frequency, deterministic ties."""

from collections import Counter

import pytest

from elmo_repro.data.vocabulary import Vocabulary, count_tokens
from elmo_repro.io import InputError


def test_build_order_and_counts(tmp_path):
    counts, n = count_tokens([["the", "cat", "the"], ["a", "dog", "the", "cat"], ["zebra"]])
    vocab = Vocabulary.build(counts, n, min_count=2)
    assert vocab.tokens == ["<S>", "</S>", "<UNK>", "the", "cat"]
    assert vocab.counts == [3, 3, 3, 3, 2]  # <UNK> collects a, dog, zebra
    assert vocab.id("dog") == vocab.unk == 2
    vocab.save(tmp_path / "vocab.txt", tmp_path / "counts.tsv")
    assert (tmp_path / "vocab.txt").read_text() == "<S>\n</S>\n<UNK>\nthe\ncat\n"
    loaded = Vocabulary.load(tmp_path / "vocab.txt", tmp_path / "counts.tsv")
    assert loaded.tokens == vocab.tokens and loaded.counts == vocab.counts
    loaded.check_frequency_sorted()


def test_ties_are_broken_alphabetically_and_max_size():
    vocab = Vocabulary.build(Counter({"b": 2, "a": 2, "c": 5}), 1, max_size=5)
    assert vocab.tokens == ["<S>", "</S>", "<UNK>", "c", "a"]


def test_special_tokens_may_be_anywhere_but_must_exist(tmp_path):
    path = tmp_path / "v.txt"
    path.write_text("the\n<S>\n</S>\n<UNK>\n")
    assert Vocabulary.load(path).bos == 1
    path.write_text("the\n<S>\n")
    with pytest.raises(InputError, match=r"v\.txt.*</S>"):
        Vocabulary.load(path)


def test_not_frequency_sorted(tmp_path):
    (tmp_path / "v.txt").write_text("<S>\n</S>\n<UNK>\nrare\ncommon\n")
    (tmp_path / "c.tsv").write_text("<S>\t1\n</S>\t1\n<UNK>\t0\nrare\t1\ncommon\t9\n")
    vocab = Vocabulary.load(tmp_path / "v.txt", tmp_path / "c.tsv")
    with pytest.raises(InputError, match="not frequency-sorted.*common"):
        vocab.check_frequency_sorted(str(tmp_path / "v.txt"))
