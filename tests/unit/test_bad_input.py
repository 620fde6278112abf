"""Bad input, from the reports users file against ELMo implementations.

Each case gets either an :class:`~elmo_repro.io.InputError` whose message names the file and, where
one exists, the line (asserted on the message), or a documented handling shown by a test. Where an
existing test already covers a case (with the file/line assertion), it is named instead of repeated.

=========================================  ===================================================
case                                       test
=========================================  ===================================================
missing mirror or file                     test_missing_mirror_or_file (every text reader),
                                           test_missing_mirror_archive_or_feature_file
non-UTF-8 bytes                            test_non_utf8_bytes; Brown zip members:
                                           test_lm_corpus.py::test_read_brown_errors; ABC text
                                           decodes per line with a documented cp1252 fallback:
                                           test_lm_corpus.py::test_read_abc
UTF-8 byte-order mark                      test_utf8_byte_order_mark,
                                           test_utf8_byte_order_mark_in_zip_members; CoNLL also:
                                           test_conll.py::test_reader_parses_sentences_and_skips_docstart
Windows line endings                       test_windows_line_endings,
                                           test_windows_line_endings_in_brown_and_outputs; CoNLL
                                           also: the same test_conll test; ABC:
                                           test_lm_corpus.py::test_read_abc
blank lines (no shifted sentence index)    test_blank_lines_do_not_shift_sentence_indices;
                                           vector files: test_vectors.py::test_malformed_word2vec
empty training shard                       test_empty_training_shard,
                                           test_empty_training_stream_api; empty vector file:
                                           test_vectors.py::test_malformed_header_and_missing
token over 48 UTF-8 bytes                  test_token_over_48_utf8_bytes; ASCII and a cut
                                           2-byte character: test_character_ids.py
1,000-token sentence                       test_1000_token_sentence_lm_batches,
                                           test_1000_token_sentence_layers_and_features
literal <S> / </S> inside a sentence       test_literal_boundary_token_in_lm_text,
                                           test_literal_unk_token_is_the_unknown_word,
                                           test_literal_boundary_token_in_features
sentence containing "/"                    test_sentence_containing_slash
duplicate sentences                        test_duplicate_sentences
vocabulary without specials / unsorted     test_vocabulary_without_specials_or_not_frequency_sorted,
                                           test_vocabulary_without_counts_cannot_be_order_checked;
                                           specials also: test_vocabulary.py::
                                           test_special_tokens_may_be_anywhere_but_must_exist
vocabulary smaller than sampled negatives  test_vocabulary_smaller_than_sampled_negatives; the
                                           loss itself: test_sampled_softmax.py::
                                           test_more_negatives_than_vocabulary_falls_back_to_the_full_softmax
malformed CoNLL line                       test_conll.py::test_malformed_line_names_file_and_line;
                                           the JSONL form: test_malformed_conll_jsonl_line
truncated HDF5 file                        test_truncated_hdf5_file; the first 200 bytes:
                                           test_features.py::test_truncated_file_is_a_clear_error
UTF-8 whatever the locale                  test_utf8_whatever_the_locale
=========================================  ===================================================

Decisions (documented in the modules named):

* Literal ``<S>``/``</S>`` in the LM text (``data/text.py``, ``data/lm_corpus.py``) are rejected
  with the file and line: the vocabulary reserves them for the boundaries, so they would be fed to
  the char CNN as boundaries and trained as boundary targets. A literal ``<UNK>`` is the unknown
  word. In feature extraction (CoNLL text) a literal ``<S>`` gets the boundary character ids, as in
  bilm-tf and allennlp (``data/character_ids.py``).
* Blank lines: skipped in LM text (no sentence index there), sentence separators in CoNLL files
  (repeats never create a sentence), an error in the JSONL sentence files, vocabulary and vector
  files, whose line numbers are indices.
* An empty training source, LM text, CoNLL or JSONL file is an error naming the file.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path
from typing import Any, Callable

import h5py
import numpy as np
import pytest
import torch
import yaml
from fp_bounds import bilm_bound
from pretrain_settings import settings

from elmo_repro.bilm.model import BiLM, BiLMConfig
from elmo_repro.bilm.train import pretrain
from elmo_repro.data.character_ids import MAX_CHARS, batch_to_char_ids, token_to_char_ids
from elmo_repro.tasks.ner.reader import read_conll2003, read_prepared
from elmo_repro.data.examples import read_examples, read_texts, write_split
from elmo_repro.data.lm_batches import LMStream, TypeTable
from elmo_repro.data.lm_corpus import (ABC_ZIP, BROWN_ZIP, LM1B_DEV, LM1B_TEST, build_split, read_abc,
                                       read_brown, read_lm1b)
from elmo_repro.data.text import read_sentences
from elmo_repro.data.vocabulary import Vocabulary, count_tokens
from elmo_repro.elmo.features import embed_sentences, read_all, read_sentence_index, write_features
from elmo_repro.io import InputError, atomic_open, read_json, write_json
from elmo_repro.params import load_params
from elmo_repro.vectors import load_text_vectors, train_word2vec

BOM = b"\xef\xbb\xbf"


# ------------------------------------------------------------------------------------- helpers

def _word2vec_words(path: Path) -> list[str]:
    """Train a tiny word2vec on ``path`` and return its vocabulary (BOM/encoding show up there)."""
    out = path.with_name(path.name + ".vectors")
    train_word2vec(path, out, dim=4, window=2, min_count=1, epochs=1, sg=1, seed=0)
    return load_text_vectors(out)[0]


def _vectors(path: Path) -> tuple[list[str], list[list[float]]]:
    words, matrix = load_text_vectors(path)
    return words, matrix.tolist()


# Every line-oriented text reader: (id, file name, lines, reader). Line 2 always holds "café",
# so a Latin-1 encoding of the file has its first invalid UTF-8 byte on line 2.
READERS: list[tuple[str, str, list[str], Callable[[Path], Any]]] = [
    ("lm_text", "train.txt", ["is open", "the café"], read_sentences),
    ("lm1b", "x.tokens", ["is open", "the café"], lambda p: list(read_lm1b(p))),
    ("conll", "eng.train", ["open JJ I-ADJP O", "café NN I-NP I-LOC"], read_conll2003),
    ("texts", "train.texts.jsonl", ['{"id": 0, "tokens": ["open"]}', '{"id": 1, "tokens": ["café"]}'], read_texts),
    ("jsonl", "train.jsonl", ['{"ner": ["O"]}', '{"ner": ["café"]}'], lambda p: read_examples(p, ())),
    ("vocab", "vocab.txt", ["<S>", "café", "</S>", "<UNK>"], lambda p: Vocabulary.load(p).tokens),
    ("word2vec", "vectors.txt", ["2 2", "café 1 2", "open 3 4"], _vectors),
    ("glove", "glove.txt", ["open 3 4", "café 1 2"], _vectors),
    ("word2vec_training_text", "train.txt", ["is open", "the café"], _word2vec_words),
    ("json", "options.json", ['{"word":', '"café"}'], read_json),
    ("params", "params.yaml", ["data:", "  mirror: café"], lambda path: load_params(path, validate=False)),
]
READER_IDS = [r[0] for r in READERS]


def _zip(path: Path, members: dict[str, bytes]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return path


def _mirror(root: Path, dev: str = "a b c\nd e\n", test: str = "x y\nz z z\n",
            brown: bytes = b"\n\tthe/at dog/nn\n", abc: bytes = b"Rain fell. Crops grew\n") -> Path:
    """A miniature data mirror (layout of shared/data) for build_split."""
    (root / LM1B_DEV).parent.mkdir(parents=True, exist_ok=True)
    (root / LM1B_DEV).write_text(dev, encoding="utf-8")
    (root / LM1B_TEST).write_text(test, encoding="utf-8")
    _zip(root / BROWN_ZIP, {"brown/ca01": brown})
    _zip(root / ABC_ZIP, {"abc/rural.txt": abc})
    return root


def _where(err: pytest.ExceptionInfo, path: Path, line: int | None = None) -> None:
    """The error names the file (and line): ``<path>:<line>: problem``."""
    assert isinstance(err.value, InputError)
    prefix = f"{path}:{line}: " if line is not None else f"{path}: "
    assert str(err.value).startswith(prefix), str(err.value)
    assert err.value.line == line


@pytest.fixture(scope="module")
def tiny_model() -> BiLM:
    """A tiny random biLM (2 layers, 8-dimensional outputs): shapes and plumbing, not quality."""
    torch.manual_seed(0)
    config = BiLMConfig(filters=((1, 4), (2, 4)), char_dim=4, n_highway=1, cell_dim=8, projection_dim=4,
                        n_layers=2)
    return BiLM(config).eval()


# ------------------------------------------------------------------------------ missing things

@pytest.mark.parametrize("reader", READERS, ids=READER_IDS)
def test_missing_mirror_or_file(tmp_path, reader):
    _, name, _, read = reader
    missing = tmp_path / "nowhere" / name
    with pytest.raises(InputError, match="not found") as err:
        read(missing)
    _where(err, missing)
    # a directory where a file is expected: an InputError naming it, not an IsADirectoryError
    (tmp_path / "dir").mkdir()
    with pytest.raises(InputError) as err:
        read(tmp_path / "dir")
    _where(err, tmp_path / "dir")


def test_missing_mirror_archive_or_feature_file(tmp_path):
    with pytest.raises(InputError, match="data mirror directory not found") as err:
        build_split(tmp_path / "no-mirror", ["lm1b_dev"], 10)
    _where(err, tmp_path / "no-mirror")
    mirror = _mirror(tmp_path / "mirror")
    (mirror / BROWN_ZIP).unlink()
    with pytest.raises(InputError, match="file not found") as err:
        build_split(mirror, ["lm1b_dev", "brown"], 10)
    _where(err, mirror / BROWN_ZIP)
    for read in (read_brown, read_abc):
        with pytest.raises(InputError, match="file not found"):
            list(read(tmp_path / "none.zip"))
    with pytest.raises(InputError, match="feature file not found") as err:
        read_all(tmp_path / "train.hdf5")
    _where(err, tmp_path / "train.hdf5")
    (tmp_path / "vocab.txt").write_text("<S>\n</S>\n<UNK>\n", encoding="utf-8")
    with pytest.raises(InputError, match="not found") as err:
        Vocabulary.load(tmp_path / "vocab.txt", tmp_path / "counts.tsv")
    _where(err, tmp_path / "counts.tsv")


# ---------------------------------------------------------------------------------- encodings

@pytest.mark.parametrize("reader", READERS, ids=READER_IDS)
def test_non_utf8_bytes(tmp_path, reader):
    _, name, lines, read = reader
    path = tmp_path / name
    path.write_bytes("\n".join(lines).encode("latin-1") + b"\n")  # "café" -> caf\xe9 on line 2
    with pytest.raises(InputError, match="not valid UTF-8") as err:
        read(path)
    _where(err, path, 2)


@pytest.mark.parametrize("reader", READERS, ids=READER_IDS)
def test_utf8_byte_order_mark(tmp_path, reader):
    """A leading BOM is dropped: the file reads exactly as without it (not as a token "\\ufeff...")."""
    _, name, lines, read = reader
    (tmp_path / "plain").mkdir()
    (tmp_path / "bom").mkdir()
    text = ("\n".join(lines) + "\n").encode("utf-8")
    (tmp_path / "plain" / name).write_bytes(text)
    (tmp_path / "bom" / name).write_bytes(BOM + text)
    assert read(tmp_path / "bom" / name) == read(tmp_path / "plain" / name)


def test_utf8_byte_order_mark_in_zip_members(tmp_path):
    brown = _zip(tmp_path / "brown.zip", {"brown/ca01": BOM + b"\tThe/at dog/nn\n"})
    assert list(read_brown(brown)) == [["The", "dog"]]
    abc = _zip(tmp_path / "abc.zip", {"abc/rural.txt": BOM + "Café open\n".encode("utf-8")})
    assert list(read_abc(abc)) == [["Café", "open"]]


@pytest.mark.parametrize("reader", READERS, ids=READER_IDS)
def test_windows_line_endings(tmp_path, reader):
    """``\\r\\n`` reads exactly as ``\\n`` (no token or value keeps a trailing ``\\r``)."""
    _, name, lines, read = reader
    (tmp_path / "unix").mkdir()
    (tmp_path / "windows").mkdir()
    (tmp_path / "unix" / name).write_bytes(("\n".join(lines) + "\n").encode("utf-8"))
    (tmp_path / "windows" / name).write_bytes(("\r\n".join(lines) + "\r\n").encode("utf-8"))
    assert read(tmp_path / "windows" / name) == read(tmp_path / "unix" / name)


def test_windows_line_endings_in_brown_and_outputs(tmp_path):
    brown = _zip(tmp_path / "brown.zip", {"brown/ca01": b"\r\n\tThe/at dog/nn\r\n"})
    assert list(read_brown(brown)) == [["The", "dog"]]
    # whatever the input's endings, outputs are written with "\n"
    (tmp_path / "v.txt").write_bytes(b"<S>\r\n</S>\r\n<UNK>\r\nthe\r\n")
    Vocabulary.load(tmp_path / "v.txt").save(tmp_path / "out.txt")
    assert (tmp_path / "out.txt").read_bytes() == b"<S>\n</S>\n<UNK>\nthe\n"


def test_utf8_whatever_the_locale(tmp_path):
    """Readers and writers use UTF-8 even under an ASCII locale with Python's UTF-8 mode off."""
    text = "naïve café 日本 😀"
    (tmp_path / "train.txt").write_text(text + "\n", encoding="utf-8")
    (tmp_path / "eng.train").write_text("café NN I-NP O\n日本 NNP I-NP I-LOC\n", encoding="utf-8")
    (tmp_path / "vocab.txt").write_text("<S>\n</S>\n<UNK>\ncafé\n😀\n", encoding="utf-8")
    (tmp_path / "params.yaml").write_text("data: {mirror: naïve}\n", encoding="utf-8")
    (tmp_path / "vectors.txt").write_text("1 2\n日本 1 2\n", encoding="utf-8")
    script = textwrap.dedent("""
        import json, locale, sys
        from pathlib import Path
        from elmo_repro.tasks.ner.reader import read_conll2003, read_prepared
        from elmo_repro.data.examples import write_split
        from elmo_repro.data.text import read_sentences
        from elmo_repro.data.vocabulary import Vocabulary
        from elmo_repro.io import atomic_open, read_json, write_json
        from elmo_repro.params import load_params
        from elmo_repro.vectors import load_text_vectors
        root = Path(sys.argv[1])
        conll = read_conll2003(root / "eng.train")
        write_split(root, "out", conll, ("tokens",))
        vocab = Vocabulary.load(root / "vocab.txt")
        vocab.save(root / "out_vocab.txt")
        sentences = read_sentences(root / "train.txt")
        write_json(root / "out.json", {"sentences": sentences})
        result = {"encoding": locale.getpreferredencoding(False), "sentences": sentences,
                  "conll": read_prepared(root, "out")[0]["tokens"], "vocab": vocab.tokens,
                  "json": read_json(root / "out.json")["sentences"],
                  "params": load_params(root / "params.yaml", validate=False)["data"]["mirror"],
                  "vectors": load_text_vectors(root / "vectors.txt")[0]}
        print(json.dumps(result, ensure_ascii=True))
    """)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LC_", "PYTHONIOENCODING"))}
    env.update(LC_ALL="C", LANG="C", PYTHONUTF8="0")
    done = subprocess.run([sys.executable, "-c", script, str(tmp_path)], env=env, capture_output=True,
                          check=False)
    assert done.returncode == 0, done.stderr.decode("utf-8", "replace")
    result = json.loads(done.stdout)
    if sys.platform.startswith("linux"):  # the check bites: the locale's encoding is not UTF-8
        assert "utf" not in result["encoding"].lower()
    assert result["sentences"] == result["json"] == [text.split()]
    assert result["conll"] == ["café", "日本"]
    assert result["vocab"] == ["<S>", "</S>", "<UNK>", "café", "😀"]
    assert result["params"] == "naïve" and result["vectors"] == ["日本"]
    assert (tmp_path / "out_vocab.txt").read_bytes() == "<S>\n</S>\n<UNK>\ncafé\n😀\n".encode("utf-8")
    assert "日本".encode("utf-8") in (tmp_path / "out.texts.jsonl").read_bytes()


