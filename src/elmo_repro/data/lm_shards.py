"""The LM training text in shards: ``data/lm/train.txt`` and its shard index ``train.shards.tsv``.

bilm-tf trains on the 1B Word Benchmark's 100 training files, loading one at a time. Here the
decontaminated training text is one file (every consumer, the vocabulary and word2vec included,
streams it line by line) whose consecutive line ranges are the shards; ``prepare_lm`` writes them
(:mod:`elmo_repro.data.lm_split`) with at most ``lm_data.shard_tokens`` tokens each, never
splitting a sentence, and records them in the index, one row per shard:

``shard  first_line  byte_offset  bytes  sentences  tokens``

(a header line, then tab-separated integers; shards are contiguous and cover the file). Pretraining
(:class:`ShardedText`) reads one shard by seeking to its byte offset, so a training stream holds one
shard's sentences (:class:`~elmo_repro.data.lm_batches.LMStream`), never the corpus (~800M tokens
in the paper profile). What it keeps for the whole text is the type table: every distinct string
and its character ids (about 2.4M types for the 1B Word text), found by one streaming pass.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..io import InputError, atomic_open, iter_lines
from .lm_batches import encode, new_type_index
from .text import check_no_boundary_tokens, iter_sentences

COLUMNS = ("shard", "first_line", "byte_offset", "bytes", "sentences", "tokens")


@dataclass(frozen=True)
class Shard:
    """One shard: lines ``first_line`` (1-based) onwards, ``n_bytes`` bytes from ``byte_offset``,
    holding ``sentences`` sentences of ``tokens`` tokens."""

    first_line: int
    byte_offset: int
    n_bytes: int
    sentences: int
    tokens: int


def index_path(text: str | Path) -> Path:
    """The shard index beside a text: ``train.txt`` -> ``train.shards.tsv``."""
    return Path(text).with_suffix(".shards.tsv")


def write_index(path: str | Path, shards: list[Shard]) -> None:
    """Write the shard index (see the module docstring), atomically."""
    with atomic_open(path) as handle:
        handle.write("\t".join(COLUMNS) + "\n")
        for k, s in enumerate(shards):
            handle.write(f"{k}\t{s.first_line}\t{s.byte_offset}\t{s.n_bytes}\t{s.sentences}\t{s.tokens}\n")


def read_index(path: str | Path, text: str | Path) -> list[Shard]:
    """The shards of ``text`` from its index, checked against the file's size.

    Raises:
        InputError: naming the index and line: a missing file, a wrong header, a row that is not
            six integers or not the next shard (bytes contiguous), an empty shard, or shards that do not cover
            ``text`` exactly (the text changed after ``prepare_lm`` wrote the index).
    """
    path, text = Path(path), Path(text)
    shards: list[Shard] = []
    line_no = 0
    for line_no, line in iter_lines(path):
        fields = line.split("\t")
        if line_no == 1:
            if tuple(fields) != COLUMNS:
                raise InputError(path, f"header must be {' '.join(COLUMNS)} (tab-separated)", line=1)
            continue
        try:
            k, first_line, offset, n_bytes, sentences, tokens = map(int, fields)
        except ValueError:
            raise InputError(path, f"expected {len(COLUMNS)} tab-separated integers, got {line!r}",
                             line=line_no) from None
        end = shards[-1].byte_offset + shards[-1].n_bytes if shards else 0
        if k != len(shards) or offset != end:
            raise InputError(path, f"shard {k} at byte {offset} does not follow shard {len(shards) - 1} "
                             f"(expected shard {len(shards)} at byte {end})", line=line_no)
        if sentences < 1 or tokens < sentences or n_bytes < 1:
            raise InputError(path, f"shard {k} is empty or inconsistent ({sentences} sentences, {tokens} tokens, "
                             f"{n_bytes} bytes)", line=line_no)
        shards.append(Shard(first_line, offset, n_bytes, sentences, tokens))
    if not shards:
        raise InputError(path, "no shards")
    size = text.stat().st_size if text.is_file() else None
    end = shards[-1].byte_offset + shards[-1].n_bytes
    if size != end:
        raise InputError(path, f"the shards cover {end} bytes but {text} has "
                         f"{'none (file not found)' if size is None else size}: "
                         "the text changed after prepare_lm wrote its index (re-run prepare_lm)")
    return shards


class ShardedText:
    """A training text read one shard at a time, as type ids (a
    :class:`~elmo_repro.data.lm_batches.ShardedSource`).

    Opening it streams the text once to build the type table (types numbered in order of first
    appearance in the file, as :meth:`~elmo_repro.data.lm_batches.TypeTable.build` numbers them in an in-memory list, so one
    shard trains exactly as that list does) and to count its sentences and tokens.

    Args:
        text: the text (one tokenized sentence per line; the rules of :mod:`elmo_repro.data.text`).
        index: its shard index (default: :func:`index_path`).

    Attributes:
        types: the type index (string -> type id, ``<S>`` 0 and ``</S>`` 1), for
            :meth:`~elmo_repro.data.lm_batches.TypeTable.from_index`.

    Raises:
        InputError: a bad index (:func:`read_index`), a text that breaks the rules of
            :mod:`elmo_repro.data.text`, or sentence counts that differ from the index.
    """

    def __init__(self, text: str | Path, index: str | Path | None = None):
        self.path = Path(text)
        self.index = Path(index) if index is not None else index_path(text)
        self.shards = read_index(self.index, self.path)
        self.types = new_type_index()
        self.n_sentences = self.n_tokens = 0
        for sentence in iter_sentences(self.path):
            encode(sentence, self.types)
            self.n_sentences += 1
            self.n_tokens += len(sentence)
        expected = (sum(s.sentences for s in self.shards), sum(s.tokens for s in self.shards))
        if (self.n_sentences, self.n_tokens) != expected:
            raise InputError(self.index, f"the shards hold {expected[0]} sentences / {expected[1]} tokens but "
                             f"{self.path} has {self.n_sentences} / {self.n_tokens} (re-run prepare_lm)")

    @property
    def n_shards(self) -> int:
        return len(self.shards)

    def load(self, k: int) -> list[np.ndarray]:
        """Shard ``k``'s sentences as int32 type-id arrays, in file order.

        Raises:
            InputError: naming the text and line: invalid UTF-8, a literal ``<S>``/``</S>``, or a
                shard whose sentences differ from the index or hold a type the opening pass did
                not see (the text changed while training).
        """
        shard = self.shards[k]
        with open(self.path, "rb") as handle:
            handle.seek(shard.byte_offset)
            raw = handle.read(shard.n_bytes)
        if shard.byte_offset == 0 and raw.startswith(b"\xef\xbb\xbf"):
            raw = raw[3:]
        encoded = []
        for j, line in enumerate(raw.split(b"\n")):
            number = shard.first_line + j
            try:
                tokens = line.decode("utf-8").split()
            except UnicodeDecodeError as err:
                raise InputError(self.path, f"not valid UTF-8 (byte {err.start} of the line)", line=number) from None
            if not tokens:
                continue
            check_no_boundary_tokens(self.path, tokens, number)
            unseen = next((t for t in tokens if t not in self.types), None)
            if unseen is not None:
                raise InputError(self.path, f"token {unseen!r} was not in the text when training opened it "
                                 "(the text changed while training)", line=number)
            encoded.append(encode(tokens, self.types))
        if len(encoded) != shard.sentences:
            raise InputError(self.index, f"shard {k} should hold {shard.sentences} sentences from line "
                             f"{shard.first_line} of {self.path}, it holds {len(encoded)} (re-run prepare_lm)")
        return encoded
