"""Static word vectors: word2vec training (gensim) and readers for the common text formats.

The NER baseline of the paper (§4, Table 1) used 50-dimensional Senna vectors; here the baseline's
vectors are trained with gensim word2vec on the LM training text (``data/lm/train.txt``) so that
the whole pipeline runs on staged data. Pretrained vectors in any of these text formats load too:

word2vec text
    First line ``<count> <dim>``, then ``count`` lines ``word v_1 ... v_dim``, single-space
    separated, UTF-8 (gensim ``save_word2vec_format(binary=False)``).
GloVe text
    The same lines without the header line.
Senna
    Two files with one entry per line, matched by line number: ``words.lst`` (one word) and
    ``embeddings.txt`` (``dim`` space-separated numbers). Senna's release keeps them as
    ``hash/words.lst`` and ``embeddings/embeddings.txt``; give either a directory holding both
    (flat or in that layout) or ``embeddings.txt`` with ``words_path=`` naming ``words.lst``.

Loaded vectors come back as ``(words, matrix)``: ``words`` a list of V distinct strings in file
order and ``matrix`` a float32 array of shape ``(V, D)`` whose row ``i`` is the vector of
``words[i]``.
"""

from __future__ import annotations

import time
import zlib
from pathlib import Path

import numpy as np

from .io import InputError, atomic_open, iter_lines

FORMATS = ("auto", "word2vec", "glove", "senna")


def _stable_hash(text: str) -> int:
    """A process-independent string hash (Python's ``hash`` of ``str`` varies with PYTHONHASHSEED)."""
    return zlib.crc32(text.encode("utf-8"))


def train_word2vec(text_path: str | Path, out_path: str | Path, dim: int, window: int, min_count: int,
                   epochs: int, sg: int, seed: int, workers: int = 1) -> dict[str, float]:
    """Train gensim word2vec on a tokenized text and save the vectors in word2vec text format.

    Args:
        text_path: UTF-8 text, one whitespace-tokenized sentence per line, read as gensim's
            ``LineSentence`` reads it (same token lists) except that a byte-order mark is dropped
            and invalid UTF-8 is an :class:`InputError` naming the line (:class:`_TextSentences`).
        out_path: the word2vec text file written (atomically); rows in gensim's vocabulary order
            (descending frequency).
        dim, window, min_count, epochs: gensim's ``vector_size``, ``window``, ``min_count``,
            ``epochs``; negative sampling (5 noise words) and gensim's other defaults.
        sg: 1 for skip-gram, 0 for CBOW.
        seed: seeds the initial vectors (numpy ``default_rng(seed)`` in gensim >= 4) and the
            negative / down-sampling draws.
        workers: training threads. With ``workers=1`` the result is a pure function of the text
            and the parameters (bit-identical files); with more threads the order in which they
            update the shared weights varies from run to run. ``hashfxn`` is a CRC32 so nothing
            depends on Python's per-process string hash either.

    Returns:
        ``{"vocab_size", "dim", "corpus_tokens", "seconds"}`` (``seconds``: training only).
    """
    from gensim.models import Word2Vec

    text_path = Path(text_path)
    if not text_path.is_file():
        raise InputError(text_path, "file not found")
    sentences = _TextSentences(text_path)
    model = Word2Vec(vector_size=dim, window=window, min_count=min_count, sg=sg, seed=seed,
                     workers=workers, hashfxn=_stable_hash)
    model.build_vocab(sentences)
    if not model.wv.index_to_key:
        raise InputError(text_path, f"no word occurs at least min_count={min_count} times")
    start = time.monotonic()
    model.train(sentences, total_examples=model.corpus_count, epochs=epochs)
    seconds = time.monotonic() - start
    save_word2vec_text(out_path, list(model.wv.index_to_key), model.wv.vectors)
    return {"vocab_size": len(model.wv.index_to_key), "dim": dim,
            "corpus_tokens": model.corpus_total_words, "seconds": seconds}