# ------------------------------------------------------------------------ blank and empty input

def test_blank_lines_do_not_shift_sentence_indices(tmp_path):
    # CoNLL: blank lines separate sentences; repeated ones (and -DOCSTART-) never make a sentence,
    # so sentence i is the i-th sentence of the file whatever the blank lines.
    compact = "-DOCSTART- -X- O O\n\nA DT I-NP O\n\nB NN I-NP O\n"
    spaced = "\n\n-DOCSTART- -X- O O\n\n\n\nA DT I-NP O\n\n\n\r\n \nB NN I-NP O\n\n\n"
    (tmp_path / "compact").write_text(compact, encoding="utf-8")
    (tmp_path / "spaced").write_text(spaced, encoding="utf-8")
    assert read_conll2003(tmp_path / "spaced") == read_conll2003(tmp_path / "compact")
    assert [s["tokens"] for s in read_conll2003(tmp_path / "spaced")] == [["A"], ["B"]]

    # JSONL example and text files: the line index is the example index and the text id (features
    # are keyed by it), so a blank line is an error, not silently skipped.
    good, text = '{"text_ids": {"tokens": 0}, "ner": ["O"]}', '{"id": 0, "tokens": ["A"]}'
    for content, line in [(f"{good}\n\n{good}\n", 2), (f"{good}\n{good}\n\n", 3), (f"{good}\n  \n", 2)]:
        (tmp_path / "dev.texts.jsonl").write_text(text + "\n", encoding="utf-8")
        (tmp_path / "dev.jsonl").write_text(content, encoding="utf-8")
        with pytest.raises(InputError, match="blank line") as err:
            read_prepared(tmp_path, "dev")
        _where(err, tmp_path / "dev.jsonl", line)
        texts = [text.replace('"id": 0', f'"id": {i}') if row == good else row
                 for i, row in enumerate(content.split("\n"))]
        (tmp_path / "dev.texts.jsonl").write_text("\n".join(texts), encoding="utf-8")
        with pytest.raises(InputError, match="blank line") as err:
            read_texts(tmp_path / "dev.texts.jsonl")
        _where(err, tmp_path / "dev.texts.jsonl", line)

    # Vocabulary: a token's id is its line number - 1, so a blank line is an error.
    (tmp_path / "vocab.txt").write_text("<S>\n</S>\n\n<UNK>\n", encoding="utf-8")
    with pytest.raises(InputError, match="exactly one token") as err:
        Vocabulary.load(tmp_path / "vocab.txt")
    _where(err, tmp_path / "vocab.txt", 3)

    # LM text: no sentence index (training shuffles, perplexity sums), blank lines are skipped.
    (tmp_path / "train.txt").write_text("\na b\n\n \r\nc\n\n", encoding="utf-8")
    assert read_sentences(tmp_path / "train.txt") == [["a", "b"], ["c"]]


