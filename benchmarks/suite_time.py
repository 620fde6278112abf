"""The test suite's wall time, group by group, as the README quotes it.

Runs ``pytest`` on each group of :data:`GROUPS` in turn (one process each, nothing else should run
on the machine) and writes ``benchmarks/results/jobs/tests.json``: seconds per group, the date and
the commit. Exits with pytest's first non-zero status (a failing suite is not a measurement).

Usage (from the repository root): ``.venv/bin/python -m benchmarks.suite_time``
"""

from __future__ import annotations

import datetime
import json
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "benchmarks" / "results" / "jobs" / "tests.json"
GROUPS = {
    "unit and workflow": ["tests/unit", "tests/workflow"],
    "smoke pipeline under DVC": ["tests/e2e/test_smoke_pipeline.py"],
    "Snakemake with an MLflow server": ["tests/e2e/test_snakemake_server.py"],
    "resume after SIGKILL": ["tests/e2e/test_resume_after_kill.py"],
}


def main() -> int:
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True).stdout.strip()
    seconds = {}
    for name, paths in GROUPS.items():
        start = time.monotonic()
        status = subprocess.run([sys.executable, "-m", "pytest", "-q", *paths], cwd=REPO).returncode
        seconds[name] = round(time.monotonic() - start, 1)
        print(f"{name}: {seconds[name]:.0f} s (exit {status})")
        if status:
            return status
    record = {"measured": datetime.date.today().isoformat(), "git_commit": commit, "groups": seconds}
    OUT.parent.mkdir(parents=True, exist_ok=True)
    tmp = OUT.with_suffix(".tmp")
    tmp.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    tmp.replace(OUT)
    return 0


if __name__ == "__main__":
    sys.exit(main())
