"""CoNLL-2003 English NER: reader for the original 4-column files and tag-scheme conversions.

The files (``eng.train``, ``eng.testa``, ``eng.testb``; Tjong Kim Sang & De Meulder 2003) hold one
token per line, ``word POS chunk NER``, a blank line between sentences and ``-DOCSTART-`` lines
between documents. Chunk and NER tags are IOB1: ``I-X`` everywhere except ``B-X`` on the first
token of an entity that directly follows another entity of the same type. So ``I-PER I-PER B-PER``
is two entities.

Three tag schemes appear downstream:

* IOB1 -- the file's scheme (gold tags are kept in it on disk).
* IOB2 -- every entity starts with ``B-``; the scheme the scorer (seqeval, default mode, which
  follows conlleval's chunk logic) is given.
* BIOUL -- ``B``egin / ``I``nside / ``L``ast / ``U``nit-length; what the CRF tagger predicts
  (as allennlp's ``crf_tagger`` with ``label_encoding: BIOUL``), because its transition
  constraints (:func:`elmo_repro.nn.crf.allowed_transitions`) make every decoded sequence a
  well-formed set of spans.
"""

from __future__ import annotations

import os
import re
from typing import Any

from ...data.examples import examples_path, read_split
from ...io import InputError, iter_lines

DOCSTART = "-DOCSTART-"
TAG_RE = re.compile(r"O|[IB]-[A-Z]+")
FIELDS = ("tokens", "pos", "chunk", "ner")


def read_conll2003(path: str | os.PathLike) -> list[dict[str, list[str]]]:
    """Read an original CoNLL-2003 file into sentences, in file order.

    Returns:
        One dict per sentence: ``{"tokens", "pos", "chunk", "ner"}``, each a list of strings of
        the sentence's length; ``ner`` (and ``chunk``) in IOB1 exactly as in the file.
        ``-DOCSTART-`` lines are skipped and never yield a sentence (nor do repeated blank lines),
        so a sentence's index is its position among the file's sentences whatever the blank lines.
        UTF-8; a byte-order mark is dropped and ``\\r\\n`` endings are accepted.

    Raises:
        InputError: naming the file and line, for a line without exactly 4 space-separated
            columns or whose chunk/NER tag does not match ``O|[IB]-[A-Z]+``, or invalid UTF-8;
            naming the file, when it is missing or has no sentence.
    """
    sentences: list[dict[str, list[str]]] = []
    current: dict[str, list[str]] = _empty()
    for number, line in iter_lines(path):
        columns = line.split()
        if not columns or columns[0] == DOCSTART:
            if current["tokens"]:
                sentences.append(current)
                current = _empty()
            continue
        if len(columns) != 4:
            raise InputError(path, f"expected 4 columns 'word POS chunk NER', got {len(columns)}", line=number)
        for name, tag in (("chunk", columns[2]), ("NER", columns[3])):
            if not TAG_RE.fullmatch(tag):
                raise InputError(path, f"{name} tag {tag!r} is not O, I-TYPE or B-TYPE", line=number)
        for field, value in zip(FIELDS, columns):
            current[field].append(value)
    if current["tokens"]:
        sentences.append(current)
    if not sentences:
        raise InputError(path, "no sentences (the file is empty or has only blank/-DOCSTART- lines)")
    return sentences


def _empty() -> dict[str, list[str]]:
    return {field: [] for field in FIELDS}


def read_prepared(data_dir: str | os.PathLike, split: str) -> list[dict[str, Any]]:
    """Read a split written by stage ``prepare_conll2003`` (:mod:`.prepare`) (``<split>.jsonl`` with its sentences'
    ids into ``<split>.texts.jsonl``, :mod:`elmo_repro.data.examples`), tokens filled in.

    The line index is the sentence index used everywhere downstream, so a blank line is an error
    rather than skipped (skipping it would shift every later index).

    Raises:
        InputError: naming the file and line, for what
            :func:`~elmo_repro.data.examples.read_split` checks (a blank line, malformed JSON, a
            non-object, a text id no text has, ``ner`` not a non-empty list of non-empty strings),
            and for ``tokens`` and ``ner`` of different lengths; naming the file when it is missing
            or empty.
    """
    sentences = read_split(data_dir, split, ("tokens",), list_fields=("ner",))
    for number, sentence in enumerate(sentences, start=1):
        if len(sentence["ner"]) != len(sentence["tokens"]):
            raise InputError(examples_path(data_dir, split), f"'tokens' and 'ner' must be of equal length, got "
                             f"{len(sentence['tokens'])} and {len(sentence['ner'])}", line=number)
    return sentences


