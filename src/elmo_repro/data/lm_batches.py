"""Training batches for the biLM, packed exactly as bilm-tf's ``LMDataset._get_batch``.

Each sentence becomes ``<S> w1 ... wn </S>`` (reversed as a whole for the backward LM, so its
stream reads ``</S> wn ... w1 <S>``). Each of the B rows of a batch is filled with ``unroll_steps``
inputs from a stream of such sentences; targets are the inputs shifted by one, so ``<S>`` is never
a forward target and ``</S>`` never a forward input. A row's sentence continues into the next
batch, which is why the LSTM state is carried (and detached) across batches. The forward and
backward streams are independent shuffles of the corpus (as bilm-tf's BidirectionalLMDataset).

Types vs. vocabulary: inputs are *types* (every distinct training string, out-of-vocabulary words
included) so the char CNN sees the real spelling; targets are vocabulary ids (OOV -> ``<UNK>``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

import numpy as np

from .character_ids import BOS_TOKEN, EOS_TOKEN, token_to_char_ids
from .vocabulary import Vocabulary


@dataclass
class TypeTable:
    """Distinct strings of a corpus: their char ids (n_types, 50) and vocabulary ids (n_types,)."""

    types: list[str]
    char_ids: np.ndarray
    vocab_ids: np.ndarray

    @classmethod
    def build(cls, sentences: list[list[str]], vocab: Vocabulary) -> tuple["TypeTable", list[np.ndarray]]:
        """Return the table and every sentence as an int32 array of type ids (without boundaries)."""
        index = {BOS_TOKEN: 0, EOS_TOKEN: 1}
        encoded = []
        for sentence in sentences:
            encoded.append(np.fromiter((index.setdefault(t, len(index)) for t in sentence),
                                       dtype=np.int32, count=len(sentence)))
        types = list(index)
        char_ids = np.array([token_to_char_ids(t) for t in types], dtype=np.int64)
        vocab_ids = np.array(vocab.ids(types), dtype=np.int64)
        return cls(types, char_ids, vocab_ids), encoded


class LMStream:
    """Endless batches of one direction: ``(inputs, targets)`` type-id arrays of shape (B, T).

    Deterministic for a seed: epoch ``e`` visits the sentences in ``rng(seed, e)`` order. Rows are
    refilled from one shared sentence iterator in row order, as bilm-tf does.
    """

    def __init__(self, sentences: list[np.ndarray], batch_size: int, unroll_steps: int,
                 seed: int, reverse: bool = False):
        if not sentences:
            raise ValueError("no training sentences")
        self.sentences, self.batch_size, self.unroll_steps = sentences, batch_size, unroll_steps
        self.seed, self.reverse = seed, reverse
        self.epoch = 0
        self._order = self._sentence_iter()
        self._rows: list[np.ndarray | None] = [None] * batch_size

    def _sentence_iter(self) -> Iterator[np.ndarray]:
        while True:
            rng = np.random.default_rng([self.seed, self.epoch])
            for i in rng.permutation(len(self.sentences)):
                body = self.sentences[i]
                full = np.concatenate(([0], body, [1])).astype(np.int32)  # <S> body </S>
                yield full[::-1].copy() if self.reverse else full
            self.epoch += 1

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
                    stream = next(self._order)
                take = min(len(stream) - 1, self.unroll_steps - pos)
                inputs[row, pos:pos + take] = stream[:take]
                targets[row, pos:pos + take] = stream[1:take + 1]
                self._rows[row] = stream[take:]
                pos += take
        return inputs, targets

    def skip(self, n_batches: int) -> None:
        """Advance by ``n_batches`` (to resume from a checkpoint at the same stream position)."""
        for _ in range(n_batches):
            next(self)