class _TextSentences:
    """Restartable iterable over a text's sentences for gensim: the token lists of gensim's
    ``LineSentence`` (each line split on whitespace, blank lines yielding nothing, lines longer than
    ``MAX_WORDS_IN_BATCH`` tokens cut into chunks), read with :func:`~elmo_repro.io.iter_lines`."""

    def __init__(self, path: Path):
        self.path = path

    def __iter__(self):
        from gensim.models.word2vec import MAX_WORDS_IN_BATCH

        for _, line in iter_lines(self.path):
            tokens = line.split()
            for start in range(0, len(tokens), MAX_WORDS_IN_BATCH):
                yield tokens[start:start + MAX_WORDS_IN_BATCH]


def save_word2vec_text(path: str | Path, words: list[str], matrix: np.ndarray) -> None:
    """Write ``words`` / ``matrix`` (shape ``(V, D)``) as word2vec text, atomically.

    Values are written as the shortest decimal that reads back to the same float32, so
    :func:`load_text_vectors` returns exactly ``matrix.astype(float32)``.
    """
    matrix = np.asarray(matrix, dtype=np.float32)
    if matrix.ndim != 2 or matrix.shape[0] != len(words):
        raise ValueError(f"matrix shape {matrix.shape} does not match {len(words)} words")
    for word in words:
        if not word or any(ch.isspace() for ch in word):
            raise ValueError(f"word {word!r} is empty or contains whitespace")
    with atomic_open(path) as handle:
        handle.write(f"{len(words)} {matrix.shape[1]}\n")
        for word, row in zip(words, matrix):
            handle.write(word + " " + " ".join(map(str, row)) + "\n")


def _parse_row(path: Path, number: int, fields: list[str]) -> np.ndarray:
    try:
        row = np.array(fields, dtype=np.float32)
    except ValueError:
        for column, field in enumerate(fields, start=1):
            try:
                float(field)
            except ValueError:
                raise InputError(path, f"non-numeric value {field!r} in vector column {column}",
                                 line=number) from None
        raise
    if not np.isfinite(row).all():
        raise InputError(path, "non-finite value (nan/inf) in the vector", line=number)
    return row


def _fields(line: str) -> list[str]:
    # Single spaces separate fields; trailing spaces (gensim's older writers) are tolerated.
    return line.rstrip(" ").split(" ")


def _read_word_rows(path: Path, fmt: str, limit: int | None) -> tuple[list[str], np.ndarray]:
    words: list[str] = []
    rows: list[np.ndarray] = []
    index: dict[str, int] = {}
    dim = expected = None
    last = 0
    for number, line in iter_lines(path):
        last = number
        fields = _fields(line)
        if number == 1 and fmt == "word2vec":
            if len(fields) != 2 or not all(f.isdigit() for f in fields) or int(fields[1]) == 0:
                raise InputError(path, f"expected a word2vec header '<count> <dim>', got {line[:60]!r}",
                                 line=1)
            expected, dim = int(fields[0]), int(fields[1])
            continue
        if expected is not None and len(words) == expected:
            raise InputError(path, f"more vectors than the {expected} the header declares", line=number)
        if dim is None:
            dim = len(fields) - 1
            if dim < 1:
                raise InputError(path, "expected 'word v_1 ... v_dim', got a single field", line=number)
        if len(fields) != dim + 1:
            raise InputError(path, f"expected {dim + 1} columns (word + {dim} values), got {len(fields)}",
                             line=number)
        word = fields[0]
        if not word:
            raise InputError(path, "empty word", line=number)
        if word in index:
            raise InputError(path, f"duplicate word {word!r} (first on entry {index[word] + 1})", line=number)
        index[word] = len(words)
        words.append(word)
        rows.append(_parse_row(path, number, fields[1:]))
        if limit is not None and len(words) >= limit:
            return words, np.stack(rows)
    if expected is not None and len(words) != expected:
        raise InputError(path, f"header declares {expected} vectors, the file has {len(words)}", line=last)
    if not words:
        raise InputError(path, "no vectors in the file")
    return words, np.stack(rows)


