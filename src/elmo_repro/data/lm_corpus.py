"""Language-model text: readers for the staged corpora and the deterministic train / held-out split.

Every reader yields sentences as lists of tokens (no ``<S>``/``</S>``), in file order. Sources
(paths relative to the data mirror, ``shared/data/README.md``):

``lm1b_dev``
    ``lm1b_heldout_subset/1b_benchmark.dev.tokens``: 1B Word Benchmark heldout sections 10-11, one
    tokenized sentence per line, space-separated, UTF-8 (12,216 sentences / 310,490 tokens).
``brown``
    ``lm_supplement_nltk/corpora/brown.zip``, members ``brown/c[a-r]NN`` (500 files) in sorted
    order: one sentence per non-empty line, leading tab, tokens ``word/tag``. The tag (after the
    last ``/``) is dropped and the word kept as written (Brown leaves clitics attached:
    ``Atlanta's``); only its ``````/``''`` quote tokens become ``"`` as in 1B Word. The files are
    pure ASCII; they are decoded as strict UTF-8 (an ASCII superset), so a stray byte is an error.
    57,340 sentences / 1,161,192 tokens, as listed in the mirror's SOURCE.md.
``abc``
    ``lm_supplement_nltk/corpora/abc.zip``, ``abc/rural.txt`` then ``abc/science.txt`` (the
    README is skipped): raw news text, roughly one sentence or headline per line. Each line is
    split into sentences (:func:`split_sentences`) and tokenized in the 1B Word style
    (:func:`tokenize`). Decoding is per line: UTF-8 if valid, else cp1252 (Latin-1 for the five
    bytes cp1252 leaves undefined). ``rural.txt`` is UTF-8; ``science.txt`` is Latin-1 with CRLF
    endings (``460\\xb0C``, ``La Ni\\xf1a``) and HTML entities (``L'Or&eacute;al``), which are
    unescaped. ``rural.txt`` has ten double-encoded ``\\xc2``-prefixed characters, repaired by
    :data:`_MOJIBAKE`.

:func:`build_split` concatenates the chosen sources into the training text and takes the
held-out sample for perplexity from 1B Word heldout sections 12-13 (``1b_benchmark.test.tokens``).

Bad input: a missing mirror, file or archive, and a source that yields no sentence, raise
:class:`~elmo_repro.io.InputError` naming the path. A UTF-8 byte-order mark is dropped and
``\\r\\n`` endings are accepted in every source. A literal ``<S>`` or ``</S>`` token in 1B Word or
Brown text is an ``InputError`` naming the file (zip member) and line (see ``elmo_repro.data.text``);
the ABC tokenizer cannot produce one (``<`` and ``>`` become tokens of their own).
"""

from __future__ import annotations

import html
import re
import zipfile
import zlib
from pathlib import Path
from typing import Callable, Iterable, Iterator

from ..io import InputError, iter_lines
from .contamination import EvalIndex, remove_documents, sentence_key
from .text import check_no_boundary_tokens

LM1B_DIR = "lm1b_heldout_subset"
LM1B_DEV = f"{LM1B_DIR}/1b_benchmark.dev.tokens"
LM1B_TEST = f"{LM1B_DIR}/1b_benchmark.test.tokens"
# The official benchmark as extracted from its tarball (``python -m elmo_repro.fetch --only lm1b``)
LM1B_OFFICIAL = "1-billion-word-language-modeling-benchmark-r13output"
LM1B_TRAIN_DIR = f"{LM1B_OFFICIAL}/training-monolingual.tokenized.shuffled"
LM1B_HELDOUT_00000 = f"{LM1B_OFFICIAL}/heldout-monolingual.tokenized.shuffled/news.en.heldout-00000-of-00050"
BROWN_ZIP = "lm_supplement_nltk/corpora/brown.zip"
ABC_ZIP = "lm_supplement_nltk/corpora/abc.zip"

_BROWN_MEMBER = re.compile(r"brown/c[a-r]\d\d")
_ABC_MEMBER = re.compile(r"abc/[a-z]+\.txt")
# Brown marks opening/closing double quotes as `` and ''; 1B Word writes both as ".
_BROWN_QUOTES = {"``": '"', "''": '"'}

