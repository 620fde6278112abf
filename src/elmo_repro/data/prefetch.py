"""Prepare the next items of an iterator in a background thread while the caller computes.

Pretraining uses it to pack the next LM batches (numpy row filling, the (2, B, T) type-id
tensors, pinned memory for CUDA) while the current step runs; torch's kernels release the GIL, so
the packing overlaps the step. A thread rather than worker processes: the streams are sequential
and stateful (each batch continues the previous one's rows), so there is one producer, and a
thread shares the in-memory corpus instead of copying it into every worker. Items come out in
the source's order, so the training batches, and therefore the weights, are unchanged.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterator
from typing import Generic, TypeVar

T = TypeVar("T")
_DONE = object()


class _Failure:
    def __init__(self, error: BaseException):
        self.error = error


class Prefetcher(Generic[T]):
    """Iterate ``source`` up to ``depth`` items ahead in a daemon thread.

    Use as a context manager (or call :meth:`close`) so that leaving the loop early stops the
    thread. An exception raised by ``source`` is raised again by ``next`` at the item where it
    occurred.

    Raises:
        ValueError: if ``depth`` < 1.
    """

    def __init__(self, source: Iterator[T], depth: int = 2, name: str = "prefetch"):
        if depth < 1:
            raise ValueError(f"prefetch depth must be >= 1, got {depth}")
        self._queue: queue.Queue = queue.Queue(maxsize=depth)
        self._stop = threading.Event()
        self._finished = False
        self._thread = threading.Thread(target=self._produce, args=(source,), name=name, daemon=True)
        self._thread.start()

    def _produce(self, source: Iterator[T]) -> None:
        try:
            for item in source:
                if not self._put(item):
                    return
        except BaseException as error:   # handed to the consumer, which re-raises it
            self._put(_Failure(error))
            return
        self._put(_DONE)

    def _put(self, item: object) -> bool:
        while not self._stop.is_set():
            try:
                self._queue.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def __iter__(self) -> "Prefetcher[T]":
        return self

    def __next__(self) -> T:
        if self._finished:
            raise StopIteration
        item = self._queue.get()
        if item is _DONE:
            self._finished = True
            raise StopIteration
        if isinstance(item, _Failure):
            self._finished = True
            raise item.error
        return item

    def close(self) -> None:
        """Stop the producer and wait for it (it finishes at most its current item)."""
        self._stop.set()
        self._thread.join()

    def __enter__(self) -> "Prefetcher[T]":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
