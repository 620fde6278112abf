"""Early training of ELMo runs with γ started at 1 against γ matched to the static vectors (issue 29).

Trains one task's runs of one ELMo spec for a few epochs per (γ start, seed), from the cached
features of the pipeline (run it after `dvc repro` built them), and prints one JSON line per run:
the training loss and dev score per epoch and the mixes' γ before and after. A run whose loss stays
at the class prior's (``results/runs/<task>-floor/metrics.json``) for its first epochs is the
stall the matched start removes. Nothing is written to the pipeline's outputs.

Usage (repository root):
    .venv/bin/python -m benchmarks.gamma_screen --task sst5 --spec char_layer --gamma-init one matched \
        --seeds 0 1 2 --epochs 3
"""

from __future__ import annotations

import argparse
import copy
import json
import time

import torch

from elmo_repro.elmo.layer_source import cached_example_layers
from elmo_repro.experiments.specs import ElmoSpec, RunSpec
from elmo_repro.experiments.tasks import TASKS
from elmo_repro.params import load_params
from elmo_repro.tasks.base import SPLITS, get_task
from elmo_repro.training.trainer import train_run
from elmo_repro.vectors import load_text_vectors


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--task", required=True, choices=sorted(TASKS))
    parser.add_argument("--spec", required=True, help="a key of params elmo_specs")
    parser.add_argument("--gamma-init", nargs="+", default=["one", "matched"], choices=["one", "matched"])
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    params = load_params()
    task = get_task(args.task)
    cfg = copy.deepcopy(params["tasks"][args.task])
    cfg["trainer"]["epochs"] = args.epochs
    data = {split: task.read(split) for split in SPLITS}
    vectors = load_text_vectors(cfg["vectors"])
    spec_fields = dict(params["elmo_specs"][args.spec])
    if spec_fields.get("placement", "paper") == "paper":
        spec_fields["placement"] = TASKS[args.task].placement
    for gamma_init in args.gamma_init:
        for seed in args.seeds:
            elmo = ElmoSpec(**{**spec_fields, "gamma_init": gamma_init})
            spec = RunSpec(task=args.task, elmo_name=args.spec, elmo=elmo, seed=seed, train_fraction=1.0)
            layers = {split: cached_example_layers(task.features_dir / elmo.bilm, split, data[split], task.fields)
                      for split in SPLITS}
            start = time.monotonic()
            result = train_run(task, spec, cfg, data, vectors, layers)
            print(json.dumps({"task": args.task, "spec": args.spec, "gamma_init": gamma_init, "seed": seed,
                              "train_loss": [round(h["train_loss"], 4) for h in result.history],
                              f"dev_{task.metric}": [round(h[f"dev_{task.metric}"], 2) for h in result.history],
                              "mixes": result.mixes, "seconds": round(time.monotonic() - start)}), flush=True)


if __name__ == "__main__":
    main()