# ---------------------------------------------------------------------------------------------
# Tokenizer: a regex re-implementation of the parts of the Moses ``tokenizer.perl -l en`` (the
# WMT11 script the 1B Word Benchmark was tokenized with) that matter for English news text.
# Checked against the staged 1B Word text, which has ``don 't`` / ``won 't`` / ``it 's`` /
# ``O 'Neal`` (an apostrophe between letters starts the next token: never PTB's ``do n't``),
# ``$ 2,900`` and ``2.5`` (commas and periods inside numbers kept), ``U.S.`` / ``p.m.`` / ``Mr.``
# (periods of abbreviations kept), ``...`` as one token, hyphenated words unsplit, and ``&``
# unescaped (no ``&amp;``).
# ---------------------------------------------------------------------------------------------

# Moses' nonbreaking_prefix.en (abridged): a final "." after these is an abbreviation, kept on the
# word. Single capital letters (initials) are included below.
_NONBREAKING = frozenset("""
    Adj Adm Adv Asst Bart Bldg Brig Bros Capt Cmdr Col Comdr Con Corp Cpl DR Dr Drs Ens Gen Gov
    Hon Hr Hosp Insp Lt MM MR MRS MS Maj Messrs Mlle Mme Mr Mrs Ms Msgr Op Ord Pfc Ph Prof Pvt Rep
    Reps Res Rev Rt Sen Sens Sfc Sgt Sr St Supt Surg v vs i.e rev e.g Jan Feb Mar Apr Jun Jul Aug
    Sep Sept Oct Nov Dec Jr Inc Ltd Co etc
""".split()) | frozenset(chr(c) for c in range(ord("A"), ord("Z") + 1))
# Abbreviations only before a number ("No. 1", "pp. 12").
_NUMERIC_ONLY = frozenset({"No", "Nos", "Art", "Nr", "pp"})

_LETTER = r"[^\W\d_]"
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
# Everything except letters, digits, whitespace and . ' , - is a token of its own.
_SPECIAL = re.compile(r"([^\w\s.',\-]|_)")
_MULTIDOT = re.compile(r"\.{2,}")
_COMMA = re.compile(r",(?!\d)|(?<!\d),")  # a comma between two digits (5,300) stays
# Moses' English apostrophe rules, applied in this order.
_APOSTROPHE_RULES = [
    (re.compile(rf"(?<!{_LETTER})'(?!{_LETTER})"), " ' "),   # no letter either side: alone
    (re.compile(rf"(?<=[\W_])'(?={_LETTER})"), " ' "),        # opening quote before a word
    (re.compile(rf"(?<={_LETTER})'(?!{_LETTER})"), " ' "),    # closing quote / plural possessive
    (re.compile(rf"(?<={_LETTER})'(?={_LETTER})"), " '"),     # clitic: don't -> don 't, it's -> it 's
    (re.compile(r"(?<=\d)'(?=s)"), " '"),                     # 1990's -> 1990 's
]


def tokenize(text: str) -> list[str]:
    """Tokenize raw English text in the 1B Word Benchmark (Moses ``tokenizer.perl``) style.

    Punctuation other than word-internal ``. , ' -`` becomes separate tokens; an apostrophe
    between letters starts a clitic token (``"Don't stop."`` -> ``["Don", "'t", "stop", "."]``,
    as 1B Word writes ``don 't``; not PTB's ``Do n't``); a word-final period is split off unless
    the word is an abbreviation (``U.S.``, ``Mr.``, an initial, ``No.`` before a number) or the next
    word starts in lower case. Control characters count as whitespace.
    """
    text = " " + " ".join(_CONTROL.sub(" ", text).split()) + " "
    text = _SPECIAL.sub(r" \1 ", text)
    text = _MULTIDOT.sub(r" \g<0> ", text)
    text = _COMMA.sub(" , ", text)
    for pattern, replacement in _APOSTROPHE_RULES:
        text = pattern.sub(replacement, text)
    words = text.split()
    tokens: list[str] = []
    for i, word in enumerate(words):
        next_word = words[i + 1] if i + 1 < len(words) else ""
        if len(word) > 1 and word.endswith(".") and word.strip("."):
            pre = word[:-1]
            keep = (("." in pre and re.search(_LETTER, pre) is not None)
                    or pre in _NONBREAKING
                    or next_word[:1].islower()
                    or (pre in _NUMERIC_ONLY and next_word[:1].isdigit()))
            if not keep:
                tokens.extend((pre, "."))
                continue
        tokens.append(word)
    return tokens


