"""Stage features@<task>-<biLM>: ELMo features (all biLM layers) of every example of a task under
one biLM, ``python -m stages.extract_features --features <task>-<biLM> --job <job>``.

The key names an entry of the rendered params section ``elmo_features.<job>`` (one per (task, biLM)
that some run reads): the biLM directory (``base``: ``bilm_source.path``, ``models/bilm`` trained
by this pipeline or a directory with the released ELMo ``options.json`` + ``weights.hdf5``;
``finetuned``: ``models/finetuned/<task>``; ``cove``: ``models/cove``, CoVe's two MT-LSTM layers
in the same layout), the task's prepared examples
(``data/<dir>/{train,dev,test}.jsonl``) and the output directory
(``data/features/<dir>/<biLM>``). Writes one HDF5 file per split and per token field the biLM
embeds (allennlp ``elmo --all`` layout, keyed by example index): ``<split>.hdf5`` for a task of
single sentences, ``<split>.<field>.hdf5`` for pairs (SNLI: premise and hypothesis, each embedded
on its own, as the ESIM model reads them).
"""

import argparse
import time
from pathlib import Path

from elmo_repro.cove.features import load_cove, write_cove_features
from elmo_repro.data.examples import read_examples
from elmo_repro.elmo.embedder import load_bilm
from elmo_repro.elmo.features import write_features
from elmo_repro.elmo.layer_source import feature_path
from elmo_repro.experiments.tasks import TASKS
from elmo_repro.io import InputError
from elmo_repro.params import load_params
from elmo_repro.tracking import stage_run
from stages import stage_args

SPLITS = ("train", "dev", "test")
SECTIONS = ["features", "elmo_features.${job}.${key}"]   # the --job and --features keys


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--features", required=True, help="a key of params elmo_features.<job>: <task>-<biLM>")
    parser.add_argument("--job", default="main", help="the job whose features these are (main, analysis)")
    known, rest = parser.parse_known_args(argv)
    stage_args(__doc__, rest)
    params = load_params()
    entry = params["elmo_features"].get(known.job, {}).get(known.features)
    if entry is None:
        raise InputError("params.yaml", f"elmo_features.{known.job}: no entry {known.features!r} (re-render with "
                         "`python -m workflow.profile --refresh`)")
    cfg, info = params["features"], TASKS[entry["task"]]
    sections = [section.replace("${job}", known.job).replace("${key}", known.features) for section in SECTIONS]
    with stage_run(f"features@{known.features}", params, sections) as run:
        if entry["bilm"] == "cove":
            encoder, vectors = load_cove(entry["model"])

            def write(path, sentences):
                write_cove_features(path, encoder, vectors, sentences, cfg["batch_size"], cfg["dtype"])
        else:
            model = load_bilm(entry["model"])

            def write(path, sentences):
                write_features(path, model, sentences, cfg["batch_size"], cfg["dtype"])
        for split in SPLITS:
            examples = read_examples(Path(entry["data"]) / f"{split}.jsonl", info.fields)
            for field in info.fields:
                sentences = [example[field] for example in examples]
                start = time.monotonic()
                write(feature_path(entry["out"], split, field), sentences)
                seconds = time.monotonic() - start
                tokens = sum(len(s) for s in sentences)
                prefix = split if field == "tokens" else f"{split}_{field}"
                run.log_metrics({f"{prefix}_sentences": len(sentences), f"{prefix}_tokens": tokens,
                                 f"{prefix}_tokens_per_second": tokens / seconds})


if __name__ == "__main__":
    main()
