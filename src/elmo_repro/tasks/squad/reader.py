"""SQuAD v1.1 (Rajpurkar et al. 2016): reading the official JSON, tokenising with character
offsets, answer spans, and the split by article.

* Tokens carry their (start, end) character offsets in the paragraph, so a predicted token span
  maps back to the exact context substring (:func:`span_text`), as the official scorer compares
  strings.
* The tokenizer (:func:`tokenize`) is a PTB-like regular expression: clitics (``n't``, ``'s``, …)
  split off, numbers keep their inner ``.`` and ``,``, letter abbreviations such as ``U.S.`` stay
  whole, and every other non-space character that is not a letter or digit is a token of its own,
  hyphens, slashes and dashes included (document-qa splits on these too: answers such as ``1854``
  sit inside ``1854–55``).
* An answer whose ``answer_start`` does not point at its text is an error naming the question id
  (:class:`~elmo_repro.io.InputError`), never a shifted span.
* Training target: the **first** reference answer. In the dev file the references are three
  crowd-workers' answers to the same question and mostly overlap; the first is the one the
  question's author marked (in the training file it is the only one). Taking every distinct span
  would weight questions by how much their annotators disagreed. Evaluation uses them all.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Sequence

from ...io import InputError, atomic_open, iter_lines

TOKEN = re.compile(
    r"(?:[A-Za-z]\.){2,}"                    # U.S., e.g.
    r"|\d+(?:[.,]\d+)+"                      # 1,000 and 3.14
    r"|[^\W_]+?(?=n['’]t\b)"                 # do|n't
    r"|n['’]t\b"
    r"|['’](?:s|re|ve|ll|d|m)\b"             # the clitics PTB splits off
    r"|[^\W_]+"                              # words and numbers
    r"|[^\w\s]|_",                           # any other character on its own
    re.IGNORECASE)
SENTENCE_END = {".", "!", "?"}


def tokenize(text: str) -> tuple[list[str], list[tuple[int, int]]]:
    """Tokens of ``text`` and their (start, end) character offsets (``text[start:end]`` is the token).

    Every character that is not white space belongs to exactly one token.
    """
    tokens, offsets = [], []
    for match in TOKEN.finditer(text):
        tokens.append(match.group())
        offsets.append(match.span())
    return tokens, offsets


def answer_span(offsets: Sequence[tuple[int, int]], start: int, end: int) -> tuple[int, int]:
    """The inclusive token span (first, last) covering characters ``[start, end)``: the first token
    ending after ``start`` and the last token starting before ``end``.

    Raises:
        ValueError: no token overlaps the characters (an answer of white space only, or out of range).
    """
    first = next((i for i, (_, e) in enumerate(offsets) if e > start), None)
    last = next((i for i in range(len(offsets) - 1, -1, -1) if offsets[i][0] < end), None)
    if first is None or last is None or last < first:
        raise ValueError(f"no token overlaps characters {start}..{end}")
    return first, last


def span_text(context: str, offsets: Sequence[tuple[int, int]], first: int, last: int) -> str:
    """The context substring of the inclusive token span: from the first token's start to the last
    token's end (spaces and punctuation between them as in the paragraph)."""
    return context[offsets[first][0]:offsets[last][1]]


def sentence_bounds(tokens: Sequence[str]) -> list[tuple[int, int]]:
    """Inclusive (first, last) token indices of the sentences of a tokenised paragraph: a sentence
    ends after ``.``, ``!`` or ``?`` (or at the paragraph's end)."""
    bounds, start = [], 0
    for i, token in enumerate(tokens):
        if token in SENTENCE_END:
            bounds.append((start, i))
            start = i + 1
    if start < len(tokens):
        bounds.append((start, len(tokens) - 1))
    return bounds


@dataclass
class Question:
    """One question of a paragraph: its id, text, reference answers (texts and character starts)."""

    id: str
    question: str
    answers: list[str]
    answer_starts: list[int]


@dataclass
class Paragraph:
    context: str
    questions: list[Question] = field(default_factory=list)


@dataclass
class Article:
    title: str
    paragraphs: list[Paragraph] = field(default_factory=list)


def _expect(value: Any, kind: type | tuple[type, ...], path: Path, key: str) -> Any:
    if not isinstance(value, kind) or isinstance(value, bool):
        names = " or ".join(k.__name__ for k in (kind if isinstance(kind, tuple) else (kind,)))
        raise InputError(path, f"{key}: expected {names}, got {type(value).__name__}")
    return value