# A sentence ends at . ! ? (plus closing quotes/brackets) followed by space and a capital letter,
# possibly after an opening quote or bracket.
_BOUNDARY = re.compile(r"""[.!?]["')\]]*(\s+)(?=["'(\[]?[A-Z])""")
_INITIALISM = re.compile(rf"(?:{_LETTER}+\.)+{_LETTER}+")  # U.S, p.m, e.g (final "." removed)


def _is_abbreviation(word: str) -> bool:
    """Whether ``word`` (ending in ".") is an abbreviation rather than a sentence's last word."""
    pre = word.lstrip("\"'([")[:-1]
    return pre in _NONBREAKING or _INITIALISM.fullmatch(pre) is not None


def split_sentences(line: str) -> list[str]:
    """Split one line of raw text into sentences (stripped, non-empty strings).

    A boundary is ``.``, ``!`` or ``?`` (with any closing ``"')]``) followed by whitespace and a
    capital letter (optionally behind an opening quote or bracket), except after an abbreviation
    (``Mr.``, ``Dr.``, an initial ``J.``, ``U.S.``). The ABC text writes ``Mr Howard`` without a
    period, so the exception rarely matters there.
    """
    sentences, start = [], 0
    for match in _BOUNDARY.finditer(line):
        head = line[start:match.start(1)]
        if head.rstrip("\"')]").endswith(".") and _is_abbreviation(head.rstrip("\"')]").split()[-1]):
            continue
        sentences.append(head.strip())
        start = match.end(1)
    sentences.append(line[start:].strip())
    return [sentence for sentence in sentences if sentence]


# ---------------------------------------------------------------------------------------------
# Readers: each source is read as documents (the unit that decontamination removes); the
# ``read_*`` functions flatten them into sentences.
# ---------------------------------------------------------------------------------------------

Document = tuple[str, list[list[str]]]   # (document id, sentences)


def _sentences(documents: Iterator[Document]) -> Iterator[list[str]]:
    for _, sentences in documents:
        yield from sentences


def lm1b_documents(path: str | Path) -> Iterator[Document]:
    """Sentences of a 1B Word ``*.tokens`` file (UTF-8, one space-separated sentence per line),
    each its own document ``<file name>:<line>`` (the benchmark shuffled its sentences).

    Blank lines are skipped; invalid UTF-8 or a literal ``<S>``/``</S>`` token raises
    :class:`InputError` with the line number.
    """
    for number, line in iter_lines(path):
        tokens = line.split()
        if tokens:
            check_no_boundary_tokens(path, tokens, number)
            yield f"{Path(path).name}:{number}", [tokens]


def read_lm1b(path: str | Path) -> Iterator[list[str]]:
    """Sentences of a 1B Word ``*.tokens`` file (see :func:`lm1b_documents`)."""
    return _sentences(lm1b_documents(path))


def lm1b_shard_documents(directory: str | Path) -> Iterator[Document]:
    """Sentences of the official 1B Word training shards ``news.en-000NN-of-00100`` (the paper's
    training data), in shard order, each its own document. Raises :class:`InputError` when the
    directory has none."""
    directory = Path(directory)
    shards = sorted(directory.glob("news.en-*-of-00100")) if directory.is_dir() else []
    if not shards:
        raise InputError(directory, "no 1B Word training shards news.en-*-of-00100 "
                                    "(fetch them with `python -m elmo_repro.fetch --only lm1b`)")
    for shard in shards:
        yield from lm1b_documents(shard)


