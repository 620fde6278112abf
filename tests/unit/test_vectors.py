"""Word-vector files (word2vec text, GloVe, Senna) and deterministic gensim word2vec training."""

from __future__ import annotations

import os
import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from elmo_repro.io import InputError
from elmo_repro.vectors import detect_format, load_text_vectors, save_word2vec_text, train_word2vec

W2V = "3 2\nthe 0.5 -1.25\n, 1e-3 2\n\u00e9t\u00e9 -0 3.75\n"
EXPECTED = np.array([[0.5, -1.25], [0.001, 2.0], [0.0, 3.75]], dtype=np.float32)


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


# ------------------------------------------------------------------------------------- formats

def test_word2vec_text(tmp_path):
    words, matrix = load_text_vectors(_write(tmp_path / "v.txt", W2V))
    assert words == ["the", ",", "\u00e9t\u00e9"]
    assert matrix.dtype == np.float32 and matrix.shape == (3, 2)
    np.testing.assert_array_equal(matrix, EXPECTED)
    assert load_text_vectors(tmp_path / "v.txt", limit=2)[0] == ["the", ","]


def test_glove_without_header(tmp_path):
    path = _write(tmp_path / "glove.txt", W2V.split("\n", 1)[1])
    assert detect_format(path) == "glove"
    words, matrix = load_text_vectors(path)
    assert words == ["the", ",", "\u00e9t\u00e9"]
    np.testing.assert_array_equal(matrix, EXPECTED)


def test_save_round_trip_is_exact(tmp_path):
    rng = np.random.default_rng(0)
    matrix = (rng.standard_normal((50, 7)) * 10.0 ** rng.integers(-8, 8, (50, 1))).astype(np.float32)
    words = [f"w{i}" for i in range(50)]
    save_word2vec_text(tmp_path / "v.txt", words, matrix)
    loaded_words, loaded = load_text_vectors(tmp_path / "v.txt", fmt="word2vec")
    assert loaded_words == words
    np.testing.assert_array_equal(loaded, matrix)
    with pytest.raises(ValueError):
        save_word2vec_text(tmp_path / "bad.txt", ["two words"], matrix[:1])


@pytest.mark.parametrize("layout", ["flat", "senna", "explicit"])
def test_senna_pair(tmp_path, layout):
    words_file = {"flat": "words.lst", "senna": "hash/words.lst", "explicit": "a/words.lst"}[layout]
    vectors_file = {"flat": "embeddings.txt", "senna": "embeddings/embeddings.txt",
                    "explicit": "b/emb.txt"}[layout]
    for name, text in [(words_file, "PADDING\nthe\nUNKNOWN\n"), (vectors_file, "0 0\n0.5 -1.25\n1e-3 2\n")]:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        _write(tmp_path / name, text)
    if layout == "explicit":
        words, matrix = load_text_vectors(tmp_path / vectors_file, words_path=tmp_path / words_file)
    else:
        words, matrix = load_text_vectors(tmp_path)
    assert words == ["PADDING", "the", "UNKNOWN"]
    np.testing.assert_array_equal(matrix, np.array([[0, 0], [0.5, -1.25], [0.001, 2]], dtype=np.float32))


@pytest.mark.parametrize("text, line, problem", [
    ("2 2\na 1 2\nb 1\n", 3, "expected 3 columns"),
    ("2 2\na 1 2\nb 1 2 3\n", 3, "expected 3 columns"),
    ("2 2\na 1 2\nb 1 x\n", 3, "non-numeric value 'x' in vector column 2"),
    ("2 2\na 1 2\nb 1 nan\n", 3, "non-finite"),
    ("2 2\na 1 2\n", 2, "header declares 2 vectors, the file has 1"),
    ("1 2\na 1 2\nb 3 4\n", 3, "more vectors than the 1"),
    ("2 2\na 1 2\na 3 4\n", 3, "duplicate word 'a'"),
    ("2 2\na 1 2\n\n", 3, "expected 3 columns"),
])
def test_malformed_word2vec(tmp_path, text, line, problem):
    path = _write(tmp_path / "v.txt", text)
    with pytest.raises(InputError, match=problem) as err:
        load_text_vectors(path)
    assert err.value.line == line and err.value.path == str(path)


@pytest.mark.parametrize("text, line, problem", [
    ("a 1 2\nb 1 2 3\n", 2, "expected 3 columns"),  # inconsistent dimensions
    ("a 1 2\nb 1 .\n", 2, "non-numeric"),
    ("a\n", 1, "single field"),
])
def test_malformed_glove(tmp_path, text, line, problem):
    with pytest.raises(InputError, match=problem) as err:
        load_text_vectors(_write(tmp_path / "g.txt", text), fmt="glove")
    assert err.value.line == line