@pytest.mark.parametrize("case", ["lm1b_dev", "brown", "abc", "train_text", "heldout", "conll", "jsonl",
                                  "texts", "word2vec_text"])
def test_empty_training_shard(tmp_path, case):
    mirror = tmp_path / "mirror"
    if case in ("lm1b_dev", "brown", "abc"):          # a training source that yields no sentence
        _mirror(mirror, **{"lm1b_dev": dict(dev="\n\n"), "brown": dict(brown=b"\n\n"),
                           "abc": dict(abc=b"  \n")}[case])
        path = mirror / {"lm1b_dev": LM1B_DEV, "brown": BROWN_ZIP, "abc": ABC_ZIP}[case]
        with pytest.raises(InputError, match=f"training source '{case}' has no sentences") as err:
            build_split(mirror, ["lm1b_dev", "brown", "abc"], 10)
        _where(err, path)
        return
    if case == "heldout":                             # nothing left for the held-out sample
        _mirror(mirror, test="a b c\n\n")
        with pytest.raises(InputError, match="no held-out sentence") as err:
            build_split(mirror, ["lm1b_dev"], 10)
        _where(err, mirror / LM1B_TEST)
        return
    name, text, read, problem = {
        "train_text": ("train.txt", "\n \n\r\n", read_sentences, "no sentences"),
        "conll": ("eng.train", "-DOCSTART- -X- O O\n\n", read_conll2003, "no sentences"),
        "jsonl": ("train.jsonl", "", lambda p: read_examples(p, ("tokens",)), "no examples"),
        "texts": ("train.texts.jsonl", "", read_texts, "no texts"),
        "word2vec_text": ("train.txt", "", _word2vec_words, "no word occurs"),
    }[case]
    (tmp_path / name).write_text(text, encoding="utf-8")
    with pytest.raises(InputError, match=problem) as err:
        read(tmp_path / name)
    _where(err, tmp_path / name)


