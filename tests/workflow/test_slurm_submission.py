"""Snakemake's SLURM profile against a fake `sbatch`: every job of a profile is submitted with that
profile's resources (`compute` in params.yaml): memory, time limit, partition, and GPUs only for the
stages that compute on one.

The fake SLURM tools (sbatch, sacct, sacctmgr) record each submission, "run" the job by creating
its outputs (from the registry's expansion, so no stage computes) and report it completed, so
Snakemake walks the whole DAG of the chosen profile in seconds. Inputs from outside the pipeline
(the data mirror, vectors, WordNet) are empty stand-ins in a temporary copy of the repository."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from workflow import profile
from elmo_repro.schema import validate_params
from workflow.registry import STAGES
from workflow.snakemake_dag import Outputs, expand, is_directory, resolve, snakemake_inputs

ROOT = Path(__file__).resolve().parents[2]

SBATCH = r'''
import json, os, sys
from pathlib import Path
state = Path(os.environ["FAKE_SLURM"])
args = sys.argv[1:]
rule = args[args.index("--comment") + 1].removeprefix("rule_")
with open(state / "calls.jsonl", "a") as log:
    log.write(json.dumps({"rule": rule, "args": args}) + "\n")
job = os.getpid()    # unique among the submissions Snakemake makes at once
with open(state / "ids", "a") as out:
    out.write(f"{job}\n")
for path in json.loads((state / "outputs.json").read_text())[rule]:
    target = Path(os.environ["FAKE_SLURM_REPO"]) / path
    if path.rsplit("/", 1)[-1].count("."):
        target.parent.mkdir(parents=True, exist_ok=True)
        target.touch()
    else:
        target.mkdir(parents=True, exist_ok=True)
print(job)
'''
SACCT = r'''
import os
from pathlib import Path
ids = Path(os.environ["FAKE_SLURM"]) / "ids"
for job in (ids.read_text().split() if ids.exists() else []):
    print(f"{job}|COMPLETED")
'''
SACCTMGR = 'print("project")\n'


def _tool(folder: Path, name: str, body: str) -> None:
    path = folder / name
    path.write_text(f"#!{sys.executable}\n{body}", encoding="utf-8")
    path.chmod(0o755)


def _copy(repo: Path) -> None:
    """The pipeline's files (no results, runs or locks: every job is to be submitted)."""
    for name in ("Snakefile", "params.yaml", "pyproject.toml"):
        shutil.copy2(ROOT / name, repo / name)
    for folder in ("workflow", "stages", "src", "paper"):
        shutil.copytree(ROOT / folder, repo / folder, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))


def _stand_ins(repo: Path, params: dict) -> None:
    """Empty files or folders for every input no stage writes, so Snakemake finds them."""
    stages = expand(params)
    outputs = Outputs(stages)
    for stage in stages:
        for dep in snakemake_inputs(stage, stages, params, outputs):
            if dep in outputs.writer or (repo / dep).exists() or outputs.enclosing(dep) is not None:
                continue
            target = repo / dep
            if is_directory(dep):
                target.mkdir(parents=True, exist_ok=True)
            else:
                target.parent.mkdir(parents=True, exist_ok=True)
                target.touch()


