"""The sentences of every evaluation split in the data mirror, for the contamination check.

Each split is read as ``(location, tokens)`` pairs: ``location`` names the file (or zip / gzip
member) and the line or item where the sentence starts, so a report can point at it without
quoting licensed text; ``tokens`` is the sentence as that data set tokenizes it. Splits whose text
is raw (SQuAD paragraphs and questions, Multi30k) are split and tokenized with the 1B Word-style
tokenizer of :mod:`elmo_repro.data.lm_corpus`; the contamination key ignores tokenization anyway.

Every split (name -> path under the mirror; what counts as a sentence):

``conll2003_testa`` / ``conll2003_testb``
    ``conll2003/eng.testa`` / ``eng.testb``: first column of each non-blank line, sentences
    separated by blank lines, ``-DOCSTART-`` lines skipped.
``sst5_dev`` / ``sst5_test``
    ``sst5/trees/{dev,test}.txt``: the leaves of each line's tree.
``snli_dev`` / ``snli_test``
    ``snli/esnli_infersent_format/{s1,s2}.{dev,test}``: premises, then hypotheses, one per line.
``squad_dev``
    ``squad_v1.1/dev-v1.1.json``: every paragraph's sentences, then every question.
``conll2005_dev`` / ``conll2005_test_wsj`` / ``conll2005_test_brown``
    ``srl_conll2005/{devel,test.wsj,test.brown}/words/*.words.gz``: one word per line, sentences
    separated by (possibly space-filled) blank lines.
``litbank``
    ``litbank_coref/conll/*.conll``: the word column (4th), sentences separated by blank lines
    (LitBank has no official split: all of it is evaluation text).
``wsd_<dataset>``
    ``wsd_raganato_eval/<dataset>/<dataset>.data.xml``: the ``wf``/``instance`` words of each
    ``sentence``, for senseval2, senseval3, semeval2007, semeval2013, semeval2015.
``ptb_wsj_sample``
    ``ptb_wsj_sample_nltk/corpora/treebank.zip``, ``treebank/combined/wsj_*.mrg``: the leaves of
    each tree without ``-NONE-`` traces (the POS probe's data: all of it is evaluation text).
``multi30k_val`` / ``multi30k_test``
    ``multi30k/raw/{val,test_2016_flickr}.en.gz``: one raw English sentence per line.

Raises :class:`~elmo_repro.io.InputError` naming the path for a missing file and for a file that
cannot be parsed (invalid JSON or XML, a bad zip or gzip).
"""

from __future__ import annotations

import gzip
import json
import re
import xml.etree.ElementTree as ElementTree
from pathlib import Path
from typing import Callable, Iterator

from ..io import InputError
from .contamination import EvalIndex
from .lm_corpus import split_sentences, tokenize
from .ptb_pos import iter_tagged_trees

Sentence = tuple[str, list[str]]   # (location, tokens)


def _read_bytes(path: Path) -> bytes:
    if not path.is_file():
        raise InputError(path, "evaluation file not found")
    return path.read_bytes()


def _decode(path: Path | str, data: bytes) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise InputError(path, f"not valid UTF-8 (byte {err.start})") from None


def _gunzip(path: Path) -> str:
    try:
        return _decode(path, gzip.decompress(_read_bytes(path)))
    except (OSError, EOFError) as err:
        raise InputError(path, f"not a valid gzip file ({err})") from None


def _column_sentences(where: str, text: str, column: int, skip: Callable[[str], bool] = lambda w: False
                      ) -> Iterator[Sentence]:
    """Sentences of a one-token-per-line column file; blank (or whitespace-only) lines separate them."""
    tokens: list[str] = []
    start = 0
    for number, line in enumerate(text.splitlines(), start=1):
        fields = line.split()
        if not fields:
            if tokens:
                yield f"{where}:{start}", tokens
            tokens = []
            continue
        if len(fields) <= column:
            raise InputError(where, f"expected at least {column + 1} columns", line=number)
        if skip(fields[column]):
            continue
        if not tokens:
            start = number
        tokens.append(fields[column])
    if tokens:
        yield f"{where}:{start}", tokens