def test_empty_training_stream_api():
    # The training stream itself refuses an empty corpus (the readers above catch it earlier).
    with pytest.raises(ValueError, match="no training sentences"):
        LMStream([], batch_size=2, unroll_steps=5, seed=0)


# -------------------------------------------------------------------------------- odd tokens

def test_token_over_48_utf8_bytes():
    """Documented in ``data/character_ids.py``: 50 slots = begin-of-word, the token's first 48 UTF-8
    bytes (cut even inside a multi-byte character, as bilm-tf/allennlp do), end-of-word, padding."""
    def body(token: str) -> list[int]:
        ids = token_to_char_ids(token)
        assert len(ids) == MAX_CHARS and ids[0] == 258 + 1
        end = ids.index(259 + 1)
        return [i - 1 for i in ids[1:end]]

    assert body("é" * 30) == list(("é" * 24).encode("utf-8"))           # 60 bytes -> 24 whole chars
    assert body("日本語" * 6) == list(("日本語" * 5 + "日").encode("utf-8"))  # 54 bytes -> 16 chars
    assert body("😀" * 13) == list(("😀" * 12).encode("utf-8"))           # 4-byte chars: 12 kept
    assert body("a" * 46 + "日") == [97] * 46 + list("日".encode("utf-8"))[:2]  # cut inside a char
    assert body("a" * 48) == [97] * 48 and token_to_char_ids("a" * 48)[-1] == 259 + 1
    # Two long tokens that differ only after byte 48 look the same to the char CNN, but stay
    # distinct types with distinct vocabulary ids (targets).
    long_a, long_b = "x" * 48 + "a", "x" * 48 + "b"
    assert token_to_char_ids(long_a) == token_to_char_ids(long_b)
    sentences = [[long_a, long_b, long_a]]
    vocab = Vocabulary.build(*count_tokens(sentences))
    table, _ = TypeTable.build(sentences, vocab)
    assert vocab.id(long_a) != vocab.id(long_b)
    assert {long_a, long_b} <= set(table.types)
    assert batch_to_char_ids(sentences).shape == (1, 5, MAX_CHARS)


