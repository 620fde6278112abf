"""biLM speed: our implementation (``elmo_repro.bilm``) against the plain per-time-step reference
(``elmo_repro.bilm.reference``), on real sentences, in one process.

Three modes, each for the ``tiny`` and the ``paper`` profile's biLM (``workflow/profiles``):

* extract: ``BiLM.layers`` (stateless ELMo feature extraction) over length-bucketed batches of
  sentences, as ``elmo.features.embed_sentences`` batches them; tokens = biLM positions that are
  not padding (words + ``<S>``/``</S>``).
* train: ``train.py``'s step -- token layer over the batch's distinct types, both directions with
  carried states and dropout, sampled softmax, backward, gradient clipping, Adagrad; tokens =
  2 x batch x unroll steps (both directions, as train.py's tokens_per_second). Both
  implementations update the softmax sparsely, as train.py does.
* update: ours' training step with the sparse softmax update (train.py's; "ours" columns) against
  the same step with the dense one ("reference" columns: a (V, D) gradient zeroed, summed,
  clipped and stepped by Adagrad in full), with a softmax of ``--softmax-rows`` rows (default: the
  paper profile's 793,471, the released vocabulary; tiny: the text's own). Targets are the text's
  words; the rows past its vocabulary stand for the rare words a paper-size vocabulary adds (the
  sampler draws them as negatives). Both run from the same weights on the same batches and
  negatives, and the largest |sparse - dense| weight difference after the timed steps is
  printed (0 on a CPU: the two updates are bit-identical there). On a CPU the dense run's peak
  RSS includes the sparse run's final weights, kept for that comparison.

Both implementations get the same batches (the same length buckets, the same LM streams and
negative samples) from the same starting weights. The reference differs only where it is meant
to: the input-to-gate product computed per time step, nothing fused, hoisted or batched across
directions, the char CNN over all 50 slots of a word, and (extract) over every position instead
of once per distinct token.

FLOPs per token are analytic model FLOPs (a multiply-add = 2), elementwise work not counted:

    char CNN   2 * char_dim * sum_filters(n_w * w * (50 - w + 1))
    highway    n_highway * 2 * 2 * F^2                      (F = sum of filter maps)
    projection 2 * F * P
    LSTM layer 2 * (P + P) * 4C + 2 * C * P                 (gates from [x; h], then W_P)
    softmax    2 * P * (S + 1)                              (S sampled negatives + the target)

    extract = token layer + 2 directions * L * LSTM layer
    train   = 3 * (token layer + L * LSTM layer + softmax)   per direction-token (fwd + bwd ~ 3x)

"achieved" = FLOPs/token x tokens/s; it counts the token layer per token over all 50 slots
although ours computes it per distinct token and over each word's content (model-FLOPs
convention), and does not count padding. "executed" counts what ours actually computes instead:
the token layer once per distinct word (extraction) or type (training step) over the slots it
convolves, and the LSTMs over every position, padding included. "% matmul" compares
it with a square float32 matmul measured in the same process.

Usage:
    .venv/bin/python benchmarks/bilm_speed.py --quick          # < 2 min on a 2-core CPU
    .venv/bin/python benchmarks/bilm_speed.py                  # paper size: several minutes on CPU
    .venv/bin/python benchmarks/bilm_speed.py --device cuda --bf16
    .venv/bin/python benchmarks/bilm_speed.py --device cuda --configs paper --modes update
"""

from __future__ import annotations

import argparse
import ctypes
import gc
import json
import os
import resource
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))                       # workflow.profile
sys.path.insert(0, str(REPO / "src"))               # elmo_repro, when not installed

import numpy as np  # noqa: E402
import torch  # noqa: E402

from elmo_repro.bilm.char_cnn import CharCNNTokenEmbedder, unique_rows  # noqa: E402
from elmo_repro.bilm.model import BiLM, BiLMConfig  # noqa: E402
from elmo_repro.bilm.reference import (reference_direction_hidden, reference_layers,  # noqa: E402
                                       reference_token_layer)