def read_conll2003(path: Path) -> Iterator[Sentence]:
    yield from _column_sentences(str(path), _decode(path, _read_bytes(path)), 0,
                                 skip=lambda word: word == "-DOCSTART-")


_TREE_LEAF = re.compile(r"\(\S+ ([^()\s]+)\)")


def read_sst(path: Path) -> Iterator[Sentence]:
    for number, line in enumerate(_decode(path, _read_bytes(path)).splitlines(), start=1):
        leaves = _TREE_LEAF.findall(line)
        if leaves:
            yield f"{path}:{number}", leaves


def read_lines(path: Path) -> Iterator[Sentence]:
    """One whitespace-tokenized sentence per non-blank line."""
    for number, line in enumerate(_decode(path, _read_bytes(path)).splitlines(), start=1):
        if line.split():
            yield f"{path}:{number}", line.split()


def read_snli(directory: Path, split: str) -> Iterator[Sentence]:
    for side in ("s1", "s2"):
        yield from read_lines(directory / f"{side}.{split}")


def read_squad(path: Path) -> Iterator[Sentence]:
    try:
        articles = json.loads(_decode(path, _read_bytes(path)))["data"]
    except (json.JSONDecodeError, KeyError, TypeError) as err:
        raise InputError(path, f"not a SQuAD JSON file ({err})") from None
    for a, article in enumerate(articles):
        for p, paragraph in enumerate(article["paragraphs"]):
            where = f"{path}:data[{a}].paragraphs[{p}]"
            for sentence in split_sentences(" ".join(paragraph["context"].split())):
                yield where, tokenize(sentence)
            for q, qa in enumerate(paragraph["qas"]):
                yield f"{where}.qas[{q}]", tokenize(qa["question"])


def read_conll2005_words(directory: Path) -> Iterator[Sentence]:
    files = sorted(directory.glob("*.words.gz")) if directory.is_dir() else []
    if not files:
        raise InputError(directory, "no *.words.gz file (CoNLL-2005 words column)")
    for path in files:
        yield from _column_sentences(str(path), _gunzip(path), 0)


def read_litbank(directory: Path) -> Iterator[Sentence]:
    files = sorted(directory.glob("*.conll")) if directory.is_dir() else []
    if not files:
        raise InputError(directory, "no *.conll file (LitBank coreference)")
    for path in files:
        text = "\n".join(line for line in _decode(path, _read_bytes(path)).splitlines()
                         if not line.startswith("#"))
        yield from _column_sentences(str(path), text, 3)


def read_wsd(path: Path) -> Iterator[Sentence]:
    try:
        root = ElementTree.fromstring(_read_bytes(path))
    except ElementTree.ParseError as err:
        raise InputError(path, f"not valid XML ({err})") from None
    for sentence in root.iter("sentence"):
        tokens = [node.text for node in sentence if node.tag in ("wf", "instance") and node.text]
        if tokens:
            yield f"{path}:{sentence.get('id')}", tokens


def read_ptb_sample(path: Path) -> Iterator[Sentence]:
    for sentence in iter_tagged_trees(path):
        yield sentence.location, sentence.words


def read_raw_gz(path: Path) -> Iterator[Sentence]:
    for number, line in enumerate(_gunzip(path).splitlines(), start=1):
        if line.strip():
            yield f"{path}:{number}", tokenize(line)


WSD_DATASETS = ("senseval2", "senseval3", "semeval2007", "semeval2013", "semeval2015")

