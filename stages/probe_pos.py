"""Stage probe_pos@<source>: Table 6's rows of one layer source, part-of-speech tagging by a linear
probe per layer (paper §5.3), ``python -m stages.probe_pos --source <bilm|cove>``.

For each layer of ``probes.sources.<source>.layers`` and each seed of ``probes.pos.seeds``: a
softmax classifier on the frozen layer's token vectors, trained on the treebank's train documents,
until dev accuracy stops improving for ``probes.pos.patience`` epochs (at most ``max_epochs``),
the epoch with the best dev accuracy kept, scored once on the test documents
(:mod:`elmo_repro.probes.pos`). The tag set is the training part's; a dev or test token with a tag
never seen in training counts as an error. Reads ``data/features/probes/<source>/ptb.hdf5``;
writes ``results/probes/pos/<source>/layer<L>-s<seed>.json`` (accuracies, best epoch, history) and
the test predictions as tag ids (never the licensed words) to
``results/probes/predictions/pos/<source>/layer<L>-s<seed>.json``.
"""


import torch

from elmo_repro.io import InputError, write_json
from elmo_repro.params import load_params
from elmo_repro.probes.corpora import (layer_name, pos_split, pos_trees, probe_source, ptb_feature_path, read_layer,
                                       tag_ids)
from elmo_repro.probes.pos import train_linear_probe
from elmo_repro.tracking import stage_run
from stages import stage_args, stage_parser

SECTIONS = ["data", "probes.sources.${key}", "probes.pos"]
OUT = "results/probes/pos/{source}/{run}.json"
PREDICTIONS = "results/probes/predictions/pos/{source}/{run}.json"


def main(argv: list[str] | None = None) -> None:
    parser = stage_parser(__doc__)
    parser.add_argument("--source", required=True, help="a key of params probes.sources (bilm or cove)")
    known = stage_args(parser, argv)
    params = load_params()
    cfg, source = params["probes"]["pos"], known.source
    layers = probe_source(params, source)["layers"]
    with stage_run(f"probe_pos@{source}", params, [s.replace("${key}", source) for s in SECTIONS]) as run:
        trees = pos_trees(params)
        split = pos_split(params, trees)
        tags = sorted({t for i in split["train"] for t in trees[i].tags})
        gold = tag_ids(trees, split, tags)
        for layer in layers:
            sentences = read_layer(ptb_feature_path(source), source, layer)
            if len(sentences) != len(trees):
                raise InputError(ptb_feature_path(source), f"{len(sentences)} sentences for {len(trees)} trees: "
                                 f"re-run probe_features@{source}")
            vectors = {name: torch.cat([sentences[i] for i in rows]) for name, rows in split.items()}
            for seed in cfg["seeds"]:
                result = train_linear_probe(*((vectors[n], gold[n]) for n in ("train", "dev", "test")), len(tags),
                                            max_epochs=cfg["max_epochs"], patience=cfg["patience"],
                                            batch_size=cfg["batch_size"], lr=cfg["lr"],
                                            seed=seed)
                name = f"layer{layer}-s{seed}"
                metrics = {"dev_accuracy": result.dev_accuracy, "test_accuracy": result.test_accuracy,
                           "best_epoch": result.best_epoch, "epochs": len(result.history),
                           "converged": result.converged}
                write_json(OUT.format(source=source, run=name),
                           {"row": layer_name(source, layer), "source": source, "layer": layer, "seed": seed,
                            "tags": tags, "tokens": {n: len(g) for n, g in gold.items()}, "metrics": metrics,
                            "history": result.history})
                write_json(PREDICTIONS.format(source=source, run=name), result.test_predictions)
                run.log_metrics({f"{name}_{k}": v for k, v in metrics.items()})


if __name__ == "__main__":
    main()
