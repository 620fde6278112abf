"""Stage train_cove: the CoVe translation model (McCann et al. 2017) on Multi30k, scored with
sacrebleu on test 2016.

Reads ``data/multi30k/{train,val,test}.jsonl`` (stage prepare_multi30k) and the fixed input word
vectors (``cove.vectors``: ``data/cove_vectors/vectors.txt`` of stage cove_vectors, standardized
when ``cove.standardize_vectors``); trains with val-BLEU selection (:mod:`elmo_repro.cove.train`),
resuming from ``models/cove_checkpoints/checkpoint.pt`` after a kill. Writes ``models/cove/``
(``weights.pt``: the translator's state dict with the input vectors, ``config.json``,
``target_vocab.txt``, ``source_words.txt``, the scored test translations
``test_2016.translations.de``), ``results/cove/bleu.json`` (test BLEU, sacrebleu's score line and
signature, per-epoch val BLEU and training perplexity; committed) and
``results/metrics/cove.json``; the BLEU and its signature are logged to MLflow.
"""

from dataclasses import asdict
from pathlib import Path

import torch

from elmo_repro.console import log
from elmo_repro.cove.model import CoVeConfig
from elmo_repro.cove.train import CoVeTrainConfig, SourceVectors, train_cove
from elmo_repro.data.examples import read_examples
from elmo_repro.data.multi30k import Pair
from elmo_repro.device import add_device_options, device_args
from elmo_repro.io import atomic_open, atomic_path, write_json
from elmo_repro.params import load_params
from elmo_repro.tracking import stage_run
from elmo_repro.vectors import load_text_vectors
from stages import stage_args, stage_parser

SECTIONS = ["cove.vectors", "cove.standardize_vectors", "cove.model", "cove.trainer"]
MODEL_DIR, CHECKPOINT = Path("models/cove"), Path("models/cove_checkpoints/checkpoint.pt")


def read_split(split: str) -> list[Pair]:
    examples = read_examples(Path("data/multi30k") / f"{split}.jsonl", ("source", "target"),
                             label_key="reference")
    return [Pair(e.get("line", i + 1), e["source"], e["target"], e["reference"]) for i, e in enumerate(examples)]


def main(argv: list[str] | None = None) -> None:
    parser = add_device_options(stage_parser(__doc__), precision=False)
    device, _ = device_args(stage_args(parser, argv), parser)
    params = load_params()
    cfg = params["cove"]
    with stage_run("train_cove", params, SECTIONS) as run:
        words, matrix = load_text_vectors(cfg["vectors"])
        vectors = SourceVectors(words, matrix, standardize=cfg["standardize_vectors"])
        model_config, train_config = CoVeConfig(**cfg["model"]), CoVeTrainConfig(**cfg["trainer"])
        CHECKPOINT.parent.mkdir(parents=True, exist_ok=True)
        model, target_words, result = train_cove(
            read_split("train"), read_split("val"), read_split("test"), vectors, model_config, train_config,
            CHECKPOINT, log=lambda message: log(f"[train_cove] {message}"),
            log_metrics=lambda metrics, step: run.log_metrics(metrics, step=step), device=device)
        MODEL_DIR.mkdir(parents=True, exist_ok=True)
        # through a handle, on the CPU: equal weights give equal bytes (a path would name the zip
        # records after the temporary file; see bilm.checkpoint.save_reproducibly)
        with atomic_path(MODEL_DIR / "weights.pt") as tmp, open(tmp, "wb") as handle:
            torch.save({name: tensor.cpu() for name, tensor in model.state_dict().items()}, handle)
        write_json(MODEL_DIR / "config.json", {"model": asdict(model_config), "trainer": asdict(train_config),
                                               "n_target": len(target_words)})
        for name, items in (("target_vocab.txt", target_words), ("source_words.txt", words),
                            ("test_2016.translations.de", result.test_translations)):
            with atomic_open(MODEL_DIR / name) as handle:
                handle.writelines(w + "\n" for w in items)
        write_json(Path("results/cove/bleu.json"), {"test_bleu": result.metrics["test_bleu"],
                                                     "score": result.score_line, "signature": result.signature,
                                                     # durations go to MLflow only: outputs hold no timing
                                                     "history": [{k: v for k, v in row.items() if k != "seconds"}
                                                                 for row in result.history]})
        write_json(Path("results/metrics/cove.json"), result.metrics)
        run.log_metrics(result.metrics)
        run.set_tags({"sacrebleu_signature": result.signature})


if __name__ == "__main__":
    main()
