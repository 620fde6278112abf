"""CoNLL-2005 words and props files -> one JSON proposition per line (stage ``prepare_srl``).

Reads the release under ``srl_conll2005/`` in the data mirror (:mod:`.reader`):
training = WSJ sections 02-21, rebuilt from the per-section files; dev = WSJ 24; test = WSJ 23 and
then the Brown test set. Writes, per split, in ``out_dir``:

* ``<split>.jsonl``: one ``{"text_ids": {"tokens": id}, "predicate": i, "tags": [BIO tags],
  "domain": "wsj" | "brown"}`` per proposition (He et al.'s instances: one per target verb), in
  sentence then verb order; ``domain`` says which test set a test proposition belongs to
  (the task scores WSJ as its primary metric and Brown, the out-of-domain set, beside it);
* ``<split>.texts.jsonl``: each sentence with a target verb once (``elmo_repro.data.examples``),
  so the features stage embeds a sentence once for all its predicates (~2.3 per sentence);

and returns the counts (sentences, propositions, tokens, texts, per split and test domain).

``tasks.srl.data.max_train_sentences`` caps the training sentences by the nested rule of
:func:`.reader.cap_sentences` (spread round-robin over sections 02-21, the same
on every machine; a smaller cap keeps a subset of a larger one's sentences). Dev and test are
never capped. Domain fine-tuning and the features read only the prepared training text.

The WSJ words are licensed (LDC): ``data/srl`` is a pipeline output in DVC's cache, never in git,
and the runs' prediction files hold tags only.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ...data.examples import write_split
from .reader import TRAIN_SECTIONS, cap_sentences, read_conll2005, split_files, srl_examples

TEST_SETS = (("test_wsj", "wsj"), ("test_brown", "brown"))   # the test split's parts, in file order


def read_release(root: Path, max_train_sentences: int) -> dict[str, list[tuple[str, list[dict]]]]:
    """Sentences of each split as ``(domain, sentences)`` parts: train (capped, WSJ), dev (WSJ),
    test (WSJ 23, then Brown).

    Raises:
        InputError: a missing or malformed file of the release, naming it and the line.
    """
    train_files = split_files(root, "train")
    by_section = {section: read_conll2005(words, props) for section, (words, props) in zip(TRAIN_SECTIONS, train_files)}
    (dev_words, dev_props), = split_files(root, "dev")
    test = [(domain, read_conll2005(*split_files(root, name)[0])) for name, domain in TEST_SETS]
    return {"train": [("wsj", cap_sentences(by_section, max_train_sentences or None))],
            "dev": [("wsj", read_conll2005(dev_words, dev_props))],
            "test": test}


def propositions(domain: str, sentences: list[dict]) -> list[dict]:
    """One example per proposition of ``sentences`` (module doc), marked with ``domain``."""
    return [{"tokens": e["tokens"], "predicate": e["predicate"], "tags": e["tags"], "domain": domain}
            for e in srl_examples(sentences)]


def write_part(split: str, parts: list[tuple[str, list[dict]]], out_dir: Path) -> dict[str, int]:
    """Write one split's examples and texts (module doc); returns its counts."""
    examples, stats = [], {}
    for domain, sentences in parts:
        rows = propositions(domain, sentences)
        examples += rows
        prefix = f"{split}_{domain}" if len(parts) > 1 else split
        stats.update({f"{prefix}_sentences": len(sentences), f"{prefix}_propositions": len(rows),
                      f"{prefix}_tokens": sum(len(s["tokens"]) for s in sentences)})
    written = write_split(out_dir, split, examples, ("tokens",))
    stats.update({f"{split}_propositions": written["examples"], f"{split}_texts": written["texts"]})
    return stats


def prepare(cfg: dict[str, Any], mirror: Path, out_dir: Path) -> dict[str, int]:
    """Write the three splits (``cfg``: ``tasks.srl.data``) from ``mirror``/srl_conll2005; returns
    their counts (module doc).

    Raises:
        InputError: as :func:`read_release`.
    """
    stats: dict[str, int] = {}
    for split, parts in read_release(mirror / "srl_conll2005", cfg["max_train_sentences"]).items():
        stats.update(write_part(split, parts, out_dir))
    return stats


def summary(stats: dict[str, int]) -> str:
    """One log line of the counts."""
    return (f"train {stats['train_propositions']} propositions of {stats['train_sentences']} sentences, "
            f"dev {stats['dev_propositions']}, test WSJ {stats['test_wsj_propositions']} and "
            f"Brown {stats['test_brown_propositions']}")