def _zip_members(path: Path, pattern: re.Pattern[str], what: str) -> tuple[zipfile.ZipFile, list[str]]:
    if not path.is_file():
        raise InputError(path, "file not found")
    try:
        archive = zipfile.ZipFile(path)
    except zipfile.BadZipFile:
        raise InputError(path, "not a valid zip archive") from None
    members = sorted(name for name in archive.namelist() if pattern.fullmatch(name))
    if not members:
        archive.close()
        raise InputError(path, f"no {what} members in the archive")
    return archive, members


def read_member(archive: zipfile.ZipFile, member: str) -> bytes:
    """A member's bytes.

    Raises:
        InputError: naming ``<archive>/<member>`` when the member is corrupted (a bad CRC-32, a
            truncated or undecompressable stream), instead of zipfile's bare ``BadZipFile``.
    """
    try:
        return archive.read(member)
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError) as err:
        raise InputError(Path(str(archive.filename)) / member, f"corrupted zip member ({err})") from None


def _member_lines(archive: zipfile.ZipFile, member: str) -> Iterator[tuple[int, bytes]]:
    """``(line_number, raw_bytes)`` of one member, 1-based, without ``\\r\\n`` / ``\\n`` (and
    without a UTF-8 byte-order mark at the start)."""
    data = read_member(archive, member)
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    for number, raw in enumerate(data.split(b"\n"), start=1):
        yield number, raw.rstrip(b"\r")


def brown_documents(path: str | Path) -> Iterator[Document]:
    """Documents of the NLTK Brown corpus zip, one per file (``brown/ck01``: a 2,000-word text
    sample): sentences of words without their tags, quotes as ``"``.

    Raises :class:`InputError` (``<zip>/<member>:<line>``) for a non-UTF-8 byte, a token that is
    not ``word/tag`` or a literal ``<S>``/``</S>`` word.
    """
    path = Path(path)
    archive, members = _zip_members(path, _BROWN_MEMBER, "Brown text (brown/cXNN)")
    with archive:
        for member in members:
            where = path / member
            sentences = []
            for number, raw in _member_lines(archive, member):
                try:
                    line = raw.decode("utf-8")
                except UnicodeDecodeError as err:
                    raise InputError(where, f"not valid UTF-8/ASCII (byte {err.start} of the line)",
                                     line=number) from None
                tokens = []
                for item in line.split():
                    word, slash, tag = item.rpartition("/")
                    if not slash or not word or not tag:
                        raise InputError(where, f"token {item!r} is not word/tag", line=number)
                    tokens.append(_BROWN_QUOTES.get(word, word))
                if tokens:
                    check_no_boundary_tokens(where, tokens, number)
                    sentences.append(tokens)
            if sentences:
                yield member, sentences


def read_brown(path: str | Path) -> Iterator[list[str]]:
    """Sentences of the NLTK Brown corpus zip (see :func:`brown_documents`)."""
    return _sentences(brown_documents(path))


# Double-encoded characters in abc/rural.txt: UTF-8 bytes read as Latin-1 and re-encoded. The
# source characters were a cp1252 ellipsis (0x85) and a quote-like character before a ".
_MOJIBAKE = [("\u00c2\u0085", " ... "), ("\u00c2\"", "\"")]


def _decode_abc(raw: bytes) -> str:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        try:
            text = raw.decode("cp1252")
        except UnicodeDecodeError:
            text = raw.decode("latin-1")
    for bad, good in _MOJIBAKE:
        text = text.replace(bad, good)
    return html.unescape(text)


def abc_documents(path: str | Path) -> Iterator[Document]:
    """Documents of the NLTK ABC news zip (``abc/*.txt`` sorted), sentences split and tokenized.

    A document is a block of lines between blank lines (a story, or a section of one under its
    own subheading: the files mark nothing coarser), named ``<member>:<first line>``.
    Never fails on encoding (see the module docstring); raises :class:`InputError` only for a
    missing or invalid archive.
    """
    path = Path(path)
    archive, members = _zip_members(path, _ABC_MEMBER, "ABC text (abc/*.txt)")
    with archive:
        for member in members:
            sentences: list[list[str]] = []
            start = 0
            for number, raw in _member_lines(archive, member):
                if not raw.strip():
                    if sentences:
                        yield f"{member}:{start}", sentences
                    sentences = []
                    continue
                for sentence in split_sentences(_decode_abc(raw)):
                    tokens = tokenize(sentence)
                    if tokens:
                        if not sentences:
                            start = number
                        sentences.append(tokens)
            if sentences:
                yield f"{member}:{start}", sentences


