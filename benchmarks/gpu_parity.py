"""Parity with the original ELMo on a GPU: the released-format fixture's outputs (allennlp's test
fixtures, computed by bilm-tf) against ours on ``--device``, in fp32 with the bounds the CPU tests
use (``tests/unit/fp_bounds.py``) and, for information, under bf16 autocast and with TF32 allowed.

``python -m benchmarks.gpu_parity --device cuda [--mirror DIR] [--json FILE]`` prints one row per
check (max |ours - bilm-tf|, the fp32 bound, pass/fail) and exits 1 when an fp32 check fails.
Part of ``benchmarks/gpu_check.sh``; the same checks run on the CPU in ``tests/unit/test_released.py``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from pathlib import Path

import h5py
import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "unit"))            # the float32 bounds of the CPU tests
from fp_bounds import U32, bilm_typical_bound, token_roundings  # noqa: E402

from elmo_repro.bilm.released import load_released  # noqa: E402
from elmo_repro.bilm.stateful import StatefulBiLM  # noqa: E402
from elmo_repro.data.character_ids import batch_to_char_ids, token_to_char_ids  # noqa: E402
from elmo_repro.data.vocabulary import Vocabulary  # noqa: E402


def checks(fixtures: Path, device: torch.device, mode: str) -> list[dict]:
    """Token layer and stateful top layer against the fixtures; ``mode``: fp32, tf32 or bf16."""
    torch.backends.cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = mode == "tf32"
    autocast = (torch.autocast(device.type, dtype=torch.bfloat16) if mode == "bf16" else contextlib.nullcontext())
    model = load_released(fixtures / "options.json", fixtures / "lm_weights.hdf5").to(device)
    rows = []
    words = Vocabulary.load(fixtures / "vocab_test.txt").tokens
    with h5py.File(fixtures / "elmo_token_embeddings.hdf5", "r") as handle:
        expected = handle["embedding"][()]
    char_ids = torch.tensor([token_to_char_ids(w) for w in words], device=device)
    with torch.no_grad(), autocast:
        actual = model.token_embedder(char_ids).float().cpu().numpy()
    bound = 2 * token_roundings(model.config) * U32 * np.abs(expected).max()
    rows.append({"check": "token layer", "mode": mode, "max_abs_diff": float(np.abs(actual - expected).max()),
                 "fp32_bound": float(bound)})

    sentences = json.loads((fixtures / "sentences.json").read_text(encoding="utf-8"))
    reference = []
    for k in range(len(sentences)):
        with h5py.File(fixtures / f"lm_embeddings_{k}.hdf5", "r") as handle:
            reference.append([np.concatenate(handle[str(i)][()], axis=-1) for i in range(len(sentences[k]))])
    stateful, steps, worst, bound = StatefulBiLM(model), [0] * len(sentences), 0.0, 0.0
    for i in range(len(sentences[0])):
        batch = [sentences[k][i].split() for k in range(len(sentences))]
        with torch.no_grad(), autocast:
            layers = stateful(torch.from_numpy(batch_to_char_ids(batch)).to(device)).float().cpu()
        for k, tokens in enumerate(batch):
            steps[k] += len(tokens) + 2
            diff = np.abs(layers[k, 2, 1:len(tokens) + 1].numpy() - reference[k][i]).max()
            limit = 2 * bilm_typical_bound(model.config, steps[k], np.abs(reference[k][i]).max())
            if diff / limit > worst / max(bound, 1e-30) or not bound:
                worst, bound = float(diff), float(limit)
    rows.append({"check": "stateful top layer", "mode": mode, "max_abs_diff": worst, "fp32_bound": bound})
    for row in rows:
        row["passed"] = row["max_abs_diff"] <= row["fp32_bound"] if mode == "fp32" else None
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--mirror", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    device = torch.device(args.device)
    fixtures = args.mirror / "elmo_test_fixtures"
    modes = ["fp32", "tf32", "bf16"] if device.type == "cuda" else ["fp32"]
    rows = [row for mode in modes for row in checks(fixtures, device, mode)]
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"
    print(f"device: {name}")
    print(f"{'check':<20} {'mode':<5} {'max |ours - bilm-tf|':>22} {'fp32 bound':>11}  result")
    for row in rows:
        result = {True: "pass", False: "FAIL", None: "(information)"}[row["passed"]]
        print(f"{row['check']:<20} {row['mode']:<5} {row['max_abs_diff']:>22.3e} {row['fp32_bound']:>11.3e}  {result}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"device": name, "rows": rows}, indent=2) + "\n", encoding="utf-8")
    return 0 if all(row["passed"] is not False for row in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