LONG = [f"w{i % 97}" for i in range(1000)]


def test_1000_token_sentence_lm_batches():
    """A sentence longer than ``unroll_steps`` continues in its row over the following batches
    (bilm-tf packing); every row is a sequence of whole ``<S> ... </S>`` streams."""
    sentences = [LONG, ["short", "one"]]
    vocab = Vocabulary.build(*count_tokens(sentences))
    table, encoded = TypeTable.build(sentences, vocab)
    batch_size, unroll, n_batches = 3, 20, 60
    stream = LMStream(encoded, batch_size=batch_size, unroll_steps=unroll, seed=0)
    batches = [next(stream) for _ in range(n_batches)]
    inputs = np.concatenate([b[0] for b in batches], axis=1)            # (B, 1200)
    targets = np.concatenate([b[1] for b in batches], axis=1)
    full = {len(e): np.concatenate(([0], e, [1])) for e in encoded}     # <S>=0 ... </S>=1
    whole_long = 0
    for row in range(batch_size):
        np.testing.assert_array_equal(targets[row, :-1], np.where(inputs[row, 1:] == 0, 1, inputs[row, 1:]))
        starts = list(np.flatnonzero(inputs[row] == 0)) + [inputs.shape[1]]
        assert starts[0] == 0
        for start, end in zip(starts, starts[1:]):
            segment = inputs[row, start:end]                             # one sentence's inputs
            matches = [f for f in full.values() if np.array_equal(f[:len(segment)], segment)]
            assert len(matches) == 1, segment                            # a prefix of one sentence
            if end < inputs.shape[1]:                                    # complete: <S> w1 .. wn
                np.testing.assert_array_equal(segment, matches[0][:-1])
                whole_long += len(segment) == len(LONG) + 1
    assert whole_long >= 1                                               # spans > 50 batches
    assert [table.types[i] for i in encoded[0]] == LONG


def test_1000_token_sentence_layers_and_features(tiny_model):
    n_layers, dim = tiny_model.n_layers, tiny_model.output_dim
    char_ids = torch.from_numpy(batch_to_char_ids([LONG, ["short"]]))
    with torch.no_grad():
        layers = tiny_model.layers(char_ids)
    assert layers.shape == (2, n_layers, 1002, dim) and torch.isfinite(layers).all()
    out = dict(embed_sentences(tiny_model, [["short"], LONG], batch_size=2))
    assert out[1].shape == (n_layers, 1000, dim) and np.isfinite(out[1]).all()
    # two float32 runs over 1002 steps: twice the biLM chain bound (fp_bounds.py), about 1e-2 of
    # max|value|, loose for a long chain but an off-by-one position or a lost state is off by more
    bound = 2 * bilm_bound(tiny_model.config, 1002, layers.abs().amax())
    np.testing.assert_allclose(out[1], layers[0, :, 1:1001].numpy(), rtol=0, atol=bound)


@pytest.mark.parametrize("boundary", ["<S>", "</S>"])
def test_literal_boundary_token_in_lm_text(tmp_path, boundary):
    """Decision (``data/text.py``): rejected in LM text, naming file and line, so that training
    targets and inputs never confuse a word with the sentence boundaries."""
    (tmp_path / "train.txt").write_text(f"a b\nc {boundary} d\n", encoding="utf-8")
    (tmp_path / "x.tokens").write_text(f"a b\nc {boundary} d\n", encoding="utf-8")
    brown = _zip(tmp_path / "brown.zip", {"brown/ca01": f"\ta/at\n\tc/nn {boundary}/nn\n".encode()})
    for path, read in [(tmp_path / "train.txt", read_sentences), (tmp_path / "x.tokens", read_lm1b),
                       (brown / "brown/ca01", lambda _: read_brown(brown))]:
        with pytest.raises(InputError, match=f"token 2 is a literal '{boundary}'") as err:
            list(read(path))
        _where(err, path, 2)
    mirror = _mirror(tmp_path / "mirror", test=f"x {boundary}\n")            # the held-out text too
    with pytest.raises(InputError, match="literal") as err:
        build_split(mirror, ["lm1b_dev"], 10)
    _where(err, mirror / LM1B_TEST, 1)
    # Raw ABC text cannot produce one: the tokenizer splits "<" and ">" off.
    abc = _zip(tmp_path / "abc.zip", {"abc/rural.txt": f"A {boundary} here\n".encode()})
    assert boundary not in [t for s in read_abc(abc) for t in s]


