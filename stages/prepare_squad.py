"""Stage prepare_squad: SQuAD v1.1 questions -> one JSON example per line, split by article.

Writes, per split (train, dev = the selection part, test = the report part), in ``data/squad/``:

* ``<split>.jsonl``: one ``{"text_ids": {"question": id, "context": id}, "id": question id,
  "paragraph": p, "answers": [reference texts], "span": [first, last]}`` per question (``span``:
  the first answer's inclusive token span, the training target; ``elmo_repro.data.squad``);
* ``<split>.texts.jsonl``: the unique token sequences, questions and paragraphs together
  (``elmo_repro.data.examples``): the features stage embeds a paragraph once however many
  questions it has (~5);
* ``<split>.paragraphs.jsonl``: line ``p`` = ``{"text", "offsets"}`` of paragraph ``p``, so a
  predicted token span maps back to the exact paragraph substring the official scorer compares;

and the counts to ``results/metrics/squad_data.json``. Where the parts come from is
``tasks.squad.data``:

* ``source: dev`` (the mirror holds only the official dev file): the articles named by
  ``selection`` and ``report`` form those parts, every other article the training part; no article
  is in two parts.
* ``source: official``: training part = ``squad_v1.1/train-v1.1.json`` minus the ``selection``
  articles (which form the selection part), report part = ``squad_v1.1/dev-v1.1.json`` (the
  official test set is hidden; the paper's Tables 3 and 7 report dev too).

``max_train_questions`` caps the training part by whole paragraphs taken round-robin over its
articles (``elmo_repro.data.squad.cap_questions``): domain fine-tuning and the features read only
the text the runs train on.
"""

from pathlib import Path

from elmo_repro.console import log
from elmo_repro.data.examples import write_split
from elmo_repro.data.squad import cap_questions, examples, read_articles, split_articles, write_paragraphs
from elmo_repro.io import InputError, write_json
from elmo_repro.params import load_params, mirror_path
from elmo_repro.tracking import stage_run
from stages import stage_args

SECTIONS = ["data", "tasks.squad.data"]
OUT_DIR = Path("data/squad")
STATS = Path("results/metrics/squad_data.json")
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


def write_part(split: str, articles: list) -> dict[str, int]:
    """Write one split's three files (module doc); returns its counts."""
    rows, contexts = examples(articles)
    write_paragraphs(OUT_DIR, split, contexts)
    counts = write_split(OUT_DIR, split, rows, FIELDS)
    return {f"{split}_articles": len(articles), f"{split}_paragraphs": len(contexts),
            f"{split}_questions": counts["examples"], f"{split}_texts": counts["texts"],
            f"{split}_context_tokens": sum(len(c["tokens"]) for c in contexts)}


def main(argv: list[str] | None = None) -> None:
    stage_args(__doc__, argv)
    params = load_params()
    cfg = params["tasks"]["squad"]["data"]
    with stage_run("prepare_squad", params, SECTIONS) as run:
        stats: dict[str, int] = {}
        for split, articles in parts(mirror_path(params, "squad_v1.1"), cfg).items():
            stats.update(write_part(split, articles))
        write_json(STATS, stats)
        run.log_metrics(stats)
        log("[prepare_squad] " + ", ".join(
            f"{split} {stats[f'{split}_questions']} questions ({stats[f'{split}_articles']} articles, "
            f"{stats[f'{split}_paragraphs']} paragraphs)" for split in ("train", "dev", "test")))


if __name__ == "__main__":
    main()
