"""Stage finetune@<task>: domain fine-tuning of the biLM on the task's training text (paper §3.4),
``python -m stages.finetune_bilm --task TASK``.

Reads the base biLM (``bilm_source.path``, ``models/bilm`` when trained here) with the pretraining
checkpoint (``models/bilm_checkpoints/checkpoint.pt``: its Adagrad state continues, as bilm-tf's
restart) and the task's prepared splits (``data/<dir>``, :mod:`elmo_repro.data.examples`). The fine-tuning
text is the **training** split only, one sentence per line, each distinct sentence once, without
any sentence of the dev or test split (:mod:`elmo_repro.bilm.finetune`); the budget is
``finetune.epochs`` passes over it, the other settings the pretraining ones (``pretrain``),
overridden by ``finetune``. Writes ``models/finetuned/<task>`` (weights.pt, options.json,
vocab.txt: the base vocabulary), resumes from ``models/finetune_checkpoints/<task>`` after a kill,
and writes ``results/metrics/finetune/<task>.json``: the text's size, what was dropped, whether the
Adagrad state was restored, the dev text's perplexity under the base and the fine-tuned biLM (the
biLM never trains on it). The wall time goes to MLflow only (``train_seconds``): a rebuilt file is
byte-identical to the committed one.
"""

from __future__ import annotations

import time
from pathlib import Path

from elmo_repro.bilm.evaluate import bilm_perplexity
from elmo_repro.bilm.finetune import drop_held_out, finetuning_text, load_start
from elmo_repro.bilm.train import pretrain, pretrain_config, save_model
from elmo_repro.data.examples import field_texts, read_split
from elmo_repro.experiments.specs import finetuned_dir
from elmo_repro.experiments.tasks import TASKS
from elmo_repro.io import write_json
from elmo_repro.params import load_params
from elmo_repro.tracking import stage_run
from elmo_repro.device import add_device_options, device_args
from stages import stage_args, stage_parser

SECTIONS = ["bilm_source", "pretrain", "finetune", "perplexity"]
PRETRAINING_CHECKPOINT = Path("models/bilm_checkpoints/checkpoint.pt")


def task_text(task: str, data_dir: str | Path | None = None) -> tuple[list[list[str]], list[list[str]], dict]:
    """``(fine-tuning text, dev text, counts)`` of a task from its prepared examples: the training
    split's sentences (distinct, no dev or test sentence) and the dev split's (for perplexity).

    Raises:
        InputError: a missing or malformed examples file (file and line).
    """
    info = TASKS[task]
    root = Path(data_dir or info.data_dir)
    splits = {split: read_split(root, split, info.fields) for split in ("train", "dev", "test")}
    text = finetuning_text(splits["train"], info.fields)
    held_out = [t for split in ("dev", "test") for e in splits[split] for field in info.fields
                for t in field_texts(e[field])]
    kept, dropped = drop_held_out(text, held_out)
    dev_text = finetuning_text(splits["dev"], info.fields)
    counts = {"train_examples": len(splits["train"]), "text_sentences": len(kept),
              "text_tokens": sum(len(s) for s in kept), "dropped_held_out_sentences": dropped,
              "dev_sentences": len(dev_text), "dev_tokens": sum(len(s) for s in dev_text)}
    return kept, dev_text, counts


def main(argv: list[str] | None = None) -> None:
    parser = stage_parser(__doc__)
    parser.add_argument("--task", required=True, choices=TASKS)
    known = stage_args(add_device_options(parser, precision=False), argv)
    device, _ = device_args(known, parser)    # its precision: pretrain.precision (updated by finetune)
    params, task = load_params(), known.task
    with stage_run(f"finetune@{task}", params, SECTIONS) as run:
        model, vocab, start, restored = load_start(params["bilm_source"]["path"], PRETRAINING_CHECKPOINT)
        text, dev_text, counts = task_text(task)
        batch = params["perplexity"]["batch_size"]
        before = bilm_perplexity(model.to(device), vocab, dev_text, batch)
        cfg = pretrain_config({**params["pretrain"], **params["finetune"]})
        started = time.monotonic()
        tuned, summary = pretrain(model.config, cfg, text, vocab, Path("models/finetune_checkpoints") / task,
                                  log_metrics=lambda metrics, step: run.log_metrics(metrics, step=step),
                                  start=start, device=device)
        seconds = time.monotonic() - started
        after = bilm_perplexity(tuned, vocab, dev_text, batch)
        save_model(tuned, vocab, Path(finetuned_dir(task)))
        result = {**counts, "optimizer_state_restored": restored, "batches": summary["batches"],
                  "target_tokens_per_direction": summary["target_tokens_per_direction"],
                  "dev_perplexity_base": before["perplexity"], "dev_perplexity_finetuned": after["perplexity"]}
        run.log_metrics({**{k: float(v) for k, v in result.items()}, "train_seconds": seconds})
        write_json(Path("results/metrics/finetune") / f"{task}.json", result)


if __name__ == "__main__":
    main()
