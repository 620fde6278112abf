"""Two CPU cores, many small runs: one run on 1 or 2 intra-op threads, and two runs side by side on
one thread each (what ``snakemake --cores 2`` would do with 1-thread jobs) against the same two runs
one after the other on two threads each (what ``dvc repro`` does today).

Each run is the real stage, ``python -m stages.train_run --threads T --run ID``, in a scratch
directory that links the repository's prepared ``data/`` (so the main job must have run) and holds
a copy of ``params.yaml`` with the runs' epochs set by ``--epochs``; the runs' outputs and MLflow
records stay in the scratch directory. Wall seconds per configuration, measured in this one
benchmark process, so the ratios compare like with like on the same machine and day:

* ``thread_speedup`` = run A on 1 thread / run A on 2 threads (> 1: the second thread helps);
* ``parallel_gain`` = A then B on 2 threads / A and B at once on 1 thread each (> 1: side by side wins).

A different thread count changes torch's float reductions, so 1-thread runs give other (equally
valid) numbers than the committed 2-thread ones: adopting them means re-running the runs.

Usage (from the repository root, after the main job):
    .venv/bin/python -m benchmarks.parallel_runs [--runs ner-baseline-s0 ner-elmo-s0] [--epochs 2]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]


def scratch(root: Path, runs: list[str], epochs: int) -> Path:
    """A working directory for the stages: ``data`` linked, ``params.yaml`` with fewer epochs."""
    params = yaml.safe_load((REPO / "params.yaml").read_text(encoding="utf-8"))
    tasks = {spec["task"] for job in params["runs"].values() for fam in job.values()
             for rid, spec in fam.items() if rid in runs}
    for task in tasks:
        params["tasks"][task]["trainer"]["epochs"] = epochs
    (root / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False), encoding="utf-8")
    (root / "data").symlink_to(REPO / "data")
    return root


def start(run_id: str, threads: int, cwd: Path) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": f"{REPO}{os.pathsep}{REPO / 'src'}", "MLFLOW_DISABLE_TELEMETRY": "true",
           "MLFLOW_TRACKING_URI": f"sqlite:///{cwd / 'mlflow.db'}"}
    env.pop("ELMO_MLFLOW_SPOOL", None)
    return subprocess.Popen([sys.executable, "-m", "stages.train_run", "--threads", str(threads), "--run", run_id],
                            cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def timed(batches: list[list[tuple[str, int]]], cwd: Path) -> float:
    """Wall seconds to run the batches one after the other, the runs of a batch at once."""
    begin = time.monotonic()
    for batch in batches:
        procs = [start(run_id, threads, cwd) for run_id, threads in batch]
        for proc in procs:
            _, err = proc.communicate()
            if proc.returncode != 0:
                raise SystemExit(f"stage failed:\n{err[-3000:]}")
    return time.monotonic() - begin


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", nargs=2, default=["ner-baseline-s0", "ner-elmo-s0"], metavar=("A", "B"))
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--output", type=Path, help="append the result as one JSON line")
    args = parser.parse_args(argv)
    a, b = args.runs
    with tempfile.TemporaryDirectory() as tmp:
        cwd = scratch(Path(tmp), [a, b], args.epochs)
        timed([[(a, 2)]], cwd)                                   # warm-up: page cache, MLflow store
        result = {"runs": [a, b], "epochs": args.epochs, "cpus": os.cpu_count(),
                  "a_2_threads_s": timed([[(a, 2)]], cwd), "a_1_thread_s": timed([[(a, 1)]], cwd),
                  "sequential_2_threads_s": timed([[(a, 2)], [(b, 2)]], cwd),
                  "parallel_1_thread_s": timed([[(a, 1), (b, 1)]], cwd)}
    result["thread_speedup"] = result["a_1_thread_s"] / result["a_2_threads_s"]
    result["parallel_gain"] = result["sequential_2_threads_s"] / result["parallel_1_thread_s"]
    print(json.dumps({k: round(v, 2) if isinstance(v, float) else v for k, v in result.items()}, indent=1))
    if args.output:
        with open(args.output, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(result) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
