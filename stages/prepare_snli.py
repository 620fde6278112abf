"""Stage prepare_snli: SNLI pairs -> one JSON example per line.

Writes ``data/snli/{train,dev,test}.jsonl``, one ``{"text_ids": {"premise": id, "hypothesis": id},
"label"}`` object per pair, each split's unique sentences (premises and hypotheses together; a
premise has ~3 hypotheses) to ``<split>.texts.jsonl`` (``elmo_repro.data.examples``: the features
stage embeds each once), and the counts to ``results/metrics/snli_data.json``. Where the splits come from is
``tasks.snli.data.train_from``:

* ``dev`` (the mirror, which has no training split): train = SNLI dev minus a selection slice,
  dev = that slice, the pairs of ``selection_premises`` premises chosen by a fixed hash of the
  premise text (``elmo_repro.data.snli.split_by_premise``: no premise on both sides), test = SNLI
  test. The "dev" numbers of this profile are that slice, not SNLI dev.
* ``official``: ``snli/snli_1.0/snli_1.0_{train,dev,test}.jsonl`` (``python -m elmo_repro.fetch
  --only snli``), pairs without a gold label dropped.
"""

from collections import Counter
from pathlib import Path

from elmo_repro.console import log
from elmo_repro.data.examples import write_split
from elmo_repro.data.snli import read_jsonl, read_line_files, split_by_premise
from elmo_repro.io import write_json
from elmo_repro.params import load_params, mirror_path
from elmo_repro.tracking import stage_run
from stages import stage_args

SECTIONS = ["data", "tasks.snli.data"]
OUT_DIR = Path("data/snli")
STATS = Path("results/metrics/snli_data.json")


def splits(snli_dir: Path, train_from: str, selection_premises: int) -> dict[str, list[dict]]:
    """The three splits (see the module doc)."""
    if train_from == "official":
        return {split: read_jsonl(snli_dir / "snli_1.0" / f"snli_1.0_{split}.jsonl")
                for split in ("train", "dev", "test")}
    line_files = snli_dir / "esnli_infersent_format"
    train, selection = split_by_premise(read_line_files(line_files, "dev"), selection_premises)
    return {"train": train, "dev": selection, "test": read_line_files(line_files, "test")}


def main(argv: list[str] | None = None) -> None:
    stage_args(__doc__, argv)
    params = load_params()
    cfg = params["tasks"]["snli"]["data"]
    with stage_run("prepare_snli", params, SECTIONS) as run:
        data = splits(mirror_path(params, "snli"), cfg["train_from"], cfg["selection_premises"])
        stats: dict[str, int] = {}
        for split, pairs in data.items():
            stats[f"{split}_texts"] = write_split(OUT_DIR, split, pairs, ("premise", "hypothesis"))["texts"]
            stats[f"{split}_pairs"] = len(pairs)
            stats[f"{split}_premises"] = len({" ".join(p["premise"]) for p in pairs})
            stats.update({f"{split}_{label}": n for label, n in sorted(Counter(p["label"] for p in pairs).items())})
        write_json(STATS, stats)
        run.log_metrics(stats)
        log("[prepare_snli] " + ", ".join(f"{split} {stats[f'{split}_pairs']} pairs "
                                          f"({stats[f'{split}_premises']} premises, {stats[f'{split}_texts']} unique sentences)" for split in data))


if __name__ == "__main__":
    main()
