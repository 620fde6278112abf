"""The smoke profile through the launcher and Snakemake, tracked by an `mlflow server` on loopback.

Shows, in one pipeline run: Snakemake (`--cores 2`) builds the main job's table byte-identical to
DVC's, the launcher's parent run holds one child run per stage, and the runs read back through
MLflow's REST API (the cluster set-up: tracking URI from the environment, no shared SQLite file).
The analysis job's rules come from the same registry by the same translation, and
``tests/workflow/test_snakemake.py`` proves both jobs' DAGs equal to DVC's; running it here too
would double the longest test for no new code path.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from tests.e2e.pipeline import execute, run, smoke_copy
import yaml

from workflow.snakemake_dag import expand

pytestmark = pytest.mark.e2e


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def rest(base: str, endpoint: str, body: dict | None = None) -> dict:
    """GET (no body) or POST one MLflow REST endpoint, e.g. ``runs/search``."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(f"{base}/api/2.0/mlflow/{endpoint}", data=data,
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.load(response)


@pytest.fixture(scope="module")
def mlflow_server(tmp_path_factory):
    store = tmp_path_factory.mktemp("mlflow-server")
    port = free_port()
    server = subprocess.Popen(
        [str(Path(sys.executable).parent / "mlflow"), "server", "--host", "127.0.0.1", "--port", str(port),
         "--backend-store-uri", f"sqlite:///{store / 'mlflow.db'}",
         "--artifacts-destination", str(store / "artifacts"), "--workers", "1"],
        stdout=subprocess.DEVNULL, stderr=open(store / "server.log", "w"))
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while True:
        try:
            with urllib.request.urlopen(f"{base}/health", timeout=5):
                break
        except OSError:
            if server.poll() is not None or time.monotonic() > deadline:
                server.kill()
                pytest.fail(f"mlflow server did not start:\n{(store / 'server.log').read_text()[-3000:]}")
            time.sleep(0.5)
    yield base
    server.terminate()
    server.wait(timeout=30)


@pytest.fixture(scope="module")
def snakemake_repo(tmp_path_factory, mlflow_server) -> Path:
    repo = smoke_copy(tmp_path_factory.mktemp("snakemake"))
    run(["python", "-m", "workflow.launch", "snakemake", "--cores", "2", "all"], repo,
        MLFLOW_TRACKING_URI=mlflow_server)
    return repo


def test_snakemake_table_is_byte_identical_to_dvc(snakemake_repo, smoke_repo):
    for name in ("table1.md", "table1.csv", "table1.json"):
        assert (snakemake_repo / "results/tables" / name).read_bytes() == \
            (smoke_repo / "results/tables" / name).read_bytes(), name


def test_parent_and_child_runs_read_back_through_the_rest_api(snakemake_repo, mlflow_server):
    experiment = rest(mlflow_server, "experiments/get-by-name?experiment_name=elmo-repro")["experiment"]
    ids = [experiment["experiment_id"]]
    (parent,) = rest(mlflow_server, "runs/search", {
        "experiment_ids": ids, "filter": "tags.runner = 'snakemake'"})["runs"]
    assert parent["info"]["status"] == "FINISHED"
    tags = {t["key"]: t["value"] for t in parent["data"]["tags"]}
    assert tags["command"] == "snakemake --cores 2 all" and tags["profile"] == "smoke"
    children = rest(mlflow_server, "runs/search", {
        "experiment_ids": ids, "max_results": 1000,
        "filter": f"tags.mlflow.parentRunId = '{parent['info']['run_id']}'"})["runs"]
    stages = [next(t["value"] for t in c["data"]["tags"] if t["key"] == "stage") for c in children]
    smoke = yaml.safe_load((snakemake_repo / "params.yaml").read_text(encoding="utf-8"))
    assert sorted(stages) == sorted(s.name for s in expand(smoke) if s.job == "main")
    assert all(c["info"]["status"] == "FINISHED" for c in children)
    # every run of the matrix is its own child run, found by its run id tag
    runs = rest(mlflow_server, "runs/search", {
        "experiment_ids": ids, "filter": "tags.run_id = 'ner-elmo-s0'"})["runs"]
    assert len(runs) == 1 and {"key": "stage", "value": "train_ner_elmo@ner-elmo-s0"} in runs[0]["data"]["tags"]
    artifacts = rest(mlflow_server, f"artifacts/list?run_id={parent['info']['run_id']}")
    assert {"table1.md", "table1.json"} <= {f["path"] for f in artifacts["files"]}


def test_snakemake_second_run_has_nothing_to_do(snakemake_repo):
    result = execute(["snakemake", "--cores", "2"], snakemake_repo)
    assert "Nothing to be done" in result.stdout + result.stderr


def test_a_failing_job_keeps_the_committed_results(snakemake_repo):
    """Issue 30 §1 under Snakemake: the files git tracks are ``update()`` outputs, backed up before
    the job and restored when it fails (here a bug in the NER model's code)."""
    model = snakemake_repo / "src/elmo_repro/tasks/ner/model.py"
    run_dir = snakemake_repo / "results/runs/ner-baseline-s0"
    kept = [run_dir / name for name in ("metrics.json", "history.csv", "spec.json", "scalar_mix.json")]
    before = {path: path.read_bytes() for path in kept}
    original = model.read_bytes()
    model.write_bytes(original + b"\nraise RuntimeError('a bug in the model code')\n")
    target = "train_ner@ner-baseline-s0"
    try:
        result = execute(["snakemake", "--cores", "2", "--forcerun", target, "--", target], snakemake_repo,
                         check=False)
    finally:
        model.write_bytes(original)
    assert result.returncode != 0 and "a bug in the model code" in result.stdout + result.stderr
    assert {path: path.read_bytes() for path in kept} == before
