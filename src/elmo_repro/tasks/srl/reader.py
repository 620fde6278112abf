"""CoNLL-2005 semantic role labelling data (Carreras & Màrquez 2005): words and props files.

The release keeps each annotation in its own column file, aligned line by line, one token per line
and a blank line (in ``test.wsj`` a line of spaces) after every sentence:

* ``words``: the token;
* ``props``: column 1 the target verb's lemma or ``-``, then one column per target verb, in order
  of the verbs in the sentence, holding that verb's arguments in Start-End notation: ``(A0*``
  opens an A0 argument at this token, ``*)`` closes the open one, ``(V*)`` is a one-token phrase,
  ``*`` is inside or outside.

A continuation phrase ``C-X`` continues the argument X before it (a discontinuous argument); a
reference ``R-X`` is a label of its own; ``V`` marks the verb (and ``C-V`` the particle of a
phrasal verb). How the official scorer (``srl-eval.pl``) reads these is in
:mod:`elmo_repro.tasks.srl.metric`.

Here a sentence becomes ``{"tokens": [...], "propositions": [...]}`` with one
:class:`Proposition` per target verb: its token index, its lemma and its arguments as BIO tags,
one per token (``B-A0 I-A0 O B-V B-C-A1 ...``; continuation and reference labels kept as tags of
their own, as He et al. (2017) tag them).
"""

from __future__ import annotations

import gzip
import hashlib
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator, Sequence

from ...io import InputError, atomic_open

Span = tuple[str, int, int]          # (label, first token, last token), inclusive
_OPEN = re.compile(r"\(([^*()]+)")
TRAIN_SECTIONS = tuple(f"{n:02d}" for n in range(2, 22))
"""The WSJ sections of the CoNLL-2005 training set (02-21)."""


@dataclass(frozen=True)
class Proposition:
    """One target verb of a sentence and its arguments.

    ``tags`` are BIO tags over the sentence's tokens (the verb itself tagged ``B-V``).
    """

    predicate: int
    lemma: str
    tags: tuple[str, ...]


def _lines(path: Path) -> Iterator[tuple[int, str]]:
    """``(line number, line)`` of a UTF-8 file, gzip-compressed when its name ends in ``.gz``.

    Raises:
        InputError: a missing file, a bad gzip stream or invalid UTF-8, naming the file (and line).
    """
    if not path.is_file():
        raise InputError(path, "file not found")
    try:
        data = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
    except (OSError, EOFError) as err:
        raise InputError(path, f"not a readable gzip file ({err})") from None
    for number, raw in enumerate(data.split(b"\n"), start=1):
        try:
            yield number, raw.decode("utf-8").rstrip("\r")
        except UnicodeDecodeError as err:
            raise InputError(path, f"not valid UTF-8 (byte {err.start} of the line)", line=number) from None


def _blocks(path: Path) -> Iterator[tuple[int, list[list[str]]]]:
    """Sentences of a column file: ``(first line number, rows of whitespace-split columns)``;
    a line of spaces ends a sentence as a blank one does."""
    rows: list[list[str]] = []
    first = 0
    for number, line in _lines(path):
        columns = line.split()
        if columns:
            first = first or number
            rows.append(columns)
        elif rows:
            yield first, rows
            rows, first = [], 0
    if rows:
        yield first, rows


def parse_start_end(column: Sequence[str], path: str | os.PathLike = "<props>", first_line: int = 1) -> list[Span]:
    """The phrases of one Start-End column, in order of their first token.

    Args:
        column: one tag per token, e.g. ``["(A0*", "*)", "(V*)", "*"]``.
        path, first_line: where the column comes from (for errors): token i is on line
            ``first_line + i``.

    Returns:
        ``(label, start, end)`` per phrase, token indices inclusive.

    Raises:
        InputError: naming the file and line, for a tag that is not Start-End notation, a ``)``
            with no open phrase, a phrase inside another (a props column never nests), or a
            phrase still open at the end of the sentence.
    """
    spans: list[Span] = []
    open_label: str | None = None
    start = 0
    for i, tag in enumerate(column):
        line = first_line + i
        star = tag.find("*")
        if star < 0 or tag.count("*") != 1:
            raise InputError(path, f"{tag!r} is not a Start-End tag (one '*', '(' before, ')' after)", line=line)
        opening, closing = tag[:star], tag[star + 1:]
        labels = _OPEN.findall(opening)
        if "".join(f"({label}" for label in labels) != opening:
            raise InputError(path, f"{tag!r}: cannot read the opening brackets", line=line)
        if closing.strip(")") or (closing and "(" in closing):
            raise InputError(path, f"{tag!r}: only ')' may follow the '*'", line=line)
        for label in labels:
            if open_label is not None:
                raise InputError(path, f"{tag!r}: phrase ({label} opens inside the open ({open_label}", line=line)
            open_label, start = label, i
        for _ in closing:
            if open_label is None:
                raise InputError(path, f"{tag!r}: ')' closes no open phrase", line=line)
            spans.append((open_label, start, i))
            open_label = None
    if open_label is not None:
        raise InputError(path, f"phrase ({open_label} opened on line {first_line + start} never closes",
                         line=first_line + len(column) - 1)
    return spans


