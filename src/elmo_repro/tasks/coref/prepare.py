"""CoNLL-2012-format coreference documents -> one JSON document per line (stage ``prepare_coref``).

Reads ``tasks.coref.data.source``:

* ``litbank``: the 100 LitBank documents under ``litbank_coref/conll/`` in the data mirror, which
  has no official split: documents sorted by name, ``test_documents`` of them evenly spaced form
  the test (report) part, ``dev_documents`` evenly spaced over the rest the dev (selection) part,
  the others training (:func:`.reader.split_documents`); the document names
  of each part are written to the stats file;
* ``ontonotes``: CoNLL-2012 OntoNotes (the paper's data) from ``ontonotes_dir``:
  ``{train,dev,test}.english.v4_gold_conll``, e2e-coref's files (a licensed corpus, not in the
  mirror; outside DVC's view, so a changed file needs ``dvc repro --force prepare_coref``).

``max_train_documents`` keeps the first training documents (by name; 0 = all). Writes, per split,
in ``out_dir``:

* ``<split>.jsonl``: one ``{"text_ids": {"sentences": [id, ...]}, "doc_key", "clusters": [[[start,
  end], ...], ...]}`` per document (spans inclusive, token indices over the whole document,
  singletons kept: the task scores without them and logs the scores with them);
* ``<split>.texts.jsonl``: the sentences (``elmo_repro.data.examples``), each embedded once;

and returns the counts (documents, sentences, tokens, mentions, clusters, singletons) and the
part's document names.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ...data.examples import write_split
from ...io import InputError
from .reader import read_coref_conll, split_documents

ONTONOTES = {"train": "train.english.v4_gold_conll", "dev": "dev.english.v4_gold_conll",
             "test": "test.english.v4_gold_conll"}


def read_parts(cfg: dict[str, Any], mirror: Path) -> dict[str, list[dict]]:
    """The documents of train, dev and test (``cfg``: ``tasks.coref.data``), as the module doc says.

    Raises:
        InputError: a missing folder or file, or a malformed document (file and line).
    """
    if cfg["source"] == "ontonotes":
        parts = {split: read_coref_conll(Path(cfg["ontonotes_dir"]) / name) for split, name in ONTONOTES.items()}
    else:
        folder = mirror / "litbank_coref" / "conll"
        files = sorted(folder.glob("*.conll"))
        if not files:
            raise InputError(folder, "no *.conll files (fetch litbank: python -m elmo_repro.fetch --only litbank)")
        documents = [doc for path in files for doc in read_coref_conll(path)]
        try:
            parts = split_documents(documents, cfg["dev_documents"], cfg["test_documents"])
        except ValueError as err:
            raise InputError("params.yaml", f"tasks.coref.data: {err}") from None
    if cfg["max_train_documents"]:
        parts["train"] = sorted(parts["train"], key=lambda d: d["doc_key"])[:cfg["max_train_documents"]]
    return parts


def counts(split: str, documents: list[dict]) -> dict:
    """A part's sizes and its document names."""
    clusters = [c for d in documents for c in d["clusters"]]
    return {f"{split}_documents": len(documents),
            f"{split}_sentences": sum(len(d["sentences"]) for d in documents),
            f"{split}_tokens": sum(len(s) for d in documents for s in d["sentences"]),
            f"{split}_mentions": sum(len(c) for c in clusters),
            f"{split}_clusters": len(clusters),
            f"{split}_singletons": sum(1 for c in clusters if len(c) == 1),
            f"{split}_doc_keys": [d["doc_key"] for d in documents]}


def prepare(cfg: dict[str, Any], mirror: Path, out_dir: Path) -> dict[str, Any]:
    """Write the three splits (module doc); returns their counts and document names.

    Raises:
        InputError: as :func:`read_parts`.
    """
    stats: dict[str, Any] = {}
    for split, documents in read_parts(cfg, mirror).items():
        rows = [{"sentences": d["sentences"], "doc_key": d["doc_key"],
                 "clusters": [[list(span) for span in c] for c in d["clusters"]]} for d in documents]
        written = write_split(out_dir, split, rows, ("sentences",))
        stats.update({**counts(split, documents), f"{split}_texts": written["texts"]})
    return stats


def summary(stats: dict[str, Any]) -> str:
    """One log line of the counts."""
    return (f"train {stats['train_documents']} documents ({stats['train_tokens']} tokens), "
            f"dev {stats['dev_documents']}, test {stats['test_documents']} ({stats['test_tokens']} tokens)")