from elmo_repro.bilm.sampled_softmax import SoftmaxRows  # noqa: E402
from elmo_repro.data.character_ids import batch_to_char_ids  # noqa: E402
from elmo_repro.data.lm_batches import LMStream, TypeTable  # noqa: E402
from elmo_repro.data.vocabulary import Vocabulary, count_tokens  # noqa: E402
from workflow.profile import render  # noqa: E402

TEXT = "lm1b_heldout_subset/1b_benchmark.test.tokens"
PAPER_VOCAB = 793_471      # the released biLM's softmax rows (``paper`` profile, min_count 3 on 1B Word)


@dataclass
class Plan:
    """How much of a configuration to run."""

    extract_batch: int     # sentences per extraction batch
    extract_batches: int   # timed extraction batches
    train_batch: int       # rows of a training batch
    train_steps: int       # timed training steps (after one warm-up step)


def plans(quick: bool, device: str) -> dict[str, Plan]:
    if device == "cuda":
        return {"tiny": Plan(64, 16, 32, 10), "paper": Plan(128, 4, 128, 3)}
    if quick:
        return {"tiny": Plan(64, 4, 32, 3), "paper": Plan(16, 1, 8, 1)}
    return {"tiny": Plan(64, 16, 32, 10), "paper": Plan(128, 2, 128, 2)}


# ---- FLOPs -----------------------------------------------------------------------------------
def token_dense_flops(cfg: BiLMConfig) -> int:
    """Highway layers and projection of one token."""
    maps = sum(n for _, n in cfg.filters)
    return cfg.n_highway * 2 * 2 * maps * maps + 2 * maps * cfg.projection_dim


def token_layer_flops(cfg: BiLMConfig) -> int:
    width = cfg.max_characters_per_token
    cnn = 2 * cfg.char_dim * sum(n * w * (width - w + 1) for w, n in cfg.filters)
    return cnn + token_dense_flops(cfg)


def lstm_layer_flops(cfg: BiLMConfig) -> int:
    p, c = cfg.projection_dim, cfg.cell_dim
    return 2 * (p + p) * 4 * c + 2 * c * p


def extract_flops(cfg: BiLMConfig) -> int:
    return token_layer_flops(cfg) + 2 * cfg.n_layers * lstm_layer_flops(cfg)


def train_flops(cfg: BiLMConfig, negatives: int) -> int:
    softmax = 2 * cfg.projection_dim * (negatives + 1)
    return 3 * (token_layer_flops(cfg) + cfg.n_layers * lstm_layer_flops(cfg) + softmax)


def token_layer_executed(cfg: BiLMConfig, embedder: CharCNNTokenEmbedder, words: torch.Tensor) -> int:
    """FLOPs ours actually spends on the token layer of ``words`` (N, 50) distinct char-id rows:
    each word's convolutions over only its ``slot_widths`` leading slots."""
    widths = embedder.slot_widths(words)
    cnn = sum(2 * cfg.char_dim * n * w * int((widths - w + 1).clamp(min=0).sum()) for w, n in cfg.filters)
    return cnn + len(words) * token_dense_flops(cfg)


def extract_executed(cfg: BiLMConfig, model: BiLM, batches: list[torch.Tensor]) -> int:
    """FLOPs ours spends on ``batches``: the token layer once per distinct word (``unique_rows``),
    the LSTMs over every position, padding included."""
    total = 0
    for ids in batches:
        flat = ids.reshape(-1, ids.size(-1))
        first, _ = unique_rows(flat)
        total += token_layer_executed(cfg, model.token_embedder, flat[first])
        total += flat.size(0) * 2 * cfg.n_layers * lstm_layer_flops(cfg)
    return total


def train_executed(cfg: BiLMConfig, negatives: int, model: BiLM, data: "TrainData", plan: Plan,
                   steps: int) -> int:
    """FLOPs ours spends on the timed training steps (x3 for forward + backward): the token layer
    once per distinct type of each step, the LSTMs and the sampled softmax for every position."""
    streams = data.streams(plan.train_batch, steps)
    per_position = cfg.n_layers * lstm_layer_flops(cfg) + 2 * cfg.projection_dim * (negatives + 1)
    total = 0
    for k in range(plan.train_steps + 1):
        (in_f, _), (in_b, _) = next(streams[0]), next(streams[1])
        if k == 0:
            continue                                                           # the warm-up step
        unique = np.unique(np.stack([in_f, in_b]))
        total += 3 * token_layer_executed(cfg, model.token_embedder, data.char_ids[torch.from_numpy(unique)].cpu())
        total += 3 * 2 * in_f.size * per_position
    return total


