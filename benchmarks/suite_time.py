"""The test suite's wall time as the README quotes it, with each group's share.

Runs the README's test command (``python -m pytest``) once, in one process, as CI does (the
end-to-end tests share the smoke pipeline's fixture only within one process), with a JUnit XML
report. Writes ``benchmarks/results/jobs/tests.json``: the wall time, the seconds of each group of
:data:`GROUPS` (a test's time includes its setup, so a shared fixture counts in the first test that
builds it), the date and the commit. Exits with pytest's status (a failing suite is not a
measurement). Nothing else should run on the machine meanwhile.

Usage (from the repository root): ``.venv/bin/python -m benchmarks.suite_time``
"""

from __future__ import annotations

import datetime
import json
import os
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ElementTree
from pathlib import Path

from elmo_repro.io import atomic_open

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "benchmarks" / "results" / "jobs" / "tests.json"
GROUPS = {   # a test belongs to the first group whose path prefix its file has
    "unit and workflow": ("tests/unit/", "tests/workflow/"),
    "smoke pipeline under DVC": ("tests/e2e/test_smoke_pipeline.py",),
    "a seventh task on the smoke build": ("tests/e2e/test_smoke_pipeline_new_task.py",),
    "Snakemake with an MLflow server": ("tests/e2e/test_snakemake_server.py",),
    "resume after SIGKILL": ("tests/e2e/test_resume_after_kill.py",),
    "released weights, no pretraining": ("tests/e2e/test_released_weights.py",),
}


def group_seconds(report: Path) -> dict[str, float]:
    """Seconds per group from a pytest JUnit XML report (``classname`` is the dotted module)."""
    seconds = dict.fromkeys(GROUPS, 0.0)
    for case in ElementTree.parse(report).iter("testcase"):
        path = case.get("classname", "").replace(".", "/")
        # a file prefix names that module exactly (test_smoke_pipeline is not test_smoke_pipeline_new_task)
        group = next((name for name, prefixes in GROUPS.items()
                      if any(path == p.removesuffix(".py") if p.endswith(".py") else path.startswith(p)
                             for p in prefixes)), None)
        if group is None:
            raise SystemExit(f"{report}: test {case.get('classname')}::{case.get('name')} is in no group of GROUPS")
        seconds[group] += float(case.get("time", 0.0))
    return {name: round(value, 1) for name, value in seconds.items()}


def machine() -> str:
    """The CPU the suite ran on, as the README names machines: cores, vendor model, AVX-512 or not."""
    info = Path("/proc/cpuinfo").read_text(encoding="utf-8") if Path("/proc/cpuinfo").is_file() else ""
    model = next((line.split(":", 1)[1].strip() for line in info.splitlines() if line.startswith("model name")), "")
    kind = "AMD EPYC" if "EPYC" in model else "Intel Xeon" if "Xeon" in model else model or "unknown CPU"
    avx512 = " with AVX-512" if " avx512f" in info else ", no AVX-512"
    return f"{os.cpu_count()}-core {kind}{avx512}"


def main() -> int:
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True).stdout.strip()
    with tempfile.TemporaryDirectory() as scratch:
        report = Path(scratch) / "report.xml"
        start = time.monotonic()
        status = subprocess.run([sys.executable, "-m", "pytest", "-q", f"--junitxml={report}"], cwd=REPO).returncode
        wall = round(time.monotonic() - start, 1)
        if status:
            return status
        groups = group_seconds(report)
    record = {"measured": datetime.date.today().isoformat(), "git_commit": commit, "machine": machine(),
              "wall_s": wall, "groups": groups}
    with atomic_open(OUT) as handle:              # the project's atomic write, not a second copy
        handle.write(json.dumps(record, indent=1) + "\n")
    print(f"tests: {wall:.0f} s wall; " + ", ".join(f"{name} {s:.0f} s" for name, s in groups.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
