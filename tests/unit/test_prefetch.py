"""The background batch producer: same items in the same order, errors surface at their item,
and leaving early stops the thread."""

import threading

import numpy as np
import pytest

from elmo_repro.data.lm_batches import LMStream
from elmo_repro.data.prefetch import Prefetcher


def test_items_come_out_in_order_and_complete():
    with Prefetcher(iter(range(100)), depth=3) as items:
        assert list(items) == list(range(100))
        assert list(items) == []                                      # exhausted stays exhausted


def test_lm_batches_are_the_same_as_without_the_thread():
    sentences = [np.arange(n, dtype=np.int32) + 2 for n in (3, 7, 1, 12, 5)]
    plain = LMStream(sentences, batch_size=4, unroll_steps=6, seed=3, reverse=True)
    ahead = Prefetcher(LMStream(sentences, batch_size=4, unroll_steps=6, seed=3, reverse=True), depth=2)
    for _ in range(20):
        (a_in, a_tg), (b_in, b_tg) = next(plain), next(ahead)
        assert np.array_equal(a_in, b_in) and np.array_equal(a_tg, b_tg)
    ahead.close()


def test_an_error_in_the_source_is_raised_at_its_item():
    def source():
        yield 1
        yield 2
        raise OSError("disk gone")

    items = Prefetcher(source())
    assert next(items) == 1 and next(items) == 2
    with pytest.raises(OSError, match="disk gone"):
        next(items)
    with pytest.raises(StopIteration):
        next(items)
    items.close()


def test_leaving_early_stops_the_producer():
    produced = []

    def endless():
        n = 0
        while True:
            produced.append(n)
            yield n
            n += 1

    before = threading.active_count()
    with Prefetcher(endless(), depth=2) as items:
        assert next(items) == 0
    assert threading.active_count() == before                       # the thread has ended
    assert len(produced) <= 1 + 2 + 1                                # one taken, a full queue, one blocked


def test_depth_must_be_positive():
    with pytest.raises(ValueError, match="depth"):
        Prefetcher(iter([]), depth=0)