# ---- measurement helpers ---------------------------------------------------------------------
def sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def reset_peak(device: str) -> bool:
    """Start a new peak-memory window; False where the process peak cannot be reset."""
    gc.collect()
    if device == "cuda":
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
        return True
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)     # hand freed heap back so RSS means "in use"
    except (OSError, AttributeError):
        pass
    try:
        Path("/proc/self/clear_refs").write_text("5")  # Linux: reset the RSS high-water mark
        return True
    except OSError:
        return False


def peak_mib(device: str) -> float:
    if device == "cuda":
        return torch.cuda.max_memory_allocated() / 2**20
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024   # kB on Linux


def matmul_rate(device: str, n: int) -> float:
    """FLOP/s of a square float32 matmul (best of 5)."""
    a, b = torch.randn(n, n, device=device), torch.randn(n, n, device=device)
    for _ in range(2):
        a @ b
    sync(device)
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        a @ b
        sync(device)
        best = min(best, time.perf_counter() - start)
    return 2 * n ** 3 / best


def timed(device: str, fn: Callable[[], int]) -> tuple[float, int, float]:
    """Run ``fn`` (returns tokens done) in a fresh peak-memory window: (seconds, tokens, MiB)."""
    reset_peak(device)
    sync(device)
    start = time.perf_counter()
    tokens = fn()
    sync(device)
    return time.perf_counter() - start, tokens, peak_mib(device)


# ---- extraction ------------------------------------------------------------------------------
def extraction_batches(sentences: list[list[str]], plan: Plan, device: str) -> list[torch.Tensor]:
    """Length-bucketed batches as ``embed_sentences`` makes them over the whole file (sorted by
    length, chunked), of which ``plan.extract_batches`` evenly spaced ones are timed: batch
    lengths follow the file's length distribution, with as little padding as a full run has."""
    order = sorted(range(len(sentences)), key=lambda i: len(sentences[i]))
    n_batches = len(order) // plan.extract_batch
    picks = np.linspace(0, n_batches - 1, plan.extract_batches + 2).round().astype(int)[1:-1]
    return [torch.from_numpy(batch_to_char_ids(
                [sentences[i] for i in order[k * plan.extract_batch:(k + 1) * plan.extract_batch]])).to(device)
            for k in picks]


def bench_extract(model: BiLM, batches: list[torch.Tensor], device: str, impl: str,
                  bf16: bool = False) -> tuple[float, int, float]:
    layers = {"ours": lambda ids: model.layers(ids, bf16=bf16),
              "reference": lambda ids: reference_layers(model, ids)}[impl]
    with torch.no_grad():
        layers(batches[0][:4])                                                # warm-up
        sync(device)

        def run() -> int:
            tokens = 0
            for ids in batches:
                layers(ids)
                tokens += int((ids > 0).any(-1).sum())
            return tokens
        return timed(device, run)


# ---- training --------------------------------------------------------------------------------
class TrainData:
    """The LM streams, type table and vocabulary of train.py, built once per batch size."""

    def __init__(self, sentences: list[list[str]], device: str):
        counts, n = count_tokens(sentences)
        self.vocab = Vocabulary.build(counts, n)
        self.table, self.encoded = TypeTable.build(sentences, self.vocab)
        self.char_ids = torch.from_numpy(self.table.char_ids).to(device)
        self.vocab_ids = torch.from_numpy(self.table.vocab_ids).to(device)

    def streams(self, batch: int, steps: int) -> list[LMStream]:
        return [LMStream(self.encoded, batch, steps, seed=d, reverse=bool(d)) for d in (0, 1)]


