"""Stage probe_features@<source>: every layer of one layer source (the biLM or CoVe) for the
probes' corpora, ``python -m stages.probe_features --source <bilm|cove>``.

Reads the source's model (``probes.sources.<source>.model``: the pretrained biLM, paper §5.3, or
the CoVe model of stage train_cove), the WSD data sets of ``probes.wsd`` and the treebank of
``probes.pos.treebank`` (under the data mirror). Writes ``data/features/probes/<source>/``:
``wsd/<data set>.hdf5`` and ``ptb.hdf5`` (every tree, in the treebank's order), in the layout of
the biLM features (:mod:`elmo_repro.elmo.features`; CoVe's file holds its two layers). Only layer
vectors are written, never the licensed treebank words.
"""

import time

from elmo_repro.cove.features import load_cove, write_cove_features
from elmo_repro.elmo.embedder import load_bilm
from elmo_repro.elmo.features import write_features
from elmo_repro.params import load_params
from elmo_repro.probes.corpora import (FEATURES_DIR, pos_split, pos_trees, pos_words, probe_source, ptb_feature_path,
                                       wsd_datasets, wsd_feature_path)
from elmo_repro.tracking import stage_run
from elmo_repro.device import add_device_options, device_args
from stages import stage_args, stage_parser

SECTIONS = ["data", "features", "probes.sources.${key}", "probes.wsd", "probes.pos.treebank", "probes.pos.split"]


def main(argv: list[str] | None = None) -> None:
    parser = stage_parser(__doc__)
    parser.add_argument("--source", required=True, help="a key of params probes.sources (bilm or cove)")
    known = stage_args(add_device_options(parser), argv)
    device, precision = device_args(known, parser)
    params = load_params()
    entry = probe_source(params, known.source)
    cfg = params["features"]
    sections = [section.replace("${key}", known.source) for section in SECTIONS]
    with stage_run(f"probe_features@{known.source}", params, sections) as run:
        if known.source == "cove":
            encoder, vectors = load_cove(entry["model"])
            encoder.to(device)

            def write(path, sentences):
                write_cove_features(path, encoder, vectors, sentences, cfg["batch_size"], cfg["dtype"])
        else:
            model = load_bilm(entry["model"]).to(device)

            def write(path, sentences):
                write_features(path, model, sentences, cfg["batch_size"], cfg["dtype"], precision)
        corpora = {f"wsd_{name}": (wsd_feature_path(known.source, name), dataset.sentences)
                   for part in ("train", "test") for name, dataset in wsd_datasets(params, part).items()}
        trees = pos_trees(params)
        pos_split(params, trees)                # a tree in no split fails here, before any work
        corpora["ptb"] = (ptb_feature_path(known.source), [pos_words(tree) for tree in trees])
        (FEATURES_DIR / known.source / "wsd").mkdir(parents=True, exist_ok=True)
        for name, (path, sentences) in corpora.items():
            start = time.monotonic()
            write(path, sentences)
            tokens = sum(len(s) for s in sentences)
            run.log_metrics({f"{name}_sentences": len(sentences), f"{name}_tokens": tokens,
                             f"{name}_tokens_per_second": tokens / (time.monotonic() - start)})


if __name__ == "__main__":
    main()