# Split name -> reader of the mirror root. The dict order is the report's order.
SPLITS: dict[str, Callable[[Path], Iterator[Sentence]]] = {
    "conll2003_testa": lambda m: read_conll2003(m / "conll2003/eng.testa"),
    "conll2003_testb": lambda m: read_conll2003(m / "conll2003/eng.testb"),
    "sst5_dev": lambda m: read_sst(m / "sst5/trees/dev.txt"),
    "sst5_test": lambda m: read_sst(m / "sst5/trees/test.txt"),
    "snli_dev": lambda m: read_snli(m / "snli/esnli_infersent_format", "dev"),
    "snli_test": lambda m: read_snli(m / "snli/esnli_infersent_format", "test"),
    "squad_dev": lambda m: read_squad(m / "squad_v1.1/dev-v1.1.json"),
    "conll2005_dev": lambda m: read_conll2005_words(m / "srl_conll2005/devel/words"),
    "conll2005_test_wsj": lambda m: read_conll2005_words(m / "srl_conll2005/test.wsj/words"),
    "conll2005_test_brown": lambda m: read_conll2005_words(m / "srl_conll2005/test.brown/words"),
    "litbank": lambda m: read_litbank(m / "litbank_coref/conll"),
    **{f"wsd_{name}": (lambda m, name=name: read_wsd(m / f"wsd_raganato_eval/{name}/{name}.data.xml"))
       for name in WSD_DATASETS},
    "ptb_wsj_sample": lambda m: read_ptb_sample(m / "ptb_wsj_sample_nltk/corpora/treebank.zip"),
    "multi30k_val": lambda m: read_raw_gz(m / "multi30k/raw/val.en.gz"),
    "multi30k_test": lambda m: read_raw_gz(m / "multi30k/raw/test_2016_flickr.en.gz"),
}

# The mirror path each split reads (a file or a folder; the DVC dependency of the stages that read
# it), and those paths once each, in the splits' order.
SPLIT_FILES: dict[str, str] = {
    "conll2003_testa": "conll2003/eng.testa", "conll2003_testb": "conll2003/eng.testb",
    "sst5_dev": "sst5/trees/dev.txt", "sst5_test": "sst5/trees/test.txt",
    "snli_dev": "snli/esnli_infersent_format", "snli_test": "snli/esnli_infersent_format",
    "squad_dev": "squad_v1.1/dev-v1.1.json", "conll2005_dev": "srl_conll2005/devel/words",
    "conll2005_test_wsj": "srl_conll2005/test.wsj/words", "conll2005_test_brown": "srl_conll2005/test.brown/words",
    "litbank": "litbank_coref/conll",
    **{f"wsd_{name}": "wsd_raganato_eval" for name in WSD_DATASETS},
    "ptb_wsj_sample": "ptb_wsj_sample_nltk/corpora/treebank.zip",
    "multi30k_val": "multi30k/raw", "multi30k_test": "multi30k/raw",
}
SPLIT_PATHS = list(dict.fromkeys(SPLIT_FILES.values()))


def read_split(mirror: str | Path, name: str) -> Iterator[Sentence]:
    """``(location, tokens)`` of one evaluation split (a key of :data:`SPLITS`) under the mirror.

    Raises:
        ValueError: an unknown split name.
        InputError: a missing or unparsable file of the split.
    """
    if name not in SPLITS:
        raise ValueError(f"unknown evaluation split {name!r}; known: {', '.join(SPLITS)}")
    return SPLITS[name](Path(mirror))


def build_index(mirror: str | Path, config: dict, extra: dict[str, Iterator[Sentence]] | None = None) -> EvalIndex:
    """The :class:`~elmo_repro.data.contamination.EvalIndex` of the ``contamination`` params
    section (``splits``: names from :data:`SPLITS`; ``min_words``: the length threshold), plus
    ``extra`` splits read elsewhere (e.g. the LM held-out sample)."""
    splits = list(config["splits"])
    unknown = sorted(set(splits) - set(SPLITS))
    if unknown or len(set(splits)) != len(splits):
        raise ValueError(f"contamination.splits must be distinct names from {list(SPLITS)}, got {splits}")
    readers = {name: read_split(mirror, name) for name in splits}
    return EvalIndex.build({**readers, **(extra or {})}, int(config["min_words"]))