def _submit(tmp_path: Path, name: str, targets: list[str]) -> tuple[list[dict], dict]:
    repo, state, tools = tmp_path / "repo", tmp_path / "slurm", tmp_path / "bin"
    for folder in (repo, state, tools):
        folder.mkdir()
    _copy(repo)
    params = profile.render(name)
    params["data"]["mirror"] = "mirror"
    params["probes"]["wordnet"] = "external/wordnet"
    (repo / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False), encoding="utf-8")
    _stand_ins(repo, params)
    stages = expand(params)
    (state / "outputs.json").write_text(json.dumps({s.name: [resolve(o, params) for o in s.all_outs] for s in stages}))
    for tool, body in (("sbatch", SBATCH), ("sacct", SACCT), ("sacctmgr", SACCTMGR)):
        _tool(tools, tool, body)
    env = {**os.environ, "PATH": f"{tools}{os.pathsep}{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
           "FAKE_SLURM": str(state), "FAKE_SLURM_REPO": str(repo), "PYTHONPATH": f"{repo}{os.pathsep}{repo / 'src'}"}
    done = subprocess.run(
        ["snakemake", "--profile", str(ROOT / "workflow/profiles/slurm"), "--default-resources",
         "slurm_account=project", "--forceall", "--latency-wait", "0", "--slurm-init-seconds-before-status-checks",
         "1", "--slurm-status-command", "sacct", "--jobs", "1000", *targets],
        cwd=repo, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-4000:]
    calls = [json.loads(line) for line in (state / "calls.jsonl").read_text().splitlines()]
    return calls, {stage.name: stage for stage in stages}


def _option(args: list[str], *names: str) -> str | None:
    for i, arg in enumerate(args):
        for name in names:
            if arg == name:
                return args[i + 1]
            if arg.startswith(name + "="):
                return arg.split("=", 1)[1]
    return None


def _check(calls: list[dict], stages: dict) -> None:
    assert sorted(call["rule"] for call in calls) == sorted(stages)     # every job, once
    for call in calls:
        stage, args = stages[call["rule"]], call["args"]
        res = stage.resources
        assert _option(args, "--mem") == str(res["mem_mb"]), stage.name
        assert _option(args, "-t") == str(res["runtime"]), stage.name
        assert _option(args, "-p") == ("gpu" if res.get("gpu") else "cpu"), stage.name
        assert _option(args, "--gpus") == (str(res["gpu"]) if res.get("gpu") else None), stage.name
        assert _option(args, "-A") == "project"


@pytest.mark.parametrize("name", ["smoke", "paper"])
def test_each_job_is_submitted_with_its_profiles_resources(tmp_path, name):
    calls, stages = _submit(tmp_path, name, ["all", "analysis"] if name == "smoke" else ["all"])
    if name == "paper":
        stages = {n: s for n, s in stages.items() if s.job == "main"}
    _check(calls, stages)
    gpus = {call["rule"] for call in calls if _option(call["args"], "--gpus")}
    if name == "smoke":
        # a smoke run never asks for a GPU, paper-size memory or days
        assert not gpus
        assert max(int(_option(c["args"], "--mem")) for c in calls) <= 4000
        assert max(int(_option(c["args"], "-t")) for c in calls) <= 60
    else:
        # every stage with a device path, and only those, holds a GPU and computes on it; pretraining
        # runs under its launcher on 3 GPUs, the paper's 3 x 128 batch
        assert gpus == {n for n, s in stages.items() if s.device} and "features@ner-finetuned" in gpus
        assert all(stages[n].cmd.endswith("--device cuda") for n in gpus)
        assert stages["pretrain_bilm"].resources["gpu"] == 3
        assert stages["pretrain_bilm"].cmd.startswith("torchrun --standalone --nproc-per-node 3 -m stages.pretrain_bilm")
        assert _option(next(c["args"] for c in calls if c["rule"] == "pretrain_bilm"), "--mem") == "32000"


@pytest.mark.parametrize("name", profile.available())
def test_every_profiles_compute_section_names_stages(name):
    params = profile.render(name)
    known = {stage.name for stage in STAGES} | {stage.module for stage in STAGES} | {"default"}
    assert set(params["compute"]["resources"]) <= known, name
    assert set(params["compute"]["launcher"]) <= {stage.name for stage in STAGES}, name
    validate_params(params)


def test_a_gpu_for_a_cpu_stage_is_refused():
    params = profile.render("smoke")
    params["compute"]["resources"]["word_vectors"] = {"gpu": 1, "mem_mb": 1000, "runtime": 5}
    with pytest.raises(ValueError, match=r"compute\.resources\.word_vectors\.gpu: stage word_vectors computes on the CPU"):
        expand(params)
