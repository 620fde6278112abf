"""Stage prepare_lm: build the LM training text and the held-out perplexity sample.

Reads the sources named in ``lm_data.train_sources`` and the held-out text ``lm_data.heldout`` from
the data mirror (see ``elmo_repro.data.lm_corpus``), removes every training document that holds
a sentence of an evaluation split (``contamination`` section: ``splits``, ``min_words``; see
``elmo_repro.data.contamination``); writes ``data/lm/train.txt`` and
``data/lm/heldout.txt`` (UTF-8, one space-separated tokenized sentence per line, no ``</S>``),
the training text's shard index ``data/lm/train.shards.tsv`` (shards of at most
``lm_data.shard_tokens`` tokens; ``elmo_repro.data.lm_shards``) and ``results/metrics/lm_data.json``
(sentence/token counts per source and of the held-out sample, the number of shards, and the
removed documents with the splits they overlap). The text is written as it is read, one document
at a time (``elmo_repro.data.lm_split``): memory does not grow with the corpus.
"""

from pathlib import Path

from elmo_repro.console import log
from elmo_repro.data.eval_text import build_index
from elmo_repro.data.lm_split import write_split
from elmo_repro.io import write_json
from elmo_repro.params import load_params, mirror_path
from elmo_repro.tracking import flatten, stage_run
from stages import stage_args

SECTIONS = ["data", "lm_data", "contamination"]
OUT_DIR = Path("data/lm")
METRICS = Path("results/metrics/lm_data.json")


def main(argv: list[str] | None = None) -> None:
    stage_args(__doc__, argv)
    params = load_params()
    with stage_run("prepare_lm", params, SECTIONS) as run:
        config = params["lm_data"]
        exclude = build_index(mirror_path(params), params["contamination"])
        stats = write_split(mirror_path(params), config["train_sources"], int(config["heldout_max_tokens"]),
                            config["heldout"], exclude, OUT_DIR, int(config["shard_tokens"]))
        write_json(METRICS, stats)
        run.log_metrics(flatten({k: v for k, v in stats.items() if k != 'removed_documents'}))
        run.log_artifact(METRICS)
        for source, removed in stats["removed_documents"].items():
            for doc, splits in removed.items():
                log(f"[prepare_lm] removed {source} document {doc}: holds sentences of {', '.join(splits)}")
        log(f"[prepare_lm] train {stats['train_sentences']} sentences / {stats['train_tokens']} tokens "
            f"in {stats['train_shards']} shards, "
            f"held-out {stats['heldout_sentences']} / {stats['heldout_tokens']} "
            f"({stats['heldout_dropped_overlap']} dropped as in the training text)")


if __name__ == "__main__":
    main()