def read_articles(path: str | os.PathLike) -> list[Article]:
    """The articles of an official SQuAD v1.1 file, in file order, checked.

    Raises:
        InputError: naming the file and the key path (e.g. ``data[3].paragraphs[0].qas[2].answers[0]``)
            of a missing or mistyped field, a version other than 1.1, malformed JSON, or an
            ``answer_start`` that does not point at its answer's text (naming the question id).
    """
    path = Path(path)
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(path, "no such file (a SQuAD v1.1 JSON file of the data mirror)") from None
    except json.JSONDecodeError as err:
        raise InputError(path, f"malformed JSON ({err.msg})", line=err.lineno) from None
    _expect(raw, dict, path, "(top level)")
    if raw.get("version") != "1.1":
        raise InputError(path, f"version: expected '1.1', got {raw.get('version')!r}")
    articles = []
    for a, article in enumerate(_expect(raw.get("data"), list, path, "data")):
        key = f"data[{a}]"
        _expect(article, dict, path, key)
        parsed = Article(_expect(article.get("title"), str, path, f"{key}.title"))
        for p, paragraph in enumerate(_expect(article.get("paragraphs"), list, path, f"{key}.paragraphs")):
            pkey = f"{key}.paragraphs[{p}]"
            _expect(paragraph, dict, path, pkey)
            context = _expect(paragraph.get("context"), str, path, f"{pkey}.context")
            parsed_paragraph = Paragraph(context)
            for q, qa in enumerate(_expect(paragraph.get("qas"), list, path, f"{pkey}.qas")):
                qkey = f"{pkey}.qas[{q}]"
                _expect(qa, dict, path, qkey)
                qid = _expect(qa.get("id"), str, path, f"{qkey}.id")
                texts, starts = [], []
                answers = _expect(qa.get("answers"), list, path, f"{qkey}.answers")
                if not answers:
                    raise InputError(path, f"{qkey}.answers: question {qid} has no answer (v1.1 has one or more)")
                for n, answer in enumerate(answers):
                    akey = f"{qkey}.answers[{n}]"
                    _expect(answer, dict, path, akey)
                    text = _expect(answer.get("text"), str, path, f"{akey}.text")
                    start = _expect(answer.get("answer_start"), int, path, f"{akey}.answer_start")
                    if not text.strip() or context[start:start + len(text)] != text:
                        found = context[start:start + len(text)] if 0 <= start < len(context) else ""
                        raise InputError(path, f"{akey}: question {qid}: answer_start {start} does not point at "
                                               f"its text {text!r} (the context there reads {found!r})")
                    texts.append(text)
                    starts.append(start)
                question = _expect(qa.get("question"), str, path, f"{qkey}.question")
                parsed_paragraph.questions.append(Question(qid, question, texts, starts))
            parsed.paragraphs.append(parsed_paragraph)
        articles.append(parsed)
    return articles


def split_articles(articles: Sequence[Article], parts: dict[str, Sequence[str]],
                   rest: str) -> dict[str, list[Article]]:
    """Articles by part: each part of ``parts`` gets the articles it names (titles, in file order);
    part ``rest`` gets every article no part names.

    Raises:
        ValueError: a title named by two parts, or a title the file does not have.
    """
    owner: dict[str, str] = {}
    for part, titles in parts.items():
        for title in titles:
            if title in owner:
                raise ValueError(f"article {title!r} is named by parts {owner[title]!r} and {part!r}")
            owner[title] = part
    known = {a.title for a in articles}
    missing = sorted(set(owner) - known)
    if missing:
        raise ValueError(f"no such article: {', '.join(missing)}")
    out: dict[str, list[Article]] = {part: [] for part in (*parts, rest)}
    for article in articles:
        out[owner.get(article.title, rest)].append(article)
    return out


