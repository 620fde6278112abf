"""Batch packing as bilm-tf's LMDataset._get_batch: <S> w </S> streams, shifted targets."""

import numpy as np

from elmo_repro.data.lm_batches import LMStream, TypeTable
from elmo_repro.data.vocabulary import Vocabulary, count_tokens


def test_packing_by_hand():
    # two sentences of type ids: <S>=0, </S>=1
    sentences = [np.array([2, 3], dtype=np.int32), np.array([4], dtype=np.int32)]
    stream = LMStream(sentences, batch_size=1, unroll_steps=4, seed=0)
    order = np.random.default_rng([0, 0]).permutation(2)
    full = [np.array([0, *sentences[i], 1]) for i in order]
    expected_stream = [t for s in full for t in s[:-1]]        # inputs never include </S>
    expected_targets = [t for s in full for t in s[1:]]        # targets never include <S>
    inputs, targets = next(stream)
    assert inputs[0].tolist() == expected_stream[:4]
    assert targets[0].tolist() == expected_targets[:4]
    assert 0 not in targets[0].tolist()


def test_backward_stream_is_the_reversed_sentence():
    stream = LMStream([np.array([2, 3, 4], dtype=np.int32)], batch_size=1, unroll_steps=4, seed=0, reverse=True)
    inputs, targets = next(stream)
    assert inputs[0].tolist() == [1, 4, 3, 2]       # </S> w3 w2 w1
    assert targets[0].tolist() == [4, 3, 2, 0]      # ... <S>


def test_restored_position_gives_the_same_batches():
    sentences = [np.arange(2, 2 + n, dtype=np.int32) for n in (3, 5, 2, 7, 1)]
    a = LMStream(sentences, 2, 3, seed=5)
    for _ in range(4):
        next(a)
    b = LMStream(sentences, 2, 3, seed=5)
    b.restore(a.position())
    for _ in range(9):                      # into the next epochs
        for x, y in zip(next(a), next(b)):
            np.testing.assert_array_equal(x, y)


def test_type_table_maps_oov_types_to_unk():
    sentences = [["the", "cat"], ["the", "zyzzyva"]]
    counts, n = count_tokens(sentences)
    vocab = Vocabulary.build(counts, n, min_count=2)
    table, encoded = TypeTable.build(sentences, vocab)
    assert table.types[:2] == ["<S>", "</S>"]
    assert [table.types[i] for i in encoded[1]] == ["the", "zyzzyva"]
    assert table.vocab_ids[encoded[1][1]] == vocab.unk
    assert table.vocab_ids[encoded[0][0]] == vocab.id("the")
