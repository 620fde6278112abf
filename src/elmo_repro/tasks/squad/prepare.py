"""SQuAD v1.1 questions -> one JSON example per line, split by article (stage ``prepare_squad``).

Writes, per split (train, dev = the selection part, test = the report part), in ``out_dir``:

* ``<split>.jsonl``: one ``{"text_ids": {"question": id, "context": id}, "id": question id,
  "paragraph": p, "answers": [reference texts], "span": [first, last]}`` per question (``span``:
  the first answer's inclusive token span, the training target; ``elmo_repro.tasks.squad.reader``);
* ``<split>.texts.jsonl``: the unique token sequences, questions and paragraphs together
  (``elmo_repro.data.examples``): the features stage embeds a paragraph once however many
  questions it has (~5);
* ``<split>.paragraphs.jsonl``: line ``p`` = ``{"text", "offsets"}`` of paragraph ``p``, so a
  predicted token span maps back to the exact paragraph substring the official scorer compares;

and returns the counts. Where the parts come from is
``tasks.squad.data``:

* ``source: dev`` (the mirror holds only the official dev file): the articles named by
  ``selection`` and ``report`` form those parts, every other article the training part; no article
  is in two parts.
* ``source: official``: training part = ``squad_v1.1/train-v1.1.json`` minus the ``selection``
  articles (which form the selection part), report part = ``squad_v1.1/dev-v1.1.json`` (the
  official test set is hidden; the paper's Tables 3 and 7 report dev too).

``max_train_questions`` caps the training part by whole paragraphs taken round-robin over its
articles (``elmo_repro.tasks.squad.reader.cap_questions``): domain fine-tuning and the features read only
the text the runs train on.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ...data.examples import write_split
from ...io import InputError
from .reader import cap_questions, examples, read_articles, split_articles, write_paragraphs

FIELDS = ("question", "context")


def parts(squad_dir: Path, cfg: dict) -> dict[str, list]:
    """The articles of train, dev (selection) and test (report), as the module doc says.

    Raises:
        InputError: a malformed SQuAD file, or an article title that file does not have (naming the
            file and the ``tasks.squad.data`` key).
    """
    if cfg["source"] == "dev":
        return parts_from_file(squad_dir / "dev-v1.1.json", cfg)
    split = parts_from_file(squad_dir / "train-v1.1.json", cfg)
    split["test"] = read_articles(squad_dir / "dev-v1.1.json")
    return split


def parts_from_file(path: Path, cfg: dict) -> dict[str, list]:
    """The parts one SQuAD file gives: ``selection`` (and, with ``source: dev``, ``report``) by
    title, the capped rest as training; as :func:`parts` for a single file.

    Raises:
        InputError: as :func:`parts`.
    """
    named = {"dev": cfg["selection"], **({"test": cfg["report"]} if cfg["source"] == "dev" else {})}
    try:
        split = split_articles(read_articles(path), named, "train")
    except ValueError as err:
        if isinstance(err, InputError):
            raise
        raise InputError(path, f"tasks.squad.data: {err}") from None
    split["train"] = cap_questions(split["train"], cfg["max_train_questions"])
    return split


def write_part(split: str, articles: list, out_dir: Path) -> dict[str, int]:
    """Write one split's three files into ``out_dir`` (module doc); returns its counts."""
    rows, contexts = examples(articles)
    write_paragraphs(out_dir, split, contexts)
    counts = write_split(out_dir, split, rows, FIELDS)
    return {f"{split}_articles": len(articles), f"{split}_paragraphs": len(contexts),
            f"{split}_questions": counts["examples"], f"{split}_texts": counts["texts"],
            f"{split}_context_tokens": sum(len(c["tokens"]) for c in contexts)}


def prepare(cfg: dict[str, Any], mirror: Path, out_dir: Path) -> dict[str, int]:
    """Write the three parts (``cfg``: ``tasks.squad.data``) from ``mirror``/squad_v1.1; returns
    each part's articles, paragraphs, questions, unique texts and context tokens.

    Raises:
        InputError: as :func:`parts`.
    """
    stats: dict[str, int] = {}
    for split, articles in parts(mirror / "squad_v1.1", cfg).items():
        stats.update(write_part(split, articles, out_dir))
    return stats


def summary(stats: dict[str, int]) -> str:
    """One log line of the counts."""
    return ", ".join(f"{split} {stats[f'{split}_questions']} questions ({stats[f'{split}_articles']} articles, "
                     f"{stats[f'{split}_paragraphs']} paragraphs)" for split in ("train", "dev", "test"))
