"""Training batches for the biLM, packed exactly as bilm-tf's ``LMDataset._get_batch``.

Each sentence becomes ``<S> w1 ... wn </S>`` (reversed as a whole for the backward LM, so its
stream reads ``</S> wn ... w1 <S>``). Each of the B rows of a batch is filled with ``unroll_steps``
inputs from a stream of such sentences; targets are the inputs shifted by one, so ``<S>`` is never
a forward target and ``</S>`` never a forward input. A row's sentence continues into the next
batch, which is why the LSTM state is carried (and detached) across batches. The forward and
backward streams are independent shuffles of the corpus (as bilm-tf's BidirectionalLMDataset).

The text is read in shards, as bilm-tf reads its training files (``LMDataset`` with
``shuffle_on_load``): every epoch visits the shards in a shuffled order and the sentences of each
shard in a shuffled order, holding one shard at a time, so a stream's memory is bounded by its
largest shard, not by the corpus (:mod:`elmo_repro.data.lm_shards` reads ``data/lm/train.txt``
shard by shard; an in-memory list of sentences is one shard). A stream's position (epoch, shard,
sentence, the random generator and each row's unfinished sentence) is a small value
(:meth:`LMStream.position`) that a checkpoint stores and :meth:`LMStream.restore` resumes from,
without reading the text before it again.

Types vs. vocabulary: inputs are *types* (every distinct training string, out-of-vocabulary words
included) so the char CNN sees the real spelling; targets are vocabulary ids (OOV -> ``<UNK>``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import torch

from .character_ids import BOS_TOKEN, EOS_TOKEN, token_to_char_ids
from .vocabulary import Vocabulary


def new_type_index() -> dict[str, int]:
    """The type index every text starts from: ``<S>`` is type 0 and ``</S>`` type 1."""
    return {BOS_TOKEN: 0, EOS_TOKEN: 1}


def encode(sentence: list[str], index: dict[str, int]) -> np.ndarray:
    """A sentence as an int32 array of type ids (without boundaries), adding new types to ``index``
    in order of first appearance."""
    return np.fromiter((index.setdefault(t, len(index)) for t in sentence), dtype=np.int32, count=len(sentence))


@dataclass
class TypeTable:
    """Distinct strings of a corpus: their char ids (n_types, 50) and vocabulary ids (n_types,)."""

    types: list[str]
    char_ids: np.ndarray
    vocab_ids: np.ndarray

    @classmethod
    def build(cls, sentences: list[list[str]], vocab: Vocabulary) -> tuple["TypeTable", list[np.ndarray]]:
        """Return the table and every sentence as an int32 array of type ids (without boundaries)."""
        index = new_type_index()
        encoded = [encode(sentence, index) for sentence in sentences]
        return cls.from_index(index, vocab), encoded

    @classmethod
    def from_index(cls, index: dict[str, int], vocab: Vocabulary) -> "TypeTable":
        """The table of a type index (string -> id, ids 0..n-1 in insertion order)."""
        types = list(index)
        char_ids = np.array([token_to_char_ids(t) for t in types], dtype=np.int64)
        vocab_ids = np.array(vocab.ids(types), dtype=np.int64)
        return cls(types, char_ids, vocab_ids)


class ShardedSource(Protocol):
    """A training text in shards: ``n_shards`` and ``load(k)``, the k-th shard's sentences as
    int32 type-id arrays (without boundaries), in file order."""

    n_shards: int

    def load(self, k: int) -> list[np.ndarray]: ...


class InMemoryText:
    """Encoded sentences already in memory (fine-tuning's task text, tests): one shard.

    Raises:
        ValueError: no sentence.
    """

    n_shards = 1

    def __init__(self, sentences: list[np.ndarray]):
        if not sentences:
            raise ValueError("no training sentences")
        self.sentences = sentences

    def load(self, k: int) -> list[np.ndarray]:
        return self.sentences


class LMStream:
    """Endless batches of one direction: ``(inputs, targets)`` type-id arrays of shape (B, T).

    Deterministic for a seed: epoch ``e`` draws, from ``numpy.random.default_rng([seed, e])``, the
    order of the shards and then, as each shard is opened, the order of its sentences. With one
    shard the shard order draws nothing, so the sentence order is ``default_rng([seed, e])``'s
    permutation of the corpus. Rows are refilled from one shared sentence iterator in row order,
    as bilm-tf does.

    Args:
        text: a :class:`ShardedSource`, or a list of encoded sentences (one shard).
        batch_size: rows B; unroll_steps: steps T; seed: the stream's seed; reverse: the backward
            LM's stream (each sentence reversed whole).
    """

    def __init__(self, text: ShardedSource | list[np.ndarray], batch_size: int, unroll_steps: int,
                 seed: int, reverse: bool = False):
        self.text = InMemoryText(text) if isinstance(text, list) else text
        if self.text.n_shards < 1:
            raise ValueError("no training shards")
        self.batch_size, self.unroll_steps = batch_size, unroll_steps
        self.seed, self.reverse = seed, reverse
        self.epoch = 0
        self._rng: np.random.Generator | None = None   # this epoch's generator
        self._order: np.ndarray | None = None          # this epoch's shard order
        self._slot = 0                                  # position in the shard order
        self._rng_state: dict | None = None            # the generator before this shard's sentence order
        self._shard: list[np.ndarray] = []
        self._perm: np.ndarray | None = None            # this shard's sentence order
        self._offset = 0                                # sentences of it taken
        self._rows: list[np.ndarray | None] = [None] * batch_size

    def _start_epoch(self) -> None:
        self._rng = np.random.default_rng([self.seed, self.epoch])
        self._order = self._rng.permutation(self.text.n_shards)
        self._slot = 0

    def _open_shard(self) -> None:
        assert self._rng is not None and self._order is not None
        self._rng_state = self._rng.bit_generator.state
        shard = int(self._order[self._slot])
        self._shard = self.text.load(shard)
        if not self._shard:     # never taken: an epoch of empty shards would loop for ever
            raise ValueError(f"training shard {shard} has no sentences")
        self._perm = self._rng.permutation(len(self._shard))
        self._offset = 0

    def _next_sentence(self) -> np.ndarray:
        while self._perm is None or self._offset >= len(self._perm):
            if self._order is None:
                self._start_epoch()
            elif self._perm is not None:
                self._shard, self._perm = [], None   # release the finished shard before the next
                self._slot += 1
                if self._slot == self.text.n_shards:
                    self.epoch += 1
                    self._start_epoch()
            self._open_shard()
        body = self._shard[int(self._perm[self._offset])]
        self._offset += 1
        full = np.concatenate(([0], body, [1])).astype(np.int32)  # <S> body </S>
        return full[::-1].copy() if self.reverse else full

    def __iter__(self) -> "LMStream":
        return self

    def __next__(self) -> tuple[np.ndarray, np.ndarray]:
        inputs = np.zeros((self.batch_size, self.unroll_steps), dtype=np.int64)
        targets = np.zeros((self.batch_size, self.unroll_steps), dtype=np.int64)
        for row in range(self.batch_size):
            pos = 0
            while pos < self.unroll_steps:
                stream = self._rows[row]
                if stream is None or len(stream) <= 1:
                    stream = self._next_sentence()
                take = min(len(stream) - 1, self.unroll_steps - pos)
                inputs[row, pos:pos + take] = stream[:take]
                targets[row, pos:pos + take] = stream[1:take + 1]
                self._rows[row] = stream[take:]
                pos += take
        return inputs, targets

    def position(self) -> dict[str, Any]:
        """Where the stream stands, as plain values and tensors (``torch.load(weights_only=True)``
        reads it back): ``epoch``, ``shard`` (position in the epoch's shard order), ``sentence``
        (sentences of that shard taken), ``rng`` (the epoch generator's state before the shard's
        sentence order was drawn; None before the first shard) and ``rows`` (each row's unfinished
        sentence, int32, or None)."""
        return {"epoch": self.epoch, "shard": self._slot, "sentence": self._offset,
                "rng": self._rng_state if self._perm is not None else None,
                "rows": [None if r is None else torch.from_numpy(r.copy()) for r in self._rows]}

    def restore(self, position: dict[str, Any]) -> None:
        """Continue from a :meth:`position` of a stream with the same text, batch size and seed:
        the batches that follow are those the saved stream would have given. Only the current
        shard is read.

        Raises:
            ValueError: a position that does not fit this stream (row count, shard or sentence
                out of range).
        """
        rows = list(position["rows"])
        if len(rows) != self.batch_size:
            raise ValueError(f"stream position has {len(rows)} rows, the stream {self.batch_size}")
        slot, offset = int(position["shard"]), int(position["sentence"])
        if not 0 <= slot < self.text.n_shards:
            raise ValueError(f"stream position: shard {slot} of a text with {self.text.n_shards} shards")
        self.epoch = int(position["epoch"])
        self._rows = [None if r is None else r.numpy().astype(np.int32) for r in rows]
        self._rng = self._order = self._perm = self._rng_state = None
        self._shard, self._slot, self._offset = [], 0, 0
        if position["rng"] is not None:
            self._start_epoch()
            self._slot = slot
            self._rng.bit_generator.state = position["rng"]
            self._open_shard()
            if offset > len(self._shard):
                raise ValueError(f"stream position: sentence {offset} of a shard of {len(self._shard)}")
            self._offset = offset