def test_literal_unk_token_is_the_unknown_word():
    """A literal ``<UNK>`` (as in pre-unked corpora) counts towards ``<UNK>`` and targets its id."""
    sentences = [["a", "<UNK>", "b"], ["a"]]
    vocab = Vocabulary.build(*count_tokens(sentences), min_count=2)
    assert vocab.tokens == ["<S>", "</S>", "<UNK>", "a"]
    assert vocab.counts[vocab.unk] == 2                                      # "<UNK>" and "b"
    table, encoded = TypeTable.build(sentences, vocab)
    assert table.vocab_ids[encoded[0][1]] == vocab.unk == table.vocab_ids[encoded[0][2]]


def test_literal_boundary_token_in_features(tiny_model):
    """Feature extraction keeps bilm-tf/allennlp's behaviour: a literal ``<S>``/``</S>`` inside a
    sentence gets the boundary character ids (``batch_to_char_ids``); extraction works, one vector
    per token. Also exercised by test_features.py (its sentence ``a / b <S>``)."""
    char_ids = batch_to_char_ids([["a", "<S>", "</S>"]])
    assert char_ids[0, 2].tolist() == token_to_char_ids("<S>") == char_ids[0, 0].tolist()
    assert char_ids[0, 3].tolist() == token_to_char_ids("</S>")
    (index, layers), = embed_sentences(tiny_model, [["a", "<S>", "</S>"]])
    assert index == 0 and layers.shape == (tiny_model.n_layers, 3, tiny_model.output_dim)


def test_sentence_containing_slash(tmp_path, tiny_model):
    """HDF5 dataset names are sentence indices, never the text, so "/" (the HDF5 group separator)
    cannot create groups. See also test_features.py::test_layout_and_round_trip ("a / b <S>")."""
    conll = tmp_path / "eng.train"
    conll.write_text("1/2 CD I-NP O\nand/or CC O O\n\n/ SYM O O\n", encoding="utf-8")
    sentences = read_conll2003(conll)
    write_split(tmp_path, "train", sentences, ("tokens",))
    tokens = [s["tokens"] for s in read_prepared(tmp_path, "train")]
    assert tokens == [["1/2", "and/or"], ["/"]]
    path = tmp_path / "f.hdf5"
    write_features(path, tiny_model, tokens, dtype="float32")
    with h5py.File(path, "r") as handle:
        assert sorted(handle.keys()) == ["0", "1", "sentence_to_index"]
        assert all(isinstance(handle[k], h5py.Dataset) for k in handle.keys())
        assert read_sentence_index(handle) == {"1/2 and/or": "0", "/": "1"}
    assert [a.shape[1] for a in read_all(path)] == [2, 1]


def test_duplicate_sentences(tmp_path, tiny_model):
    """Each copy keeps its own index and dataset; ``sentence_to_index`` maps the text to the last
    copy's index, as allennlp does (documented in ``elmo/features.py``). LM training text keeps
    duplicates; the held-out sample drops repeats (test_lm_corpus.py::test_build_split)."""
    sentences = [["the", "cat"], ["a", "dog"], ["the", "cat"], ["the", "cat"]]
    path = tmp_path / "f.hdf5"
    write_features(path, tiny_model, sentences, batch_size=3, dtype="float32")
    layers = read_all(path)
    assert len(layers) == 4 and all(a.shape[1] == 2 for a in layers)
    bound = 2 * bilm_bound(tiny_model.config, 4, np.abs(layers[0]).max())   # other batch rows: fp_bounds.py
    np.testing.assert_allclose(layers[0], layers[2], rtol=0, atol=bound)
    np.testing.assert_allclose(layers[0], layers[3], rtol=0, atol=bound)
    with h5py.File(path, "r") as handle:
        assert sorted(handle.keys()) == ["0", "1", "2", "3", "sentence_to_index"]
        assert read_sentence_index(handle) == {"the cat": "3", "a dog": "1"}
    (tmp_path / "train.txt").write_text("the cat\nthe cat\n", encoding="utf-8")
    assert read_sentences(tmp_path / "train.txt") == [["the", "cat"], ["the", "cat"]]


# ---------------------------------------------------------------------------------- vocabulary