def read_abc(path: str | Path) -> Iterator[list[str]]:
    """Sentences of the NLTK ABC news zip (see :func:`abc_documents`)."""
    return _sentences(abc_documents(path))


# Source name -> (path in the mirror, reader). The dict order is the fixed concatenation order.
SOURCES: dict[str, tuple[str, Callable[[Path], Iterator[Document]]]] = {
    "lm1b_dev": (LM1B_DEV, lm1b_documents),
    "brown": (BROWN_ZIP, brown_documents),
    "abc": (ABC_ZIP, abc_documents),
    "lm1b_train": (LM1B_TRAIN_DIR, lm1b_shard_documents),
}

# Held-out text for perplexity (``lm_data.heldout``) -> path in the mirror.
HELDOUT = {
    "lm1b_test_sections": LM1B_TEST,          # heldout sections 12-13, the staged subset
    "lm1b_heldout_00000": LM1B_HELDOUT_00000,  # the paper's test set
}


def read_source_documents(mirror: str | Path, name: str) -> Iterator[Document]:
    """Documents of one named source (a key of :data:`SOURCES`) under the data mirror."""
    if name not in SOURCES:
        raise ValueError(f"unknown LM source {name!r}; known: {', '.join(SOURCES)}")
    relative, reader = SOURCES[name]
    return reader(Path(mirror) / relative)


def read_source(mirror: str | Path, name: str) -> Iterator[list[str]]:
    """Sentences of one named source (a key of :data:`SOURCES`) under the data mirror."""
    return _sentences(read_source_documents(mirror, name))


def build_split(mirror: str | Path, train_sources: Iterable[str], heldout_max_tokens: int,
                heldout: str = "lm1b_test_sections", exclude: EvalIndex | None = None
                ) -> tuple[list[list[str]], list[list[str]], dict]:
    """The LM training text and the held-out perplexity sample. Deterministic.

    Args:
        mirror: the data mirror (laid out like ``shared/data``).
        train_sources: names from :data:`SOURCES`. They are concatenated in the fixed order of
            :data:`SOURCES` (``lm1b_dev``, ``brown``, ``abc``) whatever the order given, so the
            training text depends only on the set of sources.
        heldout_max_tokens: budget of the held-out sample in tokens, not counting ``</S>``; 0
            takes the whole held-out file.
        heldout: name from :data:`HELDOUT` of the held-out text.
        exclude: evaluation sentences (:mod:`elmo_repro.data.contamination`); every training
            document holding one of them at or above the index's length threshold is removed
            whole (its other sentences are the context of an evaluation sentence).

    Returns:
        ``(train, heldout, stats)``. ``train`` and ``heldout`` are lists of sentences (token
        lists). The held-out sample is the longest prefix, in file order, of the sentences of
        ``1b_benchmark.test.tokens`` that remain after skipping blank lines, every sentence equal to
        a training sentence (by :func:`~elmo_repro.data.contamination.sentence_key`, whatever
        its length) and repeats of an already chosen sentence, with
        at most ``heldout_max_tokens`` tokens (it stops at the first sentence that would exceed
        the budget). ``stats``: ``sources`` (per source ``sentences``/``tokens``),
        ``removed_documents`` (per source: removed document id -> the evaluation splits it
        overlaps), ``train_sentences``, ``train_tokens``, ``heldout_sentences``, ``heldout_tokens``,
        ``heldout_dropped_overlap`` (skipped as occurring in the training text) and
        ``heldout_dropped_duplicate``.

    Raises:
        InputError: the mirror directory or a file is missing, a training source yields no
            sentence (an empty shard), no held-out sentence remains, or a reader's error.
    """
    requested = check_split_args(mirror, train_sources, heldout_max_tokens, heldout)
    heldout_path = Path(mirror) / HELDOUT[heldout]

    train: list[list[str]] = []
    per_source: dict[str, dict[str, int]] = {}
    removed_documents: dict[str, dict[str, list[str]]] = {}
    for name in SOURCES:
        if name in requested:
            documents = list(read_source_documents(mirror, name))
            if not documents:
                raise InputError(Path(mirror) / SOURCES[name][0],
                                 f"training source {name!r} has no sentences (empty file or archive members)")
            if exclude is not None:
                documents, removed = remove_documents(documents, exclude)
                removed_documents[name] = {doc: sorted({o.split for o in overlaps})
                                           for doc, overlaps in removed.items()}
            sentences = [sentence for _, doc in documents for sentence in doc]
            per_source[name] = {"sentences": len(sentences), "tokens": sum(map(len, sentences))}
            train.extend(sentences)

    in_train = {key for key in map(sentence_key, train) if key}
    sample, heldout_stats = heldout_sample(read_lm1b(heldout_path), in_train, heldout_max_tokens, heldout_path)
    stats = {
        "sources": per_source,
        **({"removed_documents": removed_documents} if exclude is not None else {}),
        "train_sentences": len(train),
        "train_tokens": sum(s["tokens"] for s in per_source.values()),
        **heldout_stats,
    }
    return train, sample, stats