def split_stats(sentences: list[dict[str, list[str]]]) -> dict[str, int]:
    """Sentence, token and entity counts (entities counted per type too, as in the shared-task paper)."""
    stats = {"sentences": len(sentences), "tokens": sum(len(s["tokens"]) for s in sentences), "entities": 0}
    for sentence in sentences:
        for tag in to_iob2(sentence["ner"]):
            if tag.startswith("B-"):
                stats["entities"] += 1
                key = f"entities_{tag[2:]}"
                stats[key] = stats.get(key, 0) + 1
    return stats


def _split(tag: str) -> tuple[str, str]:
    """``"B-PER"`` -> ``("B", "PER")``, ``"O"`` -> ``("O", "")``."""
    if tag == "O":
        return "O", ""
    prefix, sep, kind = tag.partition("-")
    if not sep or not kind or len(prefix) != 1:
        raise ValueError(f"malformed tag {tag!r}")
    return prefix, kind


def to_iob2(iob1: list[str]) -> list[str]:
    """IOB1 -> IOB2: an ``I-X`` that starts an entity (after ``O``, another type, or at the start) becomes ``B-X``.

    >>> to_iob2(["I-PER", "I-PER", "B-PER", "O", "I-LOC"])
    ['B-PER', 'I-PER', 'B-PER', 'O', 'B-LOC']
    """
    out = []
    prev_kind = ""
    for tag in iob1:
        prefix, kind = _split(tag)
        if prefix not in "OIB":
            raise ValueError(f"not an IOB1 tag: {tag!r}")
        if prefix == "I" and kind != prev_kind:
            tag = f"B-{kind}"
        out.append(tag)
        prev_kind = kind
    return out


def iob2_to_bioul(iob2: list[str]) -> list[str]:
    """IOB2 -> BIOUL: single-token entities become ``U-``, an entity's last token ``L-``.

    Expects valid IOB2 (every entity opens with ``B-``); raises ``ValueError`` on an ``I-`` that
    does not continue an entity of its type.
    """
    out = []
    for i, tag in enumerate(iob2):
        prefix, kind = _split(tag)
        if prefix not in "OIB":
            raise ValueError(f"not an IOB2 tag: {tag!r}")
        if prefix == "I" and (i == 0 or _split(iob2[i - 1])[1] != kind):
            raise ValueError(f"invalid IOB2 at position {i}: {tag!r} after {iob2[i - 1] if i else 'start'}")
        continues = i + 1 < len(iob2) and iob2[i + 1] == f"I-{kind}"
        if prefix == "B":
            tag = f"B-{kind}" if continues else f"U-{kind}"
        elif prefix == "I":
            tag = f"I-{kind}" if continues else f"L-{kind}"
        out.append(tag)
    return out


def iob1_to_bioul(iob1: list[str]) -> list[str]:
    """IOB1 (the file's tags) -> BIOUL (the tagger's training targets).

    >>> iob1_to_bioul(["I-PER", "I-PER", "B-PER", "O", "I-LOC"])
    ['B-PER', 'L-PER', 'U-PER', 'O', 'U-LOC']
    """
    return iob2_to_bioul(to_iob2(iob1))


def bioul_to_iob2(bioul: list[str]) -> list[str]:
    """BIOUL -> IOB2 (``U-`` -> ``B-``, ``L-`` -> ``I-``), for scoring predictions.

    Tag by tag, so a malformed prediction (possible only from unconstrained decoding) is passed
    on as the equivalent malformed IOB2 and the scorer's conlleval chunk rules decide its spans.
    """
    out = []
    for tag in bioul:
        prefix, kind = _split(tag)
        if prefix not in "OBILU":
            raise ValueError(f"not a BIOUL tag: {tag!r}")
        out.append({"U": f"B-{kind}", "L": f"I-{kind}"}.get(prefix, tag))
    return out
