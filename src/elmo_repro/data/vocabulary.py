"""The biLM's word vocabulary in bilm-tf's file format.

One token per line: ``<S>``, ``</S>``, ``<UNK>`` first, then the training tokens by descending
count (ties broken by the token's string, so the file is deterministic). The frequency order
matters: the log-uniform (Zipfian) sampler of the sampled softmax assumes id 0 is the most
frequent class. ``counts.tsv`` beside it keeps the training counts (used by the unigram baseline).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Iterable

from ..io import InputError, atomic_open, iter_lines
from .character_ids import BOS_TOKEN, EOS_TOKEN, UNK_TOKEN

SPECIALS = (BOS_TOKEN, EOS_TOKEN, UNK_TOKEN)


def count_tokens(sentences: Iterable[list[str]]) -> tuple[Counter, int]:
    """Token counts and the number of sentences."""
    counts: Counter = Counter()
    n_sentences = 0
    for sentence in sentences:
        counts.update(sentence)
        n_sentences += 1
    return counts, n_sentences


class Vocabulary:
    """Word <-> id mapping; unknown words map to ``<UNK>``.

    Args:
        tokens: the vocabulary in file order; must contain ``<S>``, ``</S>`` and ``<UNK>``.
        counts: optional training counts aligned with ``tokens`` (targets' unigram counts).
    """

    def __init__(self, tokens: list[str], counts: list[int] | None = None, source: str = "<memory>"):
        missing = [s for s in SPECIALS if s not in tokens]
        if missing:
            raise InputError(source, f"vocabulary lacks the special token(s) {', '.join(missing)}")
        self.tokens = tokens
        self.counts = counts
        self._index = {token: i for i, token in enumerate(tokens)}
        if len(self._index) != len(tokens):
            dup = next(t for t in tokens if tokens.count(t) > 1)
            raise InputError(source, f"duplicate vocabulary entry {dup!r}")
        self.bos, self.eos, self.unk = (self._index[s] for s in SPECIALS)

    def __len__(self) -> int:
        return len(self.tokens)

    def id(self, token: str) -> int:
        return self._index.get(token, self.unk)

    def ids(self, tokens: list[str]) -> list[int]:
        return [self._index.get(t, self.unk) for t in tokens]

    @classmethod
    def build(cls, counts: Counter, n_sentences: int, min_count: int = 1, max_size: int = 0
              ) -> "Vocabulary":
        """bilm-tf order from training counts. ``<S>``/``</S>`` count once per sentence and
        ``<UNK>`` collects the tokens dropped by ``min_count``/``max_size``."""
        kept = sorted((t for t, c in counts.items() if c >= min_count and t not in SPECIALS),
                      key=lambda t: (-counts[t], t))
        if max_size > 0:
            kept = kept[: max(0, max_size - len(SPECIALS))]
        kept_set = set(kept)
        unk = sum(c for t, c in counts.items() if t not in kept_set)
        return cls([*SPECIALS, *kept], [n_sentences, n_sentences, unk, *(counts[t] for t in kept)])

    def save(self, vocab_path: str | Path, counts_path: str | Path | None = None) -> None:
        with atomic_open(vocab_path) as handle:
            handle.writelines(f"{t}\n" for t in self.tokens)
        if counts_path is not None and self.counts is not None:
            with atomic_open(counts_path) as handle:
                handle.writelines(f"{t}\t{c}\n" for t, c in zip(self.tokens, self.counts))

    @classmethod
    def load(cls, vocab_path: str | Path, counts_path: str | Path | None = None) -> "Vocabulary":
        """Read a bilm-tf vocabulary file (any order of the special tokens is accepted).

        Raises:
            InputError: missing file, blank/whitespace-containing line, duplicates, missing specials,
                or a counts file that does not match the vocabulary line by line.
        """
        tokens = []
        for number, line in iter_lines(vocab_path):
            token = line.strip()
            if not token or len(token.split()) != 1:
                raise InputError(vocab_path, "expected exactly one token per line", line=number)
            tokens.append(token)
        counts = None
        if counts_path is not None:
            counts = []
            for number, line in iter_lines(counts_path):
                parts = line.split("\t")
                if len(parts) != 2 or not parts[1].isdigit() or number > len(tokens) \
                        or parts[0] != tokens[number - 1]:
                    raise InputError(counts_path, "expected '<token>\\t<count>' matching the "
                                     "vocabulary file line by line", line=number)
                counts.append(int(parts[1]))
            if len(counts) != len(tokens):
                raise InputError(counts_path, f"{len(counts)} counts for {len(tokens)} tokens")
        return cls(tokens, counts, source=str(vocab_path))

    def check_frequency_sorted(self, source: str = "<vocabulary>") -> None:
        """Raise InputError unless the non-special tokens are in non-increasing count order
        (required by the log-uniform sampler)."""
        if self.counts is None:
            raise InputError(source, "no counts to check the frequency order against")
        words = [(i, c) for i, (t, c) in enumerate(zip(self.tokens, self.counts)) if t not in SPECIALS]
        for (_, prev), (i, cur) in zip(words, words[1:]):
            if cur > prev:
                raise InputError(source, f"not frequency-sorted: {self.tokens[i]!r} (count {cur}) "
                                 f"follows a token with count {prev}", line=i + 1)