def _senna_paths(path: Path, words_path: str | Path | None) -> tuple[Path, Path]:
    if words_path is not None:
        return Path(words_path), path
    if path.is_dir():
        for words, embeddings in [("words.lst", "embeddings.txt"),
                                  ("hash/words.lst", "embeddings/embeddings.txt")]:
            if (path / words).is_file() and (path / embeddings).is_file():
                return path / words, path / embeddings
        raise InputError(path, "no words.lst + embeddings.txt pair (flat or hash/ + embeddings/)")
    raise InputError(path, "a Senna directory, or embeddings.txt with words_path=words.lst, is needed")


def _read_senna(path: Path, words_path: str | Path | None, limit: int | None) -> tuple[list[str], np.ndarray]:
    words_file, embeddings_file = _senna_paths(path, words_path)
    words: list[str] = []
    index: dict[str, int] = {}
    for number, line in iter_lines(words_file):
        if limit is not None and len(words) >= limit:
            break
        word = line.strip(" ")
        if not word or " " in word:
            raise InputError(words_file, f"expected one word per line, got {line[:60]!r}", line=number)
        if word in index:
            raise InputError(words_file, f"duplicate word {word!r} (first on line {index[word] + 1})",
                             line=number)
        index[word] = len(words)
        words.append(word)
    rows: list[np.ndarray] = []
    dim = None
    for number, line in iter_lines(embeddings_file):
        if len(rows) == len(words):
            if limit is not None:
                break
            raise InputError(embeddings_file, f"more vectors than the {len(words)} words in {words_file}",
                             line=number)
        fields = _fields(line.lstrip(" "))
        dim = len(fields) if dim is None else dim
        if len(fields) != dim:
            raise InputError(embeddings_file, f"expected {dim} values, got {len(fields)}", line=number)
        rows.append(_parse_row(embeddings_file, number, fields))
    if len(rows) != len(words) or not words:
        raise InputError(embeddings_file, f"{len(rows)} vectors for {len(words)} words in {words_file}")
    return words, np.stack(rows)


def detect_format(path: str | Path) -> str:
    """``senna`` for a directory, ``word2vec`` if the first line is ``<int> <int>``, else ``glove``.

    A GloVe file whose first entry is a number with a one-dimensional vector would be misread as a
    header; pass ``fmt`` explicitly for such files.
    """
    path = Path(path)
    if path.is_dir():
        return "senna"
    for _, line in iter_lines(path):
        fields = _fields(line)
        return "word2vec" if len(fields) == 2 and all(f.isdigit() for f in fields) else "glove"
    raise InputError(path, "empty file")


def load_text_vectors(path: str | Path, fmt: str = "auto", *, words_path: str | Path | None = None,
                      limit: int | None = None) -> tuple[list[str], np.ndarray]:
    """Read word vectors from word2vec text, GloVe text or a Senna pair (see the module docstring).

    Args:
        path: the vector file, or for Senna a directory holding ``words.lst`` and
            ``embeddings.txt`` (flat or Senna's ``hash/`` + ``embeddings/`` layout) or the
            ``embeddings.txt`` file itself together with ``words_path``.
        fmt: one of ``auto`` (:func:`detect_format`), ``word2vec``, ``glove``, ``senna``.
        words_path: Senna's ``words.lst`` when ``path`` is ``embeddings.txt``.
        limit: read only the first ``limit`` vectors (the header's count is then not checked).

    Returns:
        ``(words, matrix)``: V distinct words in file order and a float32 array of shape (V, D).

    Raises:
        InputError: naming the file and line, for a missing/empty file, a malformed header, a
            line with the wrong number of columns, a non-numeric or non-finite value, a duplicate
            word, or a vector count that disagrees with the header (or with ``words.lst``).
    """
    path = Path(path)
    if fmt not in FORMATS:
        raise ValueError(f"fmt must be one of {FORMATS}, got {fmt!r}")
    if words_path is not None:
        fmt = "senna"
    if not path.exists():
        raise InputError(path, "file not found")
    if fmt == "auto":
        fmt = detect_format(path)
    if fmt == "senna":
        return _read_senna(path, words_path, limit)
    if path.is_dir():
        raise InputError(path, f"is a directory, not a {fmt} file")
    return _read_word_rows(path, fmt, limit)