def test_malformed_header_and_missing(tmp_path):
    with pytest.raises(InputError, match="header") as err:
        load_text_vectors(_write(tmp_path / "v.txt", "a 1 2\n"), fmt="word2vec")
    assert err.value.line == 1
    with pytest.raises(InputError, match="empty file"):
        load_text_vectors(_write(tmp_path / "e.txt", ""))
    with pytest.raises(InputError, match="not found"):
        load_text_vectors(tmp_path / "missing.txt")


def test_malformed_senna(tmp_path):
    _write(tmp_path / "words.lst", "a\nb\n")
    _write(tmp_path / "embeddings.txt", "1 2\n3\n")
    with pytest.raises(InputError, match="expected 2 values, got 1") as err:
        load_text_vectors(tmp_path)
    assert err.value.line == 2 and err.value.path.endswith("embeddings.txt")
    _write(tmp_path / "embeddings.txt", "1 2\n")
    with pytest.raises(InputError, match="1 vectors for 2 words"):
        load_text_vectors(tmp_path)
    _write(tmp_path / "embeddings.txt", "1 2\n3 4\n5 6\n")
    with pytest.raises(InputError, match="more vectors than the 2 words") as err:
        load_text_vectors(tmp_path)
    assert err.value.line == 3


# ------------------------------------------------------------------------------------ training

ANIMALS, COLOURS = ["cat", "dog", "horse", "cow"], ["red", "blue", "green", "yellow"]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """Animals and colours occur in disjoint, interchangeable contexts."""
    rng = random.Random(0)
    lines = []
    for _ in range(3000):
        if rng.random() < 0.5:
            lines.append(f"the {rng.choice(ANIMALS)} {rng.choice(['eats', 'sees', 'chases'])} the "
                         f"{rng.choice(['grass', 'farmer', 'ball'])} .")
        else:
            lines.append(f"a {rng.choice(COLOURS)} {rng.choice(['car', 'house', 'door'])} "
                         f"{rng.choice(['looks', 'seems', 'is'])} {rng.choice(['nice', 'old', 'new'])} .")
    path = tmp_path_factory.mktemp("w2v") / "train.txt"
    _write(path, "\n".join(lines) + "\n")
    return path


TRAIN = dict(dim=16, window=2, min_count=1, epochs=5, sg=1)


def test_word2vec_training(corpus, tmp_path):
    info = train_word2vec(corpus, tmp_path / "a.txt", seed=0, **TRAIN)
    words, matrix = load_text_vectors(tmp_path / "a.txt")
    assert info["vocab_size"] == len(words) == 26 and info["dim"] == 16 and matrix.shape == (26, 16)
    assert info["corpus_tokens"] == sum(len(line.split()) for line in corpus.read_text().splitlines())
    unit = matrix / np.linalg.norm(matrix, axis=1, keepdims=True)
    index = {word: i for i, word in enumerate(words)}
    for group, other in [(ANIMALS, COLOURS), (COLOURS, ANIMALS)]:
        for word in group:
            similarity = unit @ unit[index[word]]
            same = max(similarity[index[w]] for w in group if w != word)
            assert same > max(similarity[index[w]] for w in other), word
    # Same seed, same bytes; another seed, other vectors.
    train_word2vec(corpus, tmp_path / "b.txt", seed=0, **TRAIN)
    assert (tmp_path / "a.txt").read_bytes() == (tmp_path / "b.txt").read_bytes()
    train_word2vec(corpus, tmp_path / "c.txt", seed=1, **TRAIN)
    assert (tmp_path / "a.txt").read_bytes() != (tmp_path / "c.txt").read_bytes()


def test_word2vec_independent_of_hash_seed(corpus, tmp_path):
    """Separate processes with different PYTHONHASHSEED write identical files."""
    train_word2vec(corpus, tmp_path / "here.txt", seed=0, **TRAIN)
    code = ("import sys; from elmo_repro.vectors import train_word2vec; "
            f"train_word2vec(sys.argv[1], sys.argv[2], seed=0, **{TRAIN!r})")
    for hash_seed in ["1", "2"]:
        out = tmp_path / f"hash{hash_seed}.txt"
        subprocess.run([sys.executable, "-c", code, str(corpus), str(out)], check=True,
                       env={**os.environ, "PYTHONHASHSEED": hash_seed})
        assert out.read_bytes() == (tmp_path / "here.txt").read_bytes()


def test_word2vec_missing_text(tmp_path):
    with pytest.raises(InputError, match="not found"):
        train_word2vec(tmp_path / "none.txt", tmp_path / "v.txt", seed=0, **TRAIN)
    assert not (tmp_path / "v.txt").exists()