def examples(articles: Iterable[Article]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Tokenised examples and paragraphs of ``articles``.

    Returns:
        (examples, contexts). ``contexts[c]`` = ``{"text", "tokens", "offsets"}`` of paragraph c;
        an example = ``{"id", "question": tokens, "context": tokens, "paragraph": c,
        "answers": reference texts, "span": [first, last] token span of the first answer}``.

    Raises:
        ValueError: naming the question id, for a question without tokens or a first answer no
            token overlaps.
    """
    out, contexts = [], []
    for article in articles:
        for paragraph in article.paragraphs:
            tokens, offsets = tokenize(paragraph.context)
            contexts.append({"text": paragraph.context, "tokens": tokens, "offsets": offsets})
            for q in paragraph.questions:
                question_tokens, _ = tokenize(q.question)
                if not question_tokens:
                    raise ValueError(f"question {q.id} has no tokens")
                start = q.answer_starts[0]
                try:
                    first, last = answer_span(offsets, start, start + len(q.answers[0]))
                except ValueError as err:
                    raise ValueError(f"question {q.id}: {err}") from None
                out.append({"id": q.id, "question": question_tokens, "context": tokens,
                            "paragraph": len(contexts) - 1, "answers": list(q.answers),
                            "span": [first, last]})
    return out, contexts


def cap_questions(articles: Sequence[Article], max_questions: int) -> list[Article]:
    """The articles with only the paragraphs a capped training part keeps, articles without one dropped.

    Paragraphs are taken round-robin over the articles (the first paragraph of every article, then
    every second one, ...) while the questions taken stay within ``max_questions``: the first
    paragraph that would exceed the cap ends the selection, so a smaller cap keeps a subset of a
    larger one's paragraphs. ``max_questions`` 0 keeps everything.
    """
    if max_questions == 0:
        return list(articles)
    keep: set[tuple[int, int]] = set()
    taken, depth = 0, 0
    while any(depth < len(a.paragraphs) for a in articles):
        for a, article in enumerate(articles):
            if depth < len(article.paragraphs):
                n = len(article.paragraphs[depth].questions)
                if taken + n > max_questions:
                    return _kept(articles, keep)
                keep.add((a, depth))
                taken += n
        depth += 1
    return _kept(articles, keep)


def _kept(articles: Sequence[Article], keep: set[tuple[int, int]]) -> list[Article]:
    out = [Article(article.title, [p for i, p in enumerate(article.paragraphs) if (a, i) in keep])
           for a, article in enumerate(articles)]
    return [article for article in out if article.paragraphs]


def paragraphs_path(data_dir: str | os.PathLike, split: str) -> Path:
    """``<data_dir>/<split>.paragraphs.jsonl``: a prepared split's raw paragraphs and token offsets."""
    return Path(data_dir) / f"{split}.paragraphs.jsonl"


def write_paragraphs(data_dir: str | os.PathLike, split: str, contexts: Sequence[dict[str, Any]]) -> None:
    """One ``{"text", "offsets"}`` line per paragraph (line index = an example's ``paragraph``), atomically."""
    with atomic_open(paragraphs_path(data_dir, split)) as handle:
        for context in contexts:
            handle.write(json.dumps({"text": context["text"], "offsets": [list(o) for o in context["offsets"]]},
                                    ensure_ascii=False) + "\n")


def read_paragraphs(data_dir: str | os.PathLike, split: str) -> list[dict[str, Any]]:
    """The paragraphs :func:`write_paragraphs` wrote, offsets as (start, end) tuples.

    Raises:
        InputError: naming the file and line, for malformed JSON, a missing text, or offsets that
            are not increasing (start, end) pairs inside the text.
    """
    path = paragraphs_path(data_dir, split)
    out = []
    for number, line in iter_lines(path):
        try:
            record = json.loads(line)
        except json.JSONDecodeError as err:
            raise InputError(path, f"malformed JSON ({err.msg})", line=number) from None
        text, offsets = (record.get("text"), record.get("offsets")) if isinstance(record, dict) else (None, None)
        if not isinstance(text, str) or not isinstance(offsets, list) or not offsets:
            raise InputError(path, "expected {\"text\": str, \"offsets\": [[start, end], ...]}", line=number)
        pairs = []
        for item in offsets:
            if not (isinstance(item, list) and len(item) == 2 and all(isinstance(x, int) for x in item)
                    and 0 <= item[0] < item[1] <= len(text) and (not pairs or pairs[-1][1] <= item[0])):
                raise InputError(path, f"offset {item!r} is not an increasing (start, end) pair inside the "
                                       "paragraph", line=number)
            pairs.append((item[0], item[1]))
        out.append({"text": text, "offsets": pairs})
    if not out:
        raise InputError(path, "no paragraphs")
    return out