def bench_train(cfg: BiLMConfig, pretrain: dict, data: TrainData, plan: Plan, device: str,
                impl: str, sparse: bool = True, final: dict | None = None) -> tuple[float, int, float]:
    """Time train.py's step (``impl``: "ours" or "reference" LSTMs and token layer; ``sparse``:
    the sparse or the dense softmax update). ``final``, if given, receives the weights after the
    timed steps (on the CPU)."""
    steps, negatives = int(pretrain["unroll_steps"]), int(pretrain["n_negative_samples"])
    torch.manual_seed(0)
    model = BiLM(cfg).to(device).train()
    optimizer = torch.optim.Adagrad(model.parameters(), lr=float(pretrain["learning_rate"]),
                                    initial_accumulator_value=float(pretrain["initial_accumulator"]))
    hidden_fn = {"ours": lambda m, x, d, s: m.direction_hidden(x, d, s),
                 "reference": reference_direction_hidden}[impl]
    token_fn = {"ours": lambda m, ids: m.token_embedder(ids),
                "reference": lambda m, ids: reference_token_layer(m.token_embedder, ids)}[impl]
    streams = data.streams(plan.train_batch, steps)
    sampler = torch.Generator().manual_seed(7919)
    states: list = [None, None]
    params = list(model.parameters())
    sparse = sparse and negatives < model.softmax.vocab_size                  # else the full softmax

    def step() -> int:
        (in_f, tg_f), (in_b, tg_b) = next(streams[0]), next(streams[1])
        inputs = torch.from_numpy(np.stack([in_f, in_b])).to(device)
        flat = data.vocab_ids[torch.from_numpy(np.stack([tg_f, tg_b])).reshape(2, -1).to(device)]
        drawn, rows, grads = [None, None], None, params
        if sparse:                                                            # as train.py
            drawn = [model.softmax.draw_negatives(negatives, sampler) for _ in range(2)]
            rows = SoftmaxRows.gather(model.softmax, torch.cat([flat.reshape(-1), drawn[0][0], drawn[1][0]]))
            grads = [rows.weight if p is model.softmax.weight else p for p in params]
        unique, inverse = torch.unique(inputs, return_inverse=True)
        tokens = token_fn(model, data.char_ids[unique])[inverse]               # (2, B, T, P)
        loss = 0.0
        for d in range(2):
            hidden, states[d] = hidden_fn(model, tokens[d], bool(d), states[d])
            loss = loss + 0.5 * model.softmax.sampled_loss(hidden.reshape(-1, hidden.size(-1)), flat[d],
                                                            negatives, sampler, negatives=drawn[d], rows=rows)
        optimizer.zero_grad(set_to_none=True)
        (loss * steps).backward()
        torch.nn.utils.clip_grad_norm_(grads, float(pretrain["grad_clip"]))
        optimizer.step()
        if rows is not None:
            rows.adagrad_step(optimizer, model.softmax.weight)
        for d in (0, 1):
            states[d] = [(h.detach(), c.detach()) for h, c in states[d]]
        return 2 * plan.train_batch * steps

    step()                                                                     # warm-up
    result = timed(device, lambda: sum(step() for _ in range(plan.train_steps)))
    if final is not None:
        final.update({k: v.detach().cpu() for k, v in model.state_dict().items()})
    return result