def spans_to_bio(spans: Iterable[Span], length: int) -> list[str]:
    """BIO tags of ``length`` tokens for non-overlapping phrases."""
    tags = ["O"] * length
    for label, start, end in spans:
        tags[start] = f"B-{label}"
        for i in range(start + 1, end + 1):
            tags[i] = f"I-{label}"
    return tags


def bio_to_spans(tags: Sequence[str]) -> list[Span]:
    """Phrases of a BIO sequence. An ``I-X`` that does not continue an X phrase starts one (the
    constrained decoder never emits it; a free one may), so every non-``O`` token is in a phrase.

    Raises:
        ValueError: a tag that is neither ``O`` nor ``B-``/``I-`` prefixed.
    """
    spans: list[Span] = []
    label: str | None = None
    start = 0
    for i, tag in enumerate(tags):
        if tag == "O":
            if label is not None:
                spans.append((label, start, i - 1))
            label = None
            continue
        prefix, _, kind = tag.partition("-")
        if prefix not in ("B", "I") or not kind:
            raise ValueError(f"not a BIO tag: {tag!r}")
        if prefix == "B" or kind != label:
            if label is not None:
                spans.append((label, start, i - 1))
            label, start = kind, i
    if label is not None:
        spans.append((label, start, len(tags) - 1))
    return spans


def read_props(path: str | os.PathLike, verb_check: bool = True) -> list[tuple[int, list[Proposition]]]:
    """The propositions of a props file (plain or ``.gz``), sentence by sentence, in file order.

    Returns:
        ``(sentence length, propositions)`` per sentence; propositions in order of their verbs
        (none for a sentence without a target verb).

    ``verb_check=False`` accepts a column whose ``V`` phrase misses its target verb (a model's
    prediction may; the scorer excludes ``V`` anyway).

    Raises:
        InputError: naming the file and line, for a line whose column count is not 1 + the
            sentence's number of target verbs, a Start-End column that does not parse
            (:func:`parse_start_end`), or (with ``verb_check``) a target verb outside its
            column's ``V`` phrase.
    """
    path = Path(path)
    sentences = []
    for first, rows in _blocks(path):
        targets = [i for i, row in enumerate(rows) if row[0] != "-"]
        for i, row in enumerate(rows):
            if len(row) != 1 + len(targets):
                raise InputError(path, f"{len(row)} columns, expected 1 + {len(targets)} (one per target verb "
                                       "of the sentence)", line=first + i)
        propositions = []
        for k, predicate in enumerate(targets):
            spans = parse_start_end([row[1 + k] for row in rows], path, first)
            if verb_check and not any(label == "V" and s <= predicate <= e for label, s, e in spans):
                raise InputError(path, f"column {k + 2}: the target verb {rows[predicate][0]!r} is not inside "
                                       "a (V*) phrase", line=first + predicate)
            propositions.append(Proposition(predicate, rows[predicate][0], tuple(spans_to_bio(spans, len(rows)))))
        sentences.append((len(rows), propositions))
    return sentences


def write_props(path: str | os.PathLike, sentences: Iterable[tuple[int, Sequence[Proposition]]]) -> None:
    """Write propositions as a props file ``srl-eval.pl`` reads (the inverse of :func:`read_props`;
    tags must be well-formed BIO). Written to a temporary file and renamed into place."""
    lines = []
    for length, propositions in sentences:
        verbs = {p.predicate: p.lemma for p in propositions}
        columns = [_start_end(bio_to_spans(p.tags), length) for p in propositions]
        for i in range(length):
            lines.append(" ".join([verbs.get(i, "-"), *(column[i] for column in columns)]))
        lines.append("")
    with atomic_open(path) as handle:
        handle.write("\n".join(lines) + "\n")


