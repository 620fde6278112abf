"""Helpers of the end-to-end tests: a temporary copy of the repository on the smoke profile
(so the committed tiny profile's dvc.lock and results are never touched), run through `dvc repro`."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
MIRROR = ROOT.parent / "shared" / "data"


def execute(cmd: list[str], cwd: Path, check: bool = True, **extra_env: str) -> subprocess.CompletedProcess:
    """Run ``cmd`` in ``cwd`` with the venv first on PATH and the copy's own sources first on
    PYTHONPATH (whatever the editable install points at); with ``check``, fail the test if it fails."""
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
           "PYTHONPATH": str(cwd / "src"), "DVC_NO_ANALYTICS": "1", "MLFLOW_DISABLE_TELEMETRY": "true"}
    env.pop("MLFLOW_TRACKING_URI", None)
    env.pop("ELMO_PARENT_RUN_ID", None)
    env.update(extra_env)
    result = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    assert not check or result.returncode == 0, f"{' '.join(cmd)} failed:\n{result.stdout[-3000:]}\n{result.stderr[-6000:]}"
    return result


def run(cmd: list[str], cwd: Path, **extra_env: str) -> str:
    """:func:`execute`, returning its stdout."""
    return execute(cmd, cwd, **extra_env).stdout


def assert_up_to_date(repo: Path) -> None:
    """`dvc status` in ``repo`` lists nothing but the params check, which is ``always_changed`` by
    design (it checks the data mirror and other files outside the DAG on every repro)."""
    status = json.loads(run(["dvc", "status", "--json"], repo) or "{}")
    assert set(status) <= {"check_params"}, f"stale stages in {repo}: {status}"
    assert status.get("check_params", ["always changed"]) == ["always changed"], status


def smoke_copy(parent: Path) -> Path:
    """A copy of the working tree (tracked and untracked files) under ``parent``, as its own git
    repository, with an empty pipeline state and params.yaml on the smoke profile."""
    if not MIRROR.is_dir():
        pytest.skip(f"data mirror {MIRROR} not present")
    repo = parent / "repo"
    files = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
                           cwd=ROOT, capture_output=True, text=True, check=True).stdout.split("\0")
    for name in filter(None, files):
        source = ROOT / name
        if source.is_file():
            (repo / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, repo / name)
    # Empty state. The params check's report goes too: Snakemake compares mtimes, and a copy of a
    # report newer than the schema (checked out or written later) would skip the check.
    for path in ("dvc.lock", "analysis/dvc.lock", "results/tables", "results/contamination", "results/runs",
                 "results/analysis", "results/params_check.json",
                 "results/probes", "results/cove", "results/contamination_multi30k"):
        target = repo / path
        shutil.rmtree(target) if target.is_dir() else target.unlink(missing_ok=True)
    run(["git", "init", "-q"], repo)
    run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "copy", "--allow-empty"], repo)
    smoke_profile(repo)
    return repo


def smoke_profile(repo: Path) -> None:
    """Render ``repo``'s params.yaml and pipeline files on the smoke profile, reading the data
    mirror and the checkout's WordNet."""
    run([sys.executable, "-m", "workflow.profile", "smoke"], repo)
    params = yaml.safe_load((repo / "params.yaml").read_text(encoding="utf-8"))
    params["data"]["mirror"] = str(MIRROR)
    # WordNet is installed by setup.sh into the checkout's external/ (ignored by git, so not copied)
    params["probes"]["wordnet"] = str(ROOT / params["probes"]["wordnet"])
    (repo / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False), encoding="utf-8")
