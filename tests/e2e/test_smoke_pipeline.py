"""The smoke profile end to end through `dvc repro` on the real shared data, in a temporary copy of
the repository (so the tiny profile's dvc.lock and results are never touched)."""

import json
import sqlite3
from pathlib import Path

import pytest
import yaml

from tests.e2e.pipeline import run
from workflow.registry import STAGES

pytestmark = pytest.mark.e2e


def stale_stages(repo: Path) -> tuple[set[str], set[str]]:
    """(stages whose own deps changed per `dvc status`, those plus everything downstream of them).

    Downstream stages re-run once their changed inputs arrive; `dvc status` cannot list them ahead
    because it only compares each stage with its own recorded deps.
    """
    changed = set(json.loads(run(["dvc", "status", "--json"], repo) or "{}"))
    stale, grew = set(changed), True
    while grew:
        grew = False
        outs = {o for s in STAGES if s.name in stale for o in [*s.outs, *s.committed, *s.metrics]}
        for stage in STAGES:
            if stage.name not in stale and any(d == o or d.startswith(o + "/") for d in stage.all_deps for o in outs):
                stale.add(stage.name)
                grew = True
    return changed, stale


def test_table_has_the_ner_row_and_perplexity(smoke_repo):
    table = json.loads((smoke_repo / "results/tables/table1.json").read_text())
    assert table["profile"] == "smoke"
    (row,) = table["rows"]
    assert row["task"] == "NER" and row["seeds"] == 1
    for key in ("baseline_mean", "elmo_mean"):
        assert 0.0 < row[key] <= 100.0
    ppl = table["perplexity"]
    assert ppl["perplexity"] < ppl["unigram_perplexity"], "the biLM must beat the unigram model"
    assert ppl["heldout_tokens"] <= 5000
    markdown = (smoke_repo / "results/tables/table1.md").read_text()
    assert "| NER" in markdown and "Not comparable" in markdown


def test_every_stage_logged_an_mlflow_run(smoke_repo):
    with sqlite3.connect(smoke_repo / "mlflow.db") as db:
        rows = db.execute("SELECT r.run_uuid, t.value FROM runs r JOIN tags t ON r.run_uuid = t.run_uuid "
                          "WHERE t.key = 'stage' AND r.status = 'FINISHED'").fetchall()
        stages = {value for _, value in rows}
        assert stages == {s.name for s in STAGES}
        ids = json.loads((smoke_repo / "results/tables/table1.json").read_text())["rows"][0]["mlflow_run_ids"]
        for run_id in ids["baseline"] + ids["elmo"]:
            (status,) = db.execute("SELECT status FROM runs WHERE run_uuid = ?", (run_id,)).fetchone()
            assert status == "FINISHED"
        durations = db.execute("SELECT COUNT(DISTINCT run_uuid) FROM metrics WHERE key = 'duration_s'").fetchone()
        assert durations[0] >= len(STAGES)
        # plain `dvc repro`, without the launcher: top-level stage runs
        parents = db.execute("SELECT COUNT(*) FROM tags WHERE key = 'mlflow.parentRunId' AND run_uuid IN "
                             "(SELECT run_uuid FROM tags WHERE key = 'stage')").fetchone()
        assert parents[0] == 0


def test_second_repro_is_a_no_op_and_staleness_follows_the_dag(smoke_repo):
    assert "Data and pipelines are up to date" in run(["dvc", "status"], smoke_repo)
    assert "didn't change, skipping" in run(["dvc", "repro"], smoke_repo)
    lstm = smoke_repo / "src/elmo_repro/bilm/lstm.py"
    original = lstm.read_text()
    lstm.write_text(original + "\n# edited\n")
    changed, stale = stale_stages(smoke_repo)
    assert changed == {"pretrain_bilm", "perplexity", "features_conll2003"}
    assert stale == changed | {"train_ner", "tables"}
    lstm.write_text(original)
    params_file = smoke_repo / "params.yaml"
    original_params = params_file.read_text()
    params = yaml.safe_load(original_params)
    params["ner"]["lstm_hidden"] += 1
    params_file.write_text(yaml.safe_dump(params, sort_keys=False))
    assert stale_stages(smoke_repo) == ({"train_ner"}, {"train_ner", "tables"})
    params_file.write_text(original_params)
    assert stale_stages(smoke_repo) == (set(), set())


def test_launcher_makes_stage_runs_children_of_one_pipeline_run(smoke_repo):
    table = (smoke_repo / "results/tables/table1.md").read_bytes()
    run(["python", "-m", "workflow.launch", "dvc", "repro", "--force", "--single-item", "tables"], smoke_repo)
    assert (smoke_repo / "results/tables/table1.md").read_bytes() == table
    with sqlite3.connect(smoke_repo / "mlflow.db") as db:
        (parent, status), = db.execute(
            "SELECT r.run_uuid, r.status FROM runs r JOIN tags t ON r.run_uuid = t.run_uuid "
            "WHERE t.key = 'runner' AND t.value = 'dvc'").fetchall()
        assert status == "FINISHED"
        children = db.execute("SELECT t.value FROM tags t JOIN tags p ON t.run_uuid = p.run_uuid "
                              "WHERE t.key = 'stage' AND p.key = 'mlflow.parentRunId' AND p.value = ?",
                              (parent,)).fetchall()
        assert children == [("tables",)]
    (artifact,) = (smoke_repo / "mlruns").glob(f"**/{parent}/artifacts/table1.md")
    assert artifact.read_bytes() == table


def test_dvc_remote_push_clone_pull_is_a_no_op(smoke_repo, tmp_path):
    """A local-directory DVC remote: push, clone elsewhere, pull, and `dvc repro` there does nothing."""
    remote = tmp_path / "remote"
    run(["dvc", "remote", "add", "--default", "shared", str(remote)], smoke_repo)
    run(["dvc", "push"], smoke_repo)
    run(["git", "add", "-A"], smoke_repo)
    run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "pipeline state"], smoke_repo)
    clone = tmp_path / "clone"
    run(["git", "clone", "-q", str(smoke_repo), str(clone)], tmp_path)
    run(["dvc", "pull"], clone)
    assert (clone / "models/bilm/weights.pt").read_bytes() == (smoke_repo / "models/bilm/weights.pt").read_bytes()
    assert "Data and pipelines are up to date" in run(["dvc", "status"], clone)
    out = run(["dvc", "repro"], clone)
    assert "Running stage" not in out and "didn't change, skipping" in out
