"""Stage features_<task>: ELMo features (all biLM layers) of every example of a task,
``python -m stages.extract_features --task TASK``.

Reads the biLM at ``bilm_source.path`` (``models/bilm``, trained by this pipeline, or a directory
with the released ELMo ``options.json`` + ``weights.hdf5``) and the task's prepared examples
(``data/<dir>/{train,dev,test}.jsonl``); writes one HDF5 file per split and per token field the
biLM embeds (allennlp ``elmo --all`` layout, keyed by example index): ``<split>.hdf5`` for a task
of single sentences, ``<split>.<field>.hdf5`` for pairs (SNLI: premise and hypothesis, each
embedded on its own, as the ESIM model reads them).
"""

import argparse
import time
from pathlib import Path

from elmo_repro.data.examples import read_examples
from elmo_repro.elmo.embedder import load_bilm
from elmo_repro.elmo.features import write_features
from elmo_repro.elmo.layer_source import feature_path
from elmo_repro.experiments.specs import TASK_INFO, TASKS
from elmo_repro.params import load_params
from elmo_repro.tracking import stage_run
from stages import stage_args

SECTIONS = ["features", "bilm_source"]
SPLITS = ("train", "dev", "test")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--task", required=True, choices=TASKS)
    known, rest = parser.parse_known_args(argv)
    stage_args(__doc__, rest)
    params = load_params()
    cfg, info = params["features"], TASK_INFO[known.task]
    with stage_run(f"features_{known.task}", params, SECTIONS) as run:
        model = load_bilm(params["bilm_source"]["path"])
        for split in SPLITS:
            examples = read_examples(Path(info.data_dir) / f"{split}.jsonl", info.fields)
            for field in info.fields:
                sentences = [example[field] for example in examples]
                start = time.monotonic()
                write_features(feature_path(info.features_dir, split, field), model, sentences,
                               cfg["batch_size"], cfg["dtype"])
                seconds = time.monotonic() - start
                tokens = sum(len(s) for s in sentences)
                prefix = split if field == "tokens" else f"{split}_{field}"
                run.log_metrics({f"{prefix}_sentences": len(sentences), f"{prefix}_tokens": tokens,
                                 f"{prefix}_tokens_per_second": tokens / seconds})


if __name__ == "__main__":
    main()
