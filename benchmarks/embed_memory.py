"""Inference memory and throughput of the ELMo API (``ElmoEmbedder``) at the paper's size, CPU.

Memory: the peak-RSS growth of one ``embed_sentence`` call of N tokens of real 1B Word text over
the RSS just before it (``/proc/self/clear_refs`` resets the high-water mark), after a warm-up
call, with the LSTM weights' gate reordering

* cached: as the library does it, once per model (the warm-up call builds the copy; later
  calls reuse it), and
* per call: the copy dropped before every call, which is what every call did before (the
  reference, in the same process).

The first call's own growth (the reordered copy of all LSTM matrices, ~290 MB at the paper's
size, held for the model's life) is reported apart.

Throughput: ``embed_sentences`` over the first 256 sentences of the 1B Word held-out test file
(tokens/s, sentence boundaries not counted), in input-order batches (``lookahead = batch_size``)
and length-sorted within a look-ahead window, in the same process.

Usage (from the repository root; the paper-size biLM has random weights):
    .venv/bin/python -m benchmarks.embed_memory --threads 2 --output benchmarks/results/embed_memory.jsonl
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "src"))

import torch  # noqa: E402

from benchmarks.bilm_speed import TEXT, peak_mib, reset_peak  # noqa: E402
from elmo_repro.bilm.lstm import _CACHE  # noqa: E402
from elmo_repro.bilm.model import BiLM, BiLMConfig  # noqa: E402
from elmo_repro.elmo.embedder import ElmoEmbedder  # noqa: E402
from workflow.profile import render  # noqa: E402


def rss_mib() -> float:
    """Current resident set size (MiB), from /proc/self/statm."""
    pages = int(Path("/proc/self/statm").read_text().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


def drop_reordered_copies(model: BiLM) -> None:
    """Forget the cached run-time LSTM weights (the behaviour before the cache, for reference)."""
    for stack in (model.forward_lstm, model.backward_lstm):
        for cell in stack.layers:
            cell.__dict__.pop(_CACHE, None)


def call_growth(embedder: ElmoEmbedder, tokens: list[str]) -> tuple[float, float]:
    """(peak-RSS growth in MiB over the RSS before the call, seconds) of one ``embed_sentence``."""
    gc.collect()
    reset_peak("cpu")
    before = rss_mib()
    start = time.perf_counter()
    embedder.embed_sentence(tokens)
    return peak_mib("cpu") - before, time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mirror", type=Path, default=REPO / ".." / "shared" / "data")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--lengths", default="512,2048", help="tokens per call for the memory rows")
    parser.add_argument("--sentences", type=int, default=256)
    parser.add_argument("--output", type=Path, help="append the rows as JSON lines here")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    lines = [line.split() for line in (args.mirror / TEXT).read_text(encoding="utf-8").splitlines() if line.strip()]
    stream = [t for line in lines for t in line]
    torch.manual_seed(0)
    model = BiLM(BiLMConfig.from_options(render("paper")["bilm"], n_tokens_vocab=0)).eval()
    embedder = ElmoEmbedder(model)
    rows = []
    print(f"# {os.cpu_count()} CPUs, torch {torch.__version__}, {args.threads} threads; paper-size biLM "
          f"({sum(p.numel() for p in model.parameters()) / 1e6:.1f}M parameters, random weights)", flush=True)

    first, _ = call_growth(embedder, stream[:8])
    rows.append({"table": "embed_memory", "case": "first call (8 tokens): builds the reordered LSTM copy",
                 "tokens": 8, "peak_growth_mib": first})
    for n in (int(x) for x in args.lengths.split(",")):
        for mode in ("cached", "per call"):
            if mode == "per call":
                drop_reordered_copies(model)
            else:
                embedder.embed_sentence(stream[:8])                # the copy exists before the call
            growth, seconds = call_growth(embedder, stream[:n])
            rows.append({"table": "embed_memory", "case": f"{n} tokens, reordering {mode}", "tokens": n,
                         "peak_growth_mib": growth, "tokens_per_s": n / seconds})
            print(f"  {rows[-1]['case']}: {growth:.0f} MiB, {n / seconds:.0f} tokens/s", flush=True)

    sentences = lines[:args.sentences]
    n_tokens = sum(len(s) for s in sentences)
    embedder.embed_sentence(stream[:8])
    for batch, lookahead in ((32, 32), (64, 64), (32, 256), (64, 256), (64, 512)):
        start = time.perf_counter()
        for _ in embedder.embed_sentences(sentences, batch_size=batch, lookahead=lookahead):
            pass
        seconds = time.perf_counter() - start
        order = "input order" if lookahead <= batch else f"sorted within {lookahead}"
        rows.append({"table": "embed_throughput", "batch_size": batch, "lookahead": lookahead, "order": order,
                     "sentences": len(sentences), "tokens": n_tokens, "tokens_per_s": n_tokens / seconds})
        print(f"  batches of {batch}, {order}: {n_tokens / seconds:.0f} tokens/s", flush=True)

    print("\n| case | peak-RSS growth (MiB) | tokens/s |\n|---|---|---|")
    for r in rows:
        if r["table"] == "embed_memory":
            speed = f"{r['tokens_per_s']:.0f}" if "tokens_per_s" in r else ""
            print(f"| {r['case']} | {r['peak_growth_mib']:.0f} | {speed} |")
    print(f"\n| batches | order | tokens/s ({len(sentences)} sentences, {n_tokens} tokens) |\n|---|---|---|")
    for r in rows:
        if r["table"] == "embed_throughput":
            print(f"| {r['batch_size']} | {r['order']} | {r['tokens_per_s']:.0f} |")
    if args.output:
        with args.output.open("a", encoding="utf-8") as handle:
            for r in rows:
                handle.write(json.dumps({**r, "threads": args.threads}) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
