"""Stage features@<task>-<biLM>: ELMo features (all biLM layers) of every example of a task under
one biLM, ``python -m stages.extract_features --features <task>-<biLM> --job <job>``.

The key names an entry of the rendered params section ``elmo_features.<job>`` (one per (task, biLM)
that some run reads): the biLM directory (``base``: ``bilm_source.path``, ``models/bilm`` trained
by this pipeline or a directory with the released ELMo ``options.json`` + ``weights.hdf5``;
``finetuned``: ``models/finetuned/<task>``; ``cove``: ``models/cove``, CoVe's two MT-LSTM layers
in the same layout), the task's prepared splits (``data/<dir>``) and the output directory
(``data/features/<dir>/<biLM>``). Embeds each split's unique texts (``<split>.texts.jsonl``,
:mod:`elmo_repro.data.examples`) once, however many examples point at a text, each on its own
(stateless), and writes ``<split>.hdf5`` (allennlp ``elmo --all`` layout, keyed by text id). A
run's batches get the layers of the texts their examples reference
(:class:`elmo_repro.elmo.layer_source.ExampleLayers`). Logs per split the texts, the example
fields that reference them (what embedding per example would have cost) and tokens per second.
"""

import time

from elmo_repro.cove.features import load_cove, write_cove_features
from elmo_repro.data.examples import count_references, read_texts, texts_path
from elmo_repro.elmo.embedder import load_bilm
from elmo_repro.elmo.features import write_features
from elmo_repro.elmo.layer_source import feature_path
from elmo_repro.io import InputError
from elmo_repro.params import load_params
from elmo_repro.tracking import stage_run
from elmo_repro.device import add_device_options, device_args
from stages import stage_args, stage_parser

SPLITS = ("train", "dev", "test")
SECTIONS = ["features", "elmo_features.${job}.${key}"]   # the --job and --features keys


def main(argv: list[str] | None = None) -> None:
    parser = stage_parser(__doc__)
    parser.add_argument("--features", required=True, help="a key of params elmo_features.<job>: <task>-<biLM>")
    parser.add_argument("--job", default="main", help="the job whose features these are (main, analysis)")
    known = stage_args(add_device_options(parser), argv)
    device, precision = device_args(known, parser)
    params = load_params()
    entry = params["elmo_features"].get(known.job, {}).get(known.features)
    if entry is None:
        raise InputError("params.yaml", f"elmo_features.{known.job}: no entry {known.features!r} (re-render with "
                         "`python -m workflow.profile --refresh`)")
    cfg = params["features"]
    sections = [section.replace("${job}", known.job).replace("${key}", known.features) for section in SECTIONS]
    with stage_run(f"features@{known.features}", params, sections) as run:
        if entry["bilm"] == "cove":
            encoder, vectors = load_cove(entry["model"])
            encoder.to(device)

            def write(path, sentences):
                write_cove_features(path, encoder, vectors, sentences, cfg["batch_size"], cfg["dtype"])
        else:
            model = load_bilm(entry["model"]).to(device)

            def write(path, sentences):
                write_features(path, model, sentences, cfg["batch_size"], cfg["dtype"], precision)
        for split in SPLITS:
            texts = read_texts(texts_path(entry["data"], split))
            references = count_references(entry["data"], split)
            start = time.monotonic()
            write(feature_path(entry["out"], split), texts)
            seconds = time.monotonic() - start
            tokens = sum(len(text) for text in texts)
            run.log_metrics({f"{split}_texts": len(texts), f"{split}_references": references,
                             f"{split}_tokens": tokens, f"{split}_tokens_per_second": tokens / seconds})


if __name__ == "__main__":
    main()
