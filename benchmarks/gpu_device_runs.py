"""The stages' device paths on a real device: each task's in-repo fixture trains through the one
trainer with cached ELMo layers, a small biLM embeds, scores perplexity and trains (the pretraining
and fine-tuning code), and CoVe trains and translates, once on the CPU and once on ``--device`` in
fp32 and under bf16 autocast. Each row reports where the weights ended up, the metric on each
device (GPU float sums differ from the CPU's in the last bits, which training amplifies: the rows
show the size of the difference, they do not require equality) and the seconds.

``python -m benchmarks.gpu_device_runs --device cuda [--json FILE]`` exits 1 when a run fails or
leaves a parameter off the device. Part of ``benchmarks/gpu_check.sh``; on the CPU the same code is
tested with torch's default device set to ``meta`` (``tests/unit/test_device.py``).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "unit"))            # the task fixtures' configurations
from test_cove import copy_task  # noqa: E402
from test_task_contract import CONFIGS, FIXTURES, fixture_with_layers  # noqa: E402

from elmo_repro.bilm.evaluate import bilm_perplexity  # noqa: E402
from elmo_repro.bilm.model import BiLMConfig  # noqa: E402
from elmo_repro.bilm.train import pretrain, pretrain_config  # noqa: E402
from elmo_repro.cove.model import CoVeConfig  # noqa: E402
from elmo_repro.cove.train import CoVeTrainConfig, SourceVectors, train_cove  # noqa: E402
from elmo_repro.data.vocabulary import Vocabulary, count_tokens  # noqa: E402
from elmo_repro.device import resolve_device  # noqa: E402
from elmo_repro.elmo.features import embed_sentences  # noqa: E402
from elmo_repro.experiments.specs import TASKS, ElmoSpec, RunSpec  # noqa: E402
from elmo_repro.training.trainer import train_run  # noqa: E402
from elmo_repro.vectors import load_text_vectors  # noqa: E402

SENTENCES = [s.split() for s in ["the cat sat on the mat", "a dog barked", "the dog sat", "cats and dogs are pets",
                                 "the mat is red", "a cat is a pet", "dogs bark at cats", "the red dog sat on a mat"]]


def task_run(name: str, device: torch.device, precision: str, features: Path) -> dict:
    task, data, layers = fixture_with_layers(name, features)
    elmo = ElmoSpec(placement="input" if name == "coref" else "both", mix="learned", l2_coef=0.01)
    spec = RunSpec(task=name, elmo_name="elmo", elmo=elmo, seed=1, train_fraction=1.0)
    cfg = {**CONFIGS[name], "trainer": {**CONFIGS[name]["trainer"], "epochs": 3}}
    start = time.monotonic()
    result = train_run(task, spec, cfg, data, load_text_vectors(FIXTURES / name / "vectors.txt"), layers,
                       device=device, precision=precision)
    return {"metric": f"test_{task.metric}", "value": result.metrics[f"test_{task.metric}"],
            "seconds": time.monotonic() - start, "weights_on": sorted({str(t.device) for t in result.state_dict.values()})}


def bilm_paths(device: torch.device, precision: str) -> dict:
    vocab = Vocabulary.build(*count_tokens(SENTENCES))
    config = BiLMConfig(filters=((1, 4), (2, 4)), char_dim=4, n_highway=1, cell_dim=8, projection_dim=4,
                        n_layers=2, dropout=0.1, n_tokens_vocab=len(vocab))
    cfg = pretrain_config(dict(seed=0, token_budget=400, epochs=0.0, batch_size=2, unroll_steps=4,
                               n_negative_samples=4, learning_rate=0.2, initial_accumulator=1.0, grad_clip=10.0,
                               checkpoint_every=50, log_every=50, softmax_bias_init="zeros",
                               precision=precision))
    start = time.monotonic()
    model, summary = pretrain(config, cfg, SENTENCES, vocab, Path(tempfile.mkdtemp()), device=device)
    on = sorted({str(p.device) for p in model.parameters()})
    layers = dict(embed_sentences(model, SENTENCES, batch_size=3, precision=precision))
    perplexity = bilm_perplexity(model, vocab, SENTENCES, batch_size=3, precision=precision)["perplexity"]
    return {"metric": "perplexity", "value": perplexity, "seconds": time.monotonic() - start, "weights_on": on,
            "features_shape": list(layers[0].shape), "loss": summary["train_sampled_softmax_loss"]}


def cove_run(device: torch.device) -> dict:
    rng = np.random.default_rng(1)
    vectors = SourceVectors([f"e{i}" for i in range(8)], np.eye(8, dtype=np.float32))
    start = time.monotonic()
    model, _, result = train_cove(copy_task(200, rng), copy_task(20, rng), copy_task(20, rng), vectors,
                                  CoVeConfig(hidden=16, layers=2, target_dim=8, dropout=0.1),
                                  CoVeTrainConfig(epochs=5, batch_size=16, lr=0.01, min_count=1, max_length=8,
                                                  beam_size=2, seed=0), log=lambda m: None, device=device)
    return {"metric": "test_bleu", "value": result.metrics["test_bleu"], "seconds": time.monotonic() - start,
            "weights_on": sorted({str(p.device) for p in model.parameters()})}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    device, cpu = resolve_device(args.device), torch.device("cpu")
    features = Path(tempfile.mkdtemp())
    rows, failed = [], False
    jobs = [(f"task {name}", lambda d, p, name=name: task_run(name, d, p, features / name)) for name in TASKS]
    jobs += [("biLM train/features/perplexity", bilm_paths), ("CoVe train/translate", lambda d, p: cove_run(d))]
    for label, job in jobs:
        for where, precision in [(cpu, "fp32"), (device, "fp32"), (device, "bf16")]:
            if label.startswith("CoVe") and precision == "bf16":
                continue                               # CoVe trains in fp32 (no --precision)
            try:
                row = {"what": label, "device": str(where), "precision": precision, **job(where, precision)}
                ok = all(on.startswith(where.type) for on in row["weights_on"])
                row["ok"] = ok
                failed |= not ok
            except Exception as err:   # noqa: BLE001  (report every part, then fail)
                row, failed = {"what": label, "device": str(where), "precision": precision, "ok": False,
                               "error": f"{type(err).__name__}: {err}"}, True
            rows.append(row)
            value = f"{row['metric']} {row['value']:.3f}" if "value" in row else row["error"][:120]
            print(f"{label:32s} {row['device']:7s} {precision:5s} {'ok ' if row['ok'] else 'FAIL'} "
                  f"{value} {row.get('seconds', 0):.1f} s", flush=True)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2) + "\n")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
