"""Coreference in the CoNLL-2012 column format (OntoNotes, LitBank): documents, sentences, clusters.

A file holds documents, each between ``#begin document (<id>); part <n>`` and ``#end document``;
one token per line, tab- (or space-) separated columns ``doc id, part, token index, word, ...``
with the coreference column last; a blank line ends a sentence. A cell of the coreference column
is read as the reference scorer (v8.01, ``CorScorer.pm``'s ``GetCoreference``) reads it: ``-``,
``_`` or empty for none; otherwise every ``(N)`` is a one-token mention of cluster N, then every
``(N`` opens one, then every ``N)`` closes the latest open mention of N, whatever separates them
(``(1|(3``, ``(1(3`` and ``1)3)`` alike); a double antecedent ``(N+M)`` is dropped, as there.
Mentions of one cluster may nest, so each cluster id keeps its own stack of open mentions. Lines
with fewer than four columns (the scorer's own test files have ``doc id`` and the coreference
column only) have no word: their tokens are empty strings, enough to score, not to train on.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from ...io import InputError, iter_lines

_DOUBLE = re.compile(r"\((\d+\+\d)\)")         # a double antecedent: dropped, as the scorer does
_SINGLE = re.compile(r"\((\d+)\)")
_OPEN = re.compile(r"\((\d+)")
_CLOSE = re.compile(r"(\d+)\)")
_SEPARATORS = set("|-_ \t")               # and "-", "_" or "" for a cell without mentions
_BEGIN = re.compile(r"^#begin document \(?([^);]*)\)?;?(?: part (\d+))?")


def _take(pattern: re.Pattern, text: str) -> tuple[list[str], str]:
    """Remove the first match of ``pattern`` until none is left (the scorer's ``while s///``, so a
    match formed by a removal counts too): the matched cluster ids in order, and what is left."""
    ids = []
    while (match := pattern.search(text)) is not None:
        ids.append(match.group(1))
        text = text[:match.start()] + text[match.end():]
    return ids, text


def parse_cell(cell: str) -> tuple[list[str], list[str], list[str]] | tuple[None, None, None]:
    """A coreference cell's one-token mentions, openings and closings (cluster ids), taken in the
    scorer's order (module doc); ``(None, None, None)`` when something other than separators is
    left over (the scorer would skip it silently)."""
    _, rest = _take(_DOUBLE, cell)
    singles, rest = _take(_SINGLE, rest)
    opens, rest = _take(_OPEN, rest)
    closes, rest = _take(_CLOSE, rest)
    if set(rest) - _SEPARATORS:
        return None, None, None
    return singles, opens, closes


def read_coref_conll(path: str | os.PathLike) -> list[dict]:
    """The documents of a CoNLL-2012-format file, in file order.

    Returns:
        Per document ``{"doc_key": "<id>_<part>", "sentences": [[word]], "clusters": [[(start,
        end)]]}``: token indices count over the whole document, spans are inclusive, mentions in
        order of their start (then end), clusters in order of their first mention. Singletons
        are kept (scoring without them is the scorer's choice).

    Raises:
        InputError: naming the file and line, for a token or a ``#end`` outside a document, a
            ``#begin`` inside one, a line of one column, a coreference cell holding anything but
            ``(N``, ``N)``, ``(N)``, ``(N+M)`` and separators, a ``N)`` with no open mention of N,
            a mention still open at ``#end document`` (naming the line it opened on), or a
            document never ended.
    """
    path = Path(path)
    documents: list[dict] = []
    doc: dict | None = None
    sentence: list[str] = []
    token = 0
    opened: dict[str, list[tuple[int, int]]] = {}           # cluster id -> stack of (start, line)
    mentions: dict[str, list[tuple[int, int]]] = {}
    begin_line = 0
    for number, line in iter_lines(path):
        if line.startswith("#begin document"):
            if doc is not None:
                raise InputError(path, f"#begin document inside the document begun on line {begin_line}", line=number)
            match = _BEGIN.match(line)
            doc = {"doc_key": f"{match.group(1)}_{match.group(2) or 0}", "sentences": []}
            sentence, token, opened, mentions, begin_line = [], 0, {}, {}, number
            continue
        if line.startswith("#end document"):
            if doc is None:
                raise InputError(path, "#end document without a #begin document", line=number)
            for cluster, stack in opened.items():
                if stack:
                    raise InputError(path, f"the mention of cluster {cluster} opened on line {stack[-1][1]} "
                                           "never closes", line=number)
            if sentence:
                doc["sentences"].append(sentence)
            doc["clusters"] = sorted((sorted(spans) for spans in mentions.values()), key=lambda c: c[0])
            documents.append(doc)
            doc, sentence = None, []
            continue
        if not line.strip():
            if doc is not None and sentence:
                doc["sentences"].append(sentence)
                sentence = []
            continue
        if doc is None:
            raise InputError(path, "a token line outside any document (no #begin document before it)", line=number)
        columns = line.split("\t") if "\t" in line else line.split()
        if len(columns) < 2:
            raise InputError(path, "1 column, expected the coreference column after the doc id (or doc id, "
                                   "part, index, word, ..., coreference)", line=number)
        sentence.append(columns[3] if len(columns) >= 4 else "")
        coref = columns[-1].strip() if len(columns) != 4 else ""
        singles, opens, closes = parse_cell(coref)
        if singles is None:
            raise InputError(path, f"coreference cell {coref!r} holds something other than '(N', 'N)', '(N)' "
                                   "and separators", line=number)
        for cluster in singles:
            mentions.setdefault(cluster, []).append((token, token))
        for cluster in opens:
            opened.setdefault(cluster, []).append((token, number))
        for cluster in closes:
            if not opened.get(cluster):
                raise InputError(path, f"'{cluster})' closes no open mention of cluster {cluster}", line=number)
            start, _ = opened[cluster].pop()
            mentions.setdefault(cluster, []).append((start, token))
        token += 1
    if doc is not None:
        raise InputError(path, f"the document begun on line {begin_line} has no #end document")
    return documents


def evenly_spaced(n: int, k: int) -> list[int]:
    """``k`` of the indices ``0..n-1`` spread evenly: the middle of each of ``k`` equal stretches.

    Raises:
        ValueError: ``k`` outside 0..n.
    """
    if not 0 <= k <= n:
        raise ValueError(f"cannot pick {k} of {n} documents")
    return [int((i + 0.5) * n / k) for i in range(k)]


def split_documents(documents: list[dict], dev: int, test: int) -> dict[str, list[dict]]:
    """A fixed split by document for a corpus without one (LitBank): documents sorted by
    ``doc_key``, the ``test`` evenly spaced over them, then the ``dev`` evenly spaced over the
    rest, the others training, each part in ``doc_key`` order.

    Raises:
        ValueError: ``dev + test`` leaves no training document.
    """
    ordered = sorted(documents, key=lambda d: d["doc_key"])
    if dev + test >= len(ordered):
        raise ValueError(f"{dev} dev and {test} test documents leave none of {len(ordered)} for training")
    test_index = set(evenly_spaced(len(ordered), test))
    rest = [d for i, d in enumerate(ordered) if i not in test_index]
    dev_index = set(evenly_spaced(len(rest), dev))
    return {"train": [d for i, d in enumerate(rest) if i not in dev_index],
            "dev": [d for i, d in enumerate(rest) if i in dev_index],
            "test": [d for i, d in enumerate(ordered) if i in test_index]}