@pytest.mark.parametrize("vocab, counts, line, problem", [
    ("the\n<S>\n", None, None, "lacks the special token.*</S>, <UNK>"),        # see also test_vocabulary.py
    ("<s>\n</s>\n<unk>\nthe\n", None, None, "lacks the special token.*<S>, </S>, <UNK>"),   # lower-case
    ("<S>\n</S>\n<UNK>\nrare\ncommon\n", "<S>\t1\n</S>\t1\n<UNK>\t0\nrare\t1\ncommon\t9\n", 5,
     "not frequency-sorted: 'common' \\(count 9\\)"),
    ("<S>\n</S>\n<UNK>\nthe\n", "<S>\t1\n</S>\t1\n<UNK>\t0\nthe\tmany\n", 4, "expected '<token>"),
    ("<S>\n</S>\n<UNK>\nthe\n", "<S>\t1\n</S>\t1\n<UNK>\t0\n", None, "3 counts for 4 tokens"),
    ("<S>\n</S>\n<UNK>\nthe cat\n", None, 4, "exactly one token"),
    ("<S>\n</S>\n<UNK>\nthe\nthe\n", None, None, "duplicate vocabulary entry 'the'"),
])
def test_vocabulary_without_specials_or_not_frequency_sorted(tmp_path, vocab, counts, line, problem):
    vocab_path, counts_path = tmp_path / "vocab.txt", tmp_path / "counts.tsv"
    vocab_path.write_text(vocab, encoding="utf-8")
    if counts is not None:
        counts_path.write_text(counts, encoding="utf-8")
    with pytest.raises(InputError, match=problem) as err:
        loaded = Vocabulary.load(vocab_path, counts_path if counts is not None else None)
        loaded.check_frequency_sorted(str(vocab_path))       # what stages.pretrain_bilm runs
    named = counts_path if "counts" in problem or "<token>" in problem else vocab_path
    _where(err, named, line)


def test_vocabulary_without_counts_cannot_be_order_checked(tmp_path):
    # Without counts.tsv the frequency order cannot be checked: an error, not a silent pass.
    vocab_path = tmp_path / "vocab.txt"
    vocab_path.write_text("<S>\n</S>\n<UNK>\nthe\n", encoding="utf-8")
    with pytest.raises(InputError, match="no counts") as err:
        Vocabulary.load(vocab_path).check_frequency_sorted(str(vocab_path))
    _where(err, vocab_path)


def test_vocabulary_smaller_than_sampled_negatives(tmp_path):
    """n_negative_samples >= vocabulary size: training uses the exact full softmax, with a warning
    (documented in ``bilm/sampled_softmax.py``), instead of failing to draw distinct negatives."""
    sentences = [["the", "cat", "sat"], ["a", "dog", "ran", "."]] * 3
    vocab = Vocabulary.build(*count_tokens(sentences))
    assert len(vocab) == 10
    config = BiLMConfig(filters=((1, 4), (2, 4)), char_dim=4, n_highway=1, cell_dim=8, projection_dim=4,
                        n_layers=1, dropout=0.0, n_tokens_vocab=len(vocab))
    cfg = settings(seed=0, token_budget=20, batch_size=2, unroll_steps=5, n_negative_samples=8192,
                         log_every=1)
    with pytest.warns(UserWarning, match="8192 sampled negatives >= vocabulary size 10: using the full softmax"):
        _, summary = pretrain(config, cfg, sentences, vocab, tmp_path / "ckpt")
    assert summary["batches"] == 2 and np.isfinite(summary["train_sampled_softmax_loss"])


# ----------------------------------------------------------------------------- malformed files

@pytest.mark.parametrize("line, problem", [
    ("{text_ids: {tokens: 0}}", "malformed JSON"),
    ('{"text_ids": {"tokens": 0}}', "'ner' must be a non-empty list of non-empty strings"),
    ('{"text_ids": {"tokens": 1}, "ner": ["O"]}', "equal length"),
    ('{"ner": ["O"]}', "missing 'text_ids'"),
    ('{"text_ids": {"words": 0}, "ner": ["O"]}', r"text_ids.tokens is None, not a text id of .*dev.texts.jsonl \(0..1\)"),
    ('{"text_ids": {"tokens": 2}, "ner": ["O"]}', r"text_ids.tokens is 2, not a text id"),
    ('{"text_ids": {"tokens": true}, "ner": ["O"]}', r"text_ids.tokens is True, not a text id"),
    ('{"text_ids": {"tokens": 0}, "ner": [1]}', "non-empty strings"),
    ('["A"]', "expected a JSON object"),
])
def test_malformed_conll_jsonl_line(tmp_path, line, problem):
    # The original 4-column format: test_conll.py::test_malformed_line_names_file_and_line.
    (tmp_path / "dev.texts.jsonl").write_text('{"id": 0, "tokens": ["A"]}\n{"id": 1, "tokens": ["A", "B"]}\n',
                                              encoding="utf-8")
    path = tmp_path / "dev.jsonl"
    path.write_text('{"text_ids": {"tokens": 0}, "ner": ["O"]}\n' + line + "\n", encoding="utf-8")
    with pytest.raises(InputError, match=problem) as err:
        read_prepared(tmp_path, "dev")
    _where(err, path, 2)


@pytest.mark.parametrize("line, problem", [
    ('{"id": 0, "tokens": []}', "'tokens' must be a non-empty list"),
    ('{"id": 0, "tokens": ["A", ""]}', "non-empty strings"),
    ('{"id": 2, "tokens": ["A"]}', "a text's id is its line index"),
    ('{"tokens": ["A"]}', "a text's id is its line index"),
    ("{id: 1}", "malformed JSON"),
])
def test_malformed_texts_line(tmp_path, line, problem):
    path = tmp_path / "dev.texts.jsonl"
    path.write_text('{"id": 0, "tokens": ["A"]}\n' + line.replace('"id": 0', '"id": 1') + "\n", encoding="utf-8")
    with pytest.raises(InputError, match=problem) as err:
        read_texts(path)
    _where(err, path, 2)


