"""The LM training text and held-out sample, written as they are read (stage ``prepare_lm``).

The text is :func:`elmo_repro.data.lm_corpus.build_split`'s, byte for byte: the same sources in the
same order, the same decontamination and the same held-out sample (``tests/unit/test_lm_split.py``
compares them). ``build_split`` holds the whole text in memory and stays as the reference; this
writes it one document at a time, so memory is bounded by a document and the held-out file
(paper profile: 100 official shards, ~800M tokens, through one document of one sentence at a
time), and cuts it into shards (:mod:`elmo_repro.data.lm_shards`).

The held-out sample skips every sentence equal to a training sentence. Instead of a set of every
training sentence's key (~30M in the paper profile), the held-out file's keys are read first, and
the pass over the training text notes which of them occur.
"""

from __future__ import annotations

from pathlib import Path
from typing import BinaryIO, Iterable

from ..io import InputError, atomic_open, atomic_path
from .contamination import EvalIndex, remove_documents, sentence_key
from .lm_corpus import HELDOUT, SOURCES, check_split_args, heldout_sample, read_lm1b, read_source_documents
from .lm_shards import Shard, index_path, write_index

TRAIN = "train.txt"
HELDOUT_TEXT = "heldout.txt"


class ShardWriter:
    """Writes sentences to a binary handle, one space-separated UTF-8 line each, and cuts shards of
    at most ``shard_tokens`` tokens (a longer sentence is a shard of its own); ``shards`` after
    :meth:`close`."""

    def __init__(self, handle: BinaryIO, shard_tokens: int):
        self.handle, self.shard_tokens = handle, shard_tokens
        self.shards: list[Shard] = []
        self.line = self.offset = 0          # lines and bytes written
        self._open: Shard | None = None

    def add(self, tokens: list[str]) -> None:
        raw = (" ".join(tokens) + "\n").encode("utf-8")
        s = self._open
        if s is None or s.tokens + len(tokens) > self.shard_tokens:
            self.close()
            s = Shard(self.line + 1, self.offset, 0, 0, 0)
        self._open = Shard(s.first_line, s.byte_offset, s.n_bytes + len(raw), s.sentences + 1, s.tokens + len(tokens))
        self.handle.write(raw)
        self.line += 1
        self.offset += len(raw)

    def close(self) -> None:
        if self._open is not None:
            self.shards.append(self._open)
            self._open = None


def write_sharded_text(path: str | Path, sentences: Iterable[list[str]], shard_tokens: int) -> list[Shard]:
    """Write ``sentences`` as a training text with its shard index (:func:`index_path`), each file
    atomically: what ``prepare_lm`` writes, for a text made elsewhere (tests, benchmarks)."""
    with atomic_path(path) as tmp, open(tmp, "wb") as handle:
        writer = ShardWriter(handle, shard_tokens)
        for sentence in sentences:
            writer.add(sentence)
        writer.close()
    write_index(index_path(path), writer.shards)
    return writer.shards


def write_split(mirror: str | Path, train_sources: Iterable[str], heldout_max_tokens: int, heldout: str,
                exclude: EvalIndex | None, out_dir: str | Path, shard_tokens: int) -> dict:
    """Write ``train.txt``, its shard index ``train.shards.tsv`` and ``heldout.txt`` under
    ``out_dir`` (UTF-8, one space-separated sentence per line, each file atomically).

    Args:
        mirror, train_sources, heldout_max_tokens, heldout, exclude: as
            :func:`~elmo_repro.data.lm_corpus.build_split`.
        out_dir: where the three files go.
        shard_tokens: the most tokens of a shard (``lm_data.shard_tokens``), >= 1.

    Returns:
        ``build_split``'s statistics, plus ``train_shards``.

    Raises:
        ValueError: unknown, repeated or no sources; a negative budget; an unknown held-out text;
            ``shard_tokens`` < 1.
        InputError: as ``build_split`` (a missing mirror or file, a source without sentences, no
            held-out sentence left, a reader's error).
    """
    if shard_tokens < 1:
        raise ValueError(f"shard_tokens must be >= 1, got {shard_tokens}")
    requested = check_split_args(mirror, train_sources, heldout_max_tokens, heldout)
    heldout_path = Path(mirror) / HELDOUT[heldout]
    candidates = list(read_lm1b(heldout_path))
    wanted = {key for key in map(sentence_key, candidates) if key}
    in_train: set[str] = set()

    out_dir = Path(out_dir)
    per_source: dict[str, dict[str, int]] = {}
    removed_documents: dict[str, dict[str, list[str]]] = {}
    with atomic_path(out_dir / TRAIN) as tmp, open(tmp, "wb") as handle:
        writer = ShardWriter(handle, shard_tokens)
        for name in SOURCES:
            if name not in requested:
                continue
            seen_document = False
            sentences = tokens = 0
            removed: dict[str, list[str]] = {}
            for doc_id, doc in read_source_documents(mirror, name):
                seen_document = True
                if exclude is not None:
                    _, overlaps = remove_documents([(doc_id, doc)], exclude)
                    if overlaps:
                        removed[doc_id] = sorted({o.split for o in overlaps[doc_id]})
                        continue
                for sentence in doc:
                    writer.add(sentence)
                    key = sentence_key(sentence)
                    if key in wanted:
                        in_train.add(key)
                    sentences += 1
                    tokens += len(sentence)
            if not seen_document:
                raise InputError(Path(mirror) / SOURCES[name][0],
                                 f"training source {name!r} has no sentences (empty file or archive members)")
            if exclude is not None:
                removed_documents[name] = removed
            per_source[name] = {"sentences": sentences, "tokens": tokens}
        writer.close()
    write_index(index_path(out_dir / TRAIN), writer.shards)

    sample, heldout_stats = heldout_sample(candidates, in_train, heldout_max_tokens, heldout_path)
    with atomic_open(out_dir / HELDOUT_TEXT) as handle:
        for tokens_ in sample:
            handle.write(" ".join(tokens_) + "\n")

    return {
        "sources": per_source,
        **({"removed_documents": removed_documents} if exclude is not None else {}),
        "train_sentences": sum(s["sentences"] for s in per_source.values()),
        "train_tokens": sum(s["tokens"] for s in per_source.values()),
        "train_shards": len(writer.shards),
        **heldout_stats,
    }
