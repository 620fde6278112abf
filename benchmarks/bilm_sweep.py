"""Which tiny biLM does the default job's pretraining time buy? A wall-clock-matched sweep.

Every setting trains the pipeline's biLM (``elmo_repro.bilm.train.pretrain``: the paper's
structure, sampled softmax, Adagrad, bilm-tf conventions) on the pipeline's training text and
vocabulary (``data/lm/train.txt``, ``data/vocab``: run ``dvc repro vocab`` first) from the same
seed, and is evaluated on the pipeline's held-out sample (``data/lm/heldout.txt``, full softmax,
``bilm_perplexity``) every ``--every`` minutes of training up to ``--minutes``. Adagrad's step size
does not depend on the run length, so the model after t minutes of a long run is the model a
t-minute run would have produced: one run per setting gives its whole curve. Training stops at
checkpoint boundaries through ``pretrain(stop_after=...)`` and resumes exactly; evaluation time
is not counted as training time.

What varies (the issue's sweep): LSTM cells and projection, batch size, and through the time
budget the number of epochs. Two layers, the char CNN and every other convention stay as in the
base profile. Run it alone on the machine (two heavy processes slow each other down).

Usage:
    .venv/bin/python benchmarks/bilm_sweep.py --minutes 30 --every 10 --json sweep.json
    .venv/bin/python benchmarks/bilm_sweep.py --settings 256x64-b32 --minutes 1 --every 1   # check
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "src"))

import torch  # noqa: E402

from elmo_repro.bilm.evaluate import bilm_perplexity  # noqa: E402
from elmo_repro.bilm.model import BiLMConfig  # noqa: E402
from elmo_repro.bilm.train import pretrain, pretrain_config  # noqa: E402
from elmo_repro.console import log  # noqa: E402
from elmo_repro.data.text import read_sentences  # noqa: E402
from elmo_repro.data.vocabulary import Vocabulary  # noqa: E402
from workflow.profile import render  # noqa: E402

# name -> overrides of (cells, projection, batch size)
SETTINGS = {
    "256x64-b16": (256, 64, 16),
    "256x64-b32": (256, 64, 32),        # the previous default
    "512x128-b32": (512, 128, 32),
    "512x128-b64": (512, 128, 64),
    "512x128-b128": (512, 128, 128),
    "1024x128-b64": (1024, 128, 64),
    "1024x128-b128": (1024, 128, 128),
}
LONG_BUDGET = 10 ** 9   # fixes the run's fingerprint; runs stop long before it


def run_setting(name: str, base: dict, sentences, vocab, heldout, minutes: float, every: float,
                probe_batches: int) -> list[dict]:
    cells, proj, batch = SETTINGS[name]
    options = copy.deepcopy(base["bilm"])
    options["lstm"].update(dim=cells, projection_dim=proj)
    model_config = BiLMConfig.from_options(options, n_tokens_vocab=len(vocab))
    section = {**base["pretrain"], "batch_size": batch, "token_budget": LONG_BUDGET, "epochs": 0,
               "log_every": 10 ** 9, "checkpoint_every": 10 ** 9}
    cfg = pretrain_config(section)
    n_text = sum(len(s) + 1 for s in sentences)   # targets per direction per epoch (incl. </S>)
    tokens_per_batch = batch * cfg.unroll_steps
    rows, done, trained_s = [], 0, 0.0
    with tempfile.TemporaryDirectory() as ckpt:
        # throughput probe: the first segment is short; later segments aim at the next mark
        marks = [every * 60 * k for k in range(1, int(round(minutes / every)) + 1)]
        rate = None
        for mark in marks:
            while trained_s < mark - 1e-6:
                if rate is None:
                    step = probe_batches
                else:
                    step = max(1, round((mark - trained_s) * rate))
                start = time.monotonic()
                model, _ = pretrain(model_config, cfg, sentences, vocab, Path(ckpt), stop_after=done + step)
                elapsed = time.monotonic() - start
                done += step
                trained_s += elapsed
                rate = done / trained_s
                if mark - trained_s < 0.02 * mark:   # close enough: a further segment costs its set-up
                    break
            eval_start = time.monotonic()
            result = bilm_perplexity(model, vocab, heldout)
            row = {"setting": name, "cells": cells, "projection": proj, "batch_size": batch,
                   "minutes": round(trained_s / 60, 2), "batches": done,
                   "tokens_per_direction": done * tokens_per_batch,
                   "epochs": round(done * tokens_per_batch / n_text, 3),
                   "parameters_excluding_softmax": sum(p.numel() for n, p in model.named_parameters()
                                                       if not n.startswith("softmax")),
                   "perplexity": round(result["perplexity"], 2),
                   "eval_seconds": round(time.monotonic() - eval_start, 1)}
            log(f"[sweep] {json.dumps(row)}")
            rows.append(row)
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--settings", default=",".join(SETTINGS), help=f"comma-separated from {list(SETTINGS)}")
    parser.add_argument("--minutes", type=float, default=30.0, help="training minutes per setting")
    parser.add_argument("--every", type=float, default=10.0, help="evaluate every this many minutes")
    parser.add_argument("--probe-batches", type=int, default=40, help="batches of the first (timing) segment")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--json", type=Path, help="append the rows (JSON lines) here")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    base = render("tiny")
    sentences = read_sentences(REPO / "data/lm/train.txt")
    heldout = read_sentences(REPO / "data/lm/heldout.txt")
    vocab = Vocabulary.load(REPO / "data/vocab/vocab.txt", REPO / "data/vocab/counts.tsv")
    for name in args.settings.split(","):
        rows = run_setting(name, base, sentences, vocab, heldout, args.minutes, args.every, args.probe_batches)
        if args.json:
            with open(args.json, "a", encoding="utf-8") as handle:
                for row in rows:
                    handle.write(json.dumps(row) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
