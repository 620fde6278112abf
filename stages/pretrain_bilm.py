"""Stage pretrain_bilm: train the character-based biLM (paper §3.1, §3.4).

Reads data/lm/train.txt shard by shard (its index data/lm/train.shards.tsv) and data/vocab; resumes from models/bilm_checkpoints (a persistent DVC
output) when a compatible checkpoint exists; writes models/bilm (weights.pt, options.json,
vocab.txt, counts.tsv) and results/metrics/pretrain.json.

``--device cuda`` trains on a GPU; multi-GPU: ``torchrun --nproc-per-node 4 -m stages.pretrain_bilm
--threads 8 --device cuda`` (one GPU per rank; see ``elmo_repro.bilm.train``). Every rank trains; only rank 0 opens the MLflow run and writes the
model and metrics.
"""

import os
from pathlib import Path

from elmo_repro.bilm.model import BiLMConfig
from elmo_repro.bilm.train import pretrain, pretrain_config, save_model
from elmo_repro.data.lm_shards import ShardedText
from elmo_repro.data.vocabulary import Vocabulary
from elmo_repro.io import write_json
from elmo_repro.params import load_params
from elmo_repro.tracking import stage_run
from elmo_repro.device import add_device_options, device_args
from stages import stage_args, stage_parser

SECTIONS = ["bilm", "pretrain"]
TEXT = "data/lm/train.txt"


def main(argv: list[str] | None = None) -> None:
    parser = add_device_options(stage_parser(__doc__), precision=False)
    device, _ = device_args(stage_args(parser, argv), parser)   # its precision: pretrain.precision
    params = load_params()
    if int(os.environ.get("RANK", "0")) != 0:   # torchrun: the other ranks train and write nothing
        vocab = Vocabulary.load("data/vocab/vocab.txt", "data/vocab/counts.tsv")
        pretrain(BiLMConfig.from_options(params["bilm"], n_tokens_vocab=len(vocab)),
                 pretrain_config(params["pretrain"]), ShardedText(TEXT), vocab,
                 Path("models/bilm_checkpoints"), device=device)
        return
    with stage_run("pretrain_bilm", params, SECTIONS) as run:
        vocab = Vocabulary.load("data/vocab/vocab.txt", "data/vocab/counts.tsv")
        vocab.check_frequency_sorted("data/vocab/vocab.txt")
        config = BiLMConfig.from_options(params["bilm"], n_tokens_vocab=len(vocab))
        cfg = pretrain_config(params["pretrain"])
        model, summary = pretrain(config, cfg, ShardedText(TEXT), vocab,
                                  Path("models/bilm_checkpoints"),
                                  log_metrics=lambda metrics, step: run.log_metrics(metrics, step=step),
                                  device=device)
        save_model(model, vocab, Path("models/bilm"))
        n_params = sum(p.numel() for p in model.parameters())
        n_softmax = sum(p.numel() for p in model.softmax.parameters())
        summary.update({"parameters": n_params, "parameters_excluding_softmax": n_params - n_softmax})
        run.log_metrics(summary)
        # The DVC metric holds only what the seed determines (the MLflow run id and the speed are
        # in MLflow, found by the stage tag): a re-run writes the same bytes.
        write_json("results/metrics/pretrain.json", {k: v for k, v in summary.items() if k != "tokens_per_second"})
        run.log_artifact("models/bilm/options.json")


if __name__ == "__main__":
    main()