def check_split_args(mirror: str | Path, train_sources: Iterable[str], heldout_max_tokens: int, heldout: str
                     ) -> list[str]:
    """The requested training sources, after checking the split's arguments (:func:`build_split`).

    Raises:
        ValueError: unknown, repeated or no sources; a negative budget; an unknown held-out text.
        InputError: the mirror directory is missing.
    """
    requested = list(train_sources)
    unknown = sorted(set(requested) - set(SOURCES))
    if unknown or not requested or len(set(requested)) != len(requested):
        raise ValueError(f"train_sources must be distinct names from {list(SOURCES)}, got {requested}")
    if heldout_max_tokens < 0:
        raise ValueError(f"heldout_max_tokens must be >= 0 (0 = all), got {heldout_max_tokens}")
    if heldout not in HELDOUT:
        raise ValueError(f"unknown held-out text {heldout!r}; known: {', '.join(HELDOUT)}")
    if not Path(mirror).is_dir():
        raise InputError(mirror, "data mirror directory not found (set data.mirror in params.yaml)")
    return requested


def heldout_sample(candidates: Iterable[list[str]], in_train: set[str], heldout_max_tokens: int,
                   path: str | Path) -> tuple[list[list[str]], dict[str, int]]:
    """The held-out perplexity sample (:func:`build_split`): the longest prefix of ``candidates``,
    skipping every sentence whose :func:`~elmo_repro.data.contamination.sentence_key` is in
    ``in_train`` and repeats of a chosen one, with at most ``heldout_max_tokens`` tokens (0: all).

    Returns:
        The sentences and ``heldout_sentences``, ``heldout_tokens``, ``heldout_dropped_overlap``,
        ``heldout_dropped_duplicate``.

    Raises:
        InputError: naming ``path``, when no sentence is selected.
    """
    chosen: set[tuple[str, ...]] = set()
    sample: list[list[str]] = []
    n_tokens = dropped_overlap = dropped_duplicate = 0
    for tokens in candidates:
        key = tuple(tokens)
        if sentence_key(tokens) in in_train:
            dropped_overlap += 1
            continue
        if key in chosen:
            dropped_duplicate += 1
            continue
        if heldout_max_tokens and n_tokens + len(tokens) > heldout_max_tokens:
            break
        chosen.add(key)
        sample.append(tokens)
        n_tokens += len(tokens)
    if not sample:
        raise InputError(path, f"no held-out sentence selected ({dropped_overlap} occur in the training text; "
                               f"the first remaining one, if any, exceeds heldout_max_tokens={heldout_max_tokens})")
    return sample, {"heldout_sentences": len(sample), "heldout_tokens": n_tokens,
                    "heldout_dropped_overlap": dropped_overlap, "heldout_dropped_duplicate": dropped_duplicate}
