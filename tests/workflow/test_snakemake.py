"""Snakemake runs exactly the DAG that DVC runs: same jobs, same edges, same commands."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import yaml

from workflow.registry import expand

ROOT = Path(__file__).resolve().parents[2]
# Run families expand to one job per run, named <family>@<run id> by both tools.
STAGES = expand(yaml.safe_load((ROOT / "params.yaml").read_text(encoding="utf-8")))


def tool(*cmd: str) -> str:
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
           "DVC_NO_ANALYTICS": "1"}
    result = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout


def dot_edges(dot: str) -> set[tuple[str, str]]:
    """Edges of a DOT graph between node labels (Snakemake uses numeric ids with labels)."""
    labels = dict(re.findall(r'^\s*(\w+)\s*\[label\s*=\s*"([^"\\]+)', dot, re.M))
    edges = set()
    for a, b in re.findall(r'^\s*"?([\w.@-]+)"?\s*->\s*"?([\w.@-]+)"?', dot, re.M):
        edges.add((labels.get(a, a), labels.get(b, b)))
    return edges


@pytest.fixture(scope="module")
def mirror_present():
    if not (ROOT.parent / "shared" / "data").is_dir():
        pytest.skip("data mirror not present")


def test_same_jobs_and_edges_as_dvc(mirror_present):
    snake = tool("snakemake", "--forceall", "--dag", "--quiet")
    snake_edges = {(a, b) for a, b in dot_edges(snake) if "all" not in (a, b)}
    dvc_edges = dot_edges(tool("dvc", "dag", "--dot"))
    assert snake_edges == dvc_edges
    jobs = tool("snakemake", "-n", "--forceall")
    ran = set(re.findall(r"^rule ([\w@-]+):", jobs, re.M)) - {"all"}
    assert ran == {s.name for s in STAGES}


def test_same_commands(mirror_present):
    jobs = tool("snakemake", "-n", "--forceall", "--printshellcmds")
    for stage in STAGES:
        assert f"rule {stage.name}:" in jobs and f"Shell command: {stage.cmd}" in jobs, stage.name


def test_slurm_profile_dry_run_takes_resources_from_the_registry(mirror_present):
    jobs = tool("snakemake", "--profile", "workflow/profiles/slurm", "-n", "--forceall")
    blocks = dict(re.findall(r"^rule ([\w@-]+):\n(.*?)(?=^\[|\Z)", jobs, re.M | re.S))
    assert set(blocks) - {"all"} == {s.name for s in STAGES}
    for stage in STAGES:
        line = re.search(r"resources: (.*)", blocks[stage.name]).group(1)
        resources = dict(item.split("=", 1) for item in line.split(", "))
        for key, value in stage.resources.items():
            assert resources[key] == str(value), (stage.name, key)
        assert resources["slurm_partition"] == "gpu"
