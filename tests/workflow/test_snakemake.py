"""Snakemake runs exactly the DAG that DVC runs: same jobs, same edges, same commands."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import yaml

from elmo_repro.experiments.specs import JOB_FILES
from workflow.snakemake_dag import expand

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
    for a, b in re.findall(r'^\s*"?([\w.@/:-]+)"?\s*->\s*"?([\w.@/:-]+)"?', dot, re.M):
        edges.add((labels.get(a, a), labels.get(b, b)))
    return edges


@pytest.fixture(scope="module")
def mirror_present():
    if not (ROOT.parent / "shared" / "data").is_dir():
        pytest.skip("data mirror not present")


def _dvc_name(node: str) -> str:
    """A stage of analysis/dvc.yaml is ``analysis/dvc.yaml:<name>`` in DVC's graph."""
    return node.split(":", 1)[1] if ":" in node else node


def _upstream(job: str) -> set[str]:
    """The stages of ``job`` and every stage they need, by name (what a forced run of it runs)."""
    edges = dot_edges(tool("dvc", "dag", "--dot", JOB_FILES[job]))
    names = {s.name for s in STAGES if s.job == job}
    grown = True
    while grown:
        before = len(names)
        names |= {_dvc_name(a) for a, b in edges if _dvc_name(b) in names}
        grown = len(names) > before
    return names


def test_same_jobs_and_edges_as_dvc(mirror_present):
    # the whole graph: both jobs (DVC draws every pipeline file's stages)
    snake = tool("snakemake", "all", "analysis", "--forceall", "--dag", "--quiet")
    snake_edges = {(a, b) for a, b in dot_edges(snake) if not {"all", "analysis"} & {a, b}}
    dvc_edges = {(_dvc_name(a), _dvc_name(b)) for a, b in dot_edges(tool("dvc", "dag", "--dot"))}
    assert snake_edges == dvc_edges
    # each job: Snakemake's target runs exactly what `dvc repro <job file>` runs (with what it needs)
    for job, target in (("main", "all"), ("analysis", "analysis")):
        jobs = tool("snakemake", "-n", "--forceall", target)
        ran = set(re.findall(r"^rule ([\w@-]+):", jobs, re.M)) - {"all", "analysis"}
        assert ran == _upstream(job), job
    assert _upstream("main") == {s.name for s in STAGES if s.job == "main"}   # the main job needs no analysis stage


def test_same_commands(mirror_present):
    jobs = tool("snakemake", "-n", "--forceall", "--printshellcmds", "all", "analysis")
    for stage in STAGES:
        assert f"rule {stage.name}:" in jobs and f"Shell command: {stage.cmd}" in jobs, stage.name


def test_slurm_profile_dry_run_takes_resources_from_the_profile(mirror_present):
    jobs = tool("snakemake", "--profile", "workflow/profiles/slurm", "-n", "--forceall", "all", "analysis")
    blocks = dict(re.findall(r"^rule ([\w@-]+):\n(.*?)(?=^\[|\Z)", jobs, re.M | re.S))
    assert set(blocks) - {"all", "analysis"} == {s.name for s in STAGES}
    for stage in STAGES:
        line = re.search(r"resources: (.*)", blocks[stage.name]).group(1)
        resources = dict(item.split("=", 1) for item in line.split(", "))
        for key, value in stage.resources.items():
            assert resources[key] == str(value), (stage.name, key)
        assert resources["slurm_partition"] == ("gpu" if stage.resources.get("gpu") else "cpu"), stage.name