@pytest.fixture(scope="module")
def feature_bytes(tmp_path_factory, tiny_model) -> bytes:
    path = tmp_path_factory.mktemp("features") / "f.hdf5"
    write_features(path, tiny_model, [["a", "b"], ["c"]] * 10)
    return path.read_bytes()


@pytest.mark.parametrize("cut", ["empty", "8 bytes", "200 bytes", "half", "all but 1 byte", "text file"])
def test_truncated_hdf5_file(tmp_path, feature_bytes, cut):
    data = {"empty": b"", "8 bytes": feature_bytes[:8], "200 bytes": feature_bytes[:200],
            "half": feature_bytes[:len(feature_bytes) // 2], "all but 1 byte": feature_bytes[:-1],
            "text file": b"0 0.1 0.2\n"}[cut]
    path = tmp_path / "train.hdf5"
    path.write_bytes(data)
    with pytest.raises(InputError, match="unreadable HDF5 feature file") as err:
        read_all(path)
    _where(err, path)


def test_a_stage_reports_bad_input_in_one_line(tmp_path):
    """issue 30: a params error printed a 15-line traceback before the key-path message. A stage
    prints the message alone (exit status 1); --debug or ELMO_DEBUG=1 keeps the traceback."""
    root = Path(__file__).resolve().parents[2]
    params = yaml.safe_load((root / "params.yaml").read_text(encoding="utf-8"))
    params["pretrain"]["batch_size"] = 0
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params), encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(root)}
    env.pop("ELMO_DEBUG", None)
    done = subprocess.run([sys.executable, "-m", "stages.check_params", "--threads", "1"], cwd=tmp_path,
                          env=env, capture_output=True, text=True, check=False)
    assert done.returncode == 1
    assert done.stderr.startswith("error: params.yaml: ") and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.splitlines() == [
        "error: params.yaml: pretrain.batch_size: Input should be greater than or equal to 1 (got 0)",
        "(the traceback: --debug or ELMO_DEBUG=1)"]
    debug = subprocess.run([sys.executable, "-m", "stages.check_params", "--threads", "1"], cwd=tmp_path,
                           env={**env, "ELMO_DEBUG": "1"}, capture_output=True, text=True, check=False)
    assert debug.returncode == 1 and "Traceback" in debug.stderr and "params.yaml" in debug.stderr


def test_a_key_repeated_in_params_is_refused(tmp_path):
    """issue 30: PyYAML kept the last of two `pretrain:` keys silently, while DVC refuses the file."""
    path = tmp_path / "params.yaml"
    path.write_text("profile: tiny\npretrain:\n  seed: 0\n  seed: 1\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"duplicate key 'seed' \(first on line 3\)") as err:
        load_params(path, validate=False)
    _where(err, path, 4)
    path.write_text("profile: tiny\nprofile: paper\n", encoding="utf-8")
    with pytest.raises(InputError, match="duplicate key 'profile'") as err:
        load_params(path, validate=False)
    _where(err, path, 2)


def test_an_out_of_range_char_id_names_the_id_and_n_characters(tiny_model):
    """issue 30: torch raised a bare `IndexError: index out of range in self`."""
    good = torch.from_numpy(batch_to_char_ids([["a", "b"]]))
    assert tiny_model.layers(good).shape[0] == 1
    for bad_id in (300, -1):
        bad = good.clone()
        bad[0, 1, 3] = bad_id
        with pytest.raises(ValueError, match=rf"char id {bad_id} is outside 0 .. 261: the biLM's options have "
                                             r"n_characters = 262"):
            tiny_model.layers(bad)


def test_a_corrupted_zip_member_names_the_archive_and_member(tmp_path):
    """issue 30: a flipped byte in the Brown zip raised zipfile's bare `BadZipFile: Bad CRC-32`."""
    from elmo_repro.data.lm_corpus import brown_documents

    path = _zip(tmp_path / "brown.zip", {"brown/ca01": b"\n\tThe/at jury/nn said/vbd ./.\n"})
    data = bytearray(path.read_bytes())
    at = bytes(data).index(b"jury")
    data[at] = ord("f")                                   # the stored bytes no longer match the CRC
    path.write_bytes(bytes(data))
    with pytest.raises(InputError, match=r"corrupted zip member \(Bad CRC-32") as err:
        list(brown_documents(path))
    _where(err, path / "brown/ca01")


def test_an_unwritable_output_names_the_output_path(tmp_path):
    """issue 30: a read-only directory named the hidden temporary file, and an output whose parent
    is a regular file said `[Errno 17] File exists`."""
    from elmo_repro.io import OutputError

    (tmp_path / "results").write_text("a file where a directory should be\n")
    with pytest.raises(OutputError, match=r"results/metrics/x.json: cannot write the output: .*results is a file, "
                                          "not a directory"):
        write_json(tmp_path / "results" / "metrics" / "x.json", {"a": 1})
    (tmp_path / "dir_output").mkdir()
    (tmp_path / "dir_output" / "inside").write_text("x")
    with pytest.raises(OutputError, match=r"dir_output: cannot write the output: .*\(replacing it\)"):
        write_json(tmp_path / "dir_output", {"a": 1})
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        if not os.access(locked, os.W_OK):               # root ignores permissions: nothing to see there
            with pytest.raises(OutputError) as err:
                write_json(locked / "x.json", {"a": 1})
            assert str(err.value).startswith(f"{locked / 'x.json'}: cannot write the output: Permission denied")
            assert ".tmp" not in str(err.value)
    finally:
        locked.chmod(0o700)
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]          # no temporary left