# ---- main ------------------------------------------------------------------------------------
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mirror", type=Path, default=REPO / ".." / "shared" / "data",
                        help="data mirror holding " + TEXT + " (default: ../shared/data from the repo root)")
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    parser.add_argument("--quick", action="store_true",
                        help="fewer batches and small paper-size batches (< 2 min on a 2-core CPU)")
    parser.add_argument("--configs", default="tiny,paper", help="comma-separated profiles (tiny, paper)")
    parser.add_argument("--modes", default="extract,train",
                        help="comma-separated: extract, train, update (sparse vs dense softmax update)")
    parser.add_argument("--softmax-rows", type=int, default=0,
                        help="update mode: softmax rows (default: 793,471 for paper, the text's vocabulary "
                             "for tiny); at least the text's vocabulary")
    parser.add_argument("--threads", type=int, default=0, help="torch intra-op threads (0: torch's default)")
    parser.add_argument("--matmul-size", type=int, default=0,
                        help="side of the square float32 matmul (default 2048 on CPU, 8192 on CUDA)")
    parser.add_argument("--bf16", action="store_true",
                        help="also time ours with BiLM.layers(bf16=True) (autocast; meant for CUDA)")
    parser.add_argument("--only-ours", action="store_true",
                        help="skip the reference (paper size at full batch without doubling the run time)")
    parser.add_argument("--json", type=Path, help="also write the rows as JSON here")
    args = parser.parse_args(argv)

    if args.device == "cuda":
        if not torch.cuda.is_available():
            parser.error("--device cuda: no CUDA device")
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")         # deterministic cuBLAS
    if args.threads:
        torch.set_num_threads(args.threads)
    text = args.mirror / TEXT
    if not text.is_file():
        parser.error(f"{text} not found (set --mirror)")
    sentences = [line.split() for line in text.read_text(encoding="utf-8").splitlines() if line.strip()]
    device, plan_of = args.device, plans(args.quick, args.device)
    started = time.perf_counter()

    rate = matmul_rate(device, args.matmul_size or (8192 if device == "cuda" else 2048))
    where = torch.cuda.get_device_name() if device == "cuda" else f"{os.cpu_count()} CPUs"
    load = f", load average {os.getloadavg()[0]:.1f}" if hasattr(os, "getloadavg") else ""
    print(f"# {where}, torch {torch.__version__}, {torch.get_num_threads()} threads{load}; "
          f"float32 matmul {rate / 1e9:.1f} GFLOP/s; {'quick' if args.quick else 'full'} run", flush=True)

    impls = ("ours",) if args.only_ours else ("ours", "reference")
    rows = []
    data = TrainData(sentences, device) if {"train", "update"} & set(args.modes.split(",")) else None
    if args.softmax_rows and data is not None and args.softmax_rows < len(data.vocab):
        parser.error(f"--softmax-rows {args.softmax_rows}: the text's vocabulary alone has {len(data.vocab)} words")
    for name in args.configs.split(","):
        params, plan = render(name), plan_of[name]
        cfg = BiLMConfig.from_options(params["bilm"])
        for mode in args.modes.split(","):
            if mode == "extract":
                torch.manual_seed(0)
                model = BiLM(cfg).to(device).eval()
                batches = extraction_batches(sentences, plan, device)
                results = {impl: bench_extract(model, batches, device, impl) for impl in impls}
                if args.bf16:
                    results["bf16"] = bench_extract(model, batches, device, "ours", bf16=True)
                flops = extract_flops(cfg)
                executed = extract_executed(cfg, model, [b.cpu() for b in batches])
                shape = f"{len(batches)} batches of {plan.extract_batch} sentences"
                del model
            elif mode == "update":
                pretrain = params["pretrain"]
                vocab_rows = args.softmax_rows or (PAPER_VOCAB if name == "paper" else len(data.vocab))
                tcfg = BiLMConfig.from_options(params["bilm"], n_tokens_vocab=vocab_rows)
                previous = torch.are_deterministic_algorithms_enabled()
                torch.use_deterministic_algorithms(True, warn_only=device == "cuda")   # as train.py
                finals: dict[str, dict] = {"ours": {}, "reference": {}}
                try:   # "reference" here is ours with the dense update
                    results = {impl: bench_train(tcfg, pretrain, data, plan, device, "ours", sparse=impl == "ours",
                                                 final=finals[impl]) for impl in ("ours", "reference")}
                finally:
                    torch.use_deterministic_algorithms(previous)
                update_diff = max(float((finals["ours"][k] - v).abs().max()) for k, v in finals["reference"].items())
                del finals
                flops = train_flops(cfg, int(pretrain["n_negative_samples"]))
                with torch.device("meta"):
                    shapes = BiLM(cfg)
                executed = train_executed(cfg, int(pretrain["n_negative_samples"]), shapes, data, plan,
                                          int(pretrain["unroll_steps"]))
                shape = (f"{plan.train_steps} steps of {plan.train_batch}x{pretrain['unroll_steps']}, "
                         f"{pretrain['n_negative_samples']} negatives, softmax {vocab_rows:,} rows; ours: sparse "
                         f"update, reference: dense; max |sparse - dense| weight after them {update_diff:.3g}")
            else:
                pretrain = params["pretrain"]
                tcfg = BiLMConfig.from_options(params["bilm"], n_tokens_vocab=len(data.vocab))
                previous = torch.are_deterministic_algorithms_enabled()
                torch.use_deterministic_algorithms(True, warn_only=device == "cuda")   # as train.py
                try:
                    results = {impl: bench_train(tcfg, pretrain, data, plan, device, impl) for impl in impls}
                finally:
                    torch.use_deterministic_algorithms(previous)
                flops = train_flops(cfg, int(pretrain["n_negative_samples"]))
                with torch.device("meta"):         # only its slot widths are needed: no weights
                    shapes = BiLM(cfg)
                executed = train_executed(cfg, int(pretrain["n_negative_samples"]), shapes, data, plan,
                                          int(pretrain["unroll_steps"]))
                shape = (f"{plan.train_steps} steps of {plan.train_batch}x{pretrain['unroll_steps']}, "
                         f"{pretrain['n_negative_samples']} negatives, vocabulary {len(data.vocab)}")
            speed = {impl: tokens / seconds for impl, (seconds, tokens, _) in results.items()}
            ref = "reference" in results
            row = {"config": name, "mode": mode, "shape": shape,
                   "ours_tok_s": speed["ours"], "ref_tok_s": speed["reference"] if ref else None,
                   "ratio": speed["ours"] / speed["reference"] if ref else None, "flops_per_token": flops,
                   "achieved_flop_s": flops * speed["ours"], "matmul_fraction": flops * speed["ours"] / rate,
                   "executed_flop_s": executed / results["ours"][0],
                   "executed_fraction": executed / results["ours"][0] / rate,
                   "ours_peak_mib": results["ours"][2], "ref_peak_mib": results["reference"][2] if ref else None}
            if "bf16" in results:
                row["bf16_tok_s"] = speed["bf16"]
            rows.append(row)
            print(f"#   {name} {mode} done ({shape}), {time.perf_counter() - started:.0f} s", flush=True)

    memory = "peak GPU MiB" if device == "cuda" else "peak RSS MiB"
    bf16 = any("bf16_tok_s" in r for r in rows)
    header = ["config", "mode", "ours tok/s", "reference tok/s", "ours/ref", "GFLOP/token",
              "ours GFLOP/s", "% of matmul", "executed GFLOP/s", "% (executed)", f"{memory} ours / ref"] + (["ours bf16 tok/s"] if bf16 else [])
    print()
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for r in rows:
        ref = r["ref_tok_s"] is not None
        cells = [r["config"], r["mode"], f"{r['ours_tok_s']:,.0f}", f"{r['ref_tok_s']:,.0f}" if ref else "-",
                 f"{r['ratio']:.2f}x" if ref else "-", f"{r['flops_per_token'] / 1e9:.4f}",
                 f"{r['achieved_flop_s'] / 1e9:.1f}", f"{100 * r['matmul_fraction']:.0f}%",
                 f"{r['executed_flop_s'] / 1e9:.1f}", f"{100 * r['executed_fraction']:.0f}%",
                 f"{r['ours_peak_mib']:,.0f} / " + (f"{r['ref_peak_mib']:,.0f}" if ref else "-")]
        if bf16:
            cells.append(f"{r['bf16_tok_s']:,.0f}" if "bf16_tok_s" in r else "")
        print("| " + " | ".join(cells) + " |")
    print(f"\nmatmul: {rate / 1e9:.1f} GFLOP/s ({args.matmul_size or (8192 if device == 'cuda' else 2048)}^2 "
          f"float32); total {time.perf_counter() - started:.0f} s")
    for r in rows:
        print(f"  {r['config']} {r['mode']}: {r['shape']}")
    if args.json:
        args.json.write_text(json.dumps({"device": where, "threads": torch.get_num_threads(),
                                         "matmul_flop_s": rate, "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