def _start_end(spans: Iterable[Span], length: int) -> list[str]:
    tags = ["*"] * length
    for label, start, end in spans:
        tags[start] = f"({label}" + tags[start]
        tags[end] = tags[end] + ")"
    return tags


def read_conll2005(words: str | os.PathLike, props: str | os.PathLike) -> list[dict]:
    """Sentences of one words file and its props file (plain or ``.gz``), in file order.

    Returns:
        ``{"tokens": [str], "propositions": [Proposition]}`` per sentence (:func:`read_props`).

    Raises:
        InputError: as :func:`read_props`; and naming the props file (and line) for a sentence
            whose length differs from the words file's, or files with different sentence counts.
    """
    words, props = Path(words), Path(props)
    word_blocks, prop_sentences = list(_blocks(words)), read_props(props)
    if len(word_blocks) != len(prop_sentences):
        raise InputError(props, f"{len(prop_sentences)} sentences, but {words} has {len(word_blocks)}")
    sentences = []
    for (first, word_rows), (length, propositions) in zip(word_blocks, prop_sentences):
        if length != len(word_rows):
            raise InputError(props, f"a sentence of {length} lines where {words} has {len(word_rows)} "
                                    f"(its line {first})")
        sentences.append({"tokens": [row[0] for row in word_rows], "propositions": propositions})
    return sentences


def split_files(root: str | os.PathLike, split: str) -> list[tuple[Path, Path]]:
    """``(words, props)`` files of a split of the release under ``root`` (``srl_conll2005/``):
    ``train`` (one pair per WSJ section 02-21, in order), ``dev`` (WSJ 24), ``test_wsj`` (WSJ 23),
    ``test_brown``.

    Raises:
        ValueError: an unknown split name.
    """
    root = Path(root)
    if split == "train":
        return [(root / f"train/words/train.{s}.words.gz", root / f"train/props/train.{s}.props.gz")
                for s in TRAIN_SECTIONS]
    named = {"dev": ("devel", "devel.24"), "test_wsj": ("test.wsj", "test.wsj"),
             "test_brown": ("test.brown", "test.brown")}
    if split not in named:
        raise ValueError(f"unknown CoNLL-2005 split {split!r}: expected train, {', '.join(named)}")
    folder, stem = named[split]
    return [(root / f"{folder}/words/{stem}.words.gz", root / f"{folder}/props/{stem}.props.gz")]


def sentence_rank(section: str, index: int) -> str:
    """The SHA-256 of ``"<section>:<index>"`` (index within its section's file, from 0): the order
    in which :func:`cap_sentences` takes a section's sentences."""
    return hashlib.sha256(f"{section}:{index}".encode()).hexdigest()


def cap_sentences(by_section: dict[str, list[dict]], cap: int | None) -> list[dict]:
    """The training sentences kept under ``cap`` (None: all), in section and file order, each
    with its ``section`` and ``index`` added.

    The rule: each section's sentences are ranked by :func:`sentence_rank`, and sections give one
    sentence each in turn (section order, rank order within) until ``cap`` are taken. So a cap is
    spread evenly over the sections (a section runs out only when it is exhausted), the same on
    every machine, and nested: the sentences kept under a cap are among those kept under any
    larger one (Figure 1's subsamples).
    """
    tagged = {section: [dict(sentence, section=section, index=i) for i, sentence in enumerate(sentences)]
              for section, sentences in by_section.items()}
    total = sum(len(v) for v in tagged.values())
    if cap is None or cap >= total:
        return [s for v in tagged.values() for s in v]
    ranked = {section: sorted(v, key=lambda s: sentence_rank(s["section"], s["index"])) for section, v in tagged.items()}
    order = [v[turn] for turn in range(max(len(v) for v in ranked.values())) for v in ranked.values()
             if turn < len(v)]
    kept = {(s["section"], s["index"]) for s in order[:cap]}
    return [s for v in tagged.values() for s in v if (s["section"], s["index"]) in kept]


def srl_examples(sentences: Iterable[dict]) -> list[dict]:
    """One example per proposition, in sentence then verb order (He et al.'s instances):
    ``{"tokens", "predicate", "lemma", "tags", "sentence"}``, ``sentence`` the index of its
    sentence among ``sentences``. A sentence's tokens are shared by its examples, so the texts of
    :func:`elmo_repro.data.examples.write_split` hold each sentence once and the biLM embeds it
    once for all its predicates."""
    return [{"tokens": s["tokens"], "predicate": p.predicate, "lemma": p.lemma, "tags": list(p.tags), "sentence": n}
            for n, s in enumerate(sentences) for p in s["propositions"]]
