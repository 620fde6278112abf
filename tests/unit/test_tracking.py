"""MLflow tracking: stage runs named by stage, the experiment tagged to open on its runs table."""

import mlflow
from mlflow.tracking import MlflowClient

from elmo_repro import tracking


def test_experiment_opens_on_runs_and_runs_are_named_by_stage(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    client = MlflowClient(uri)
    # a store made before the tag existed gets it on the next stage run
    old = client.create_experiment(tracking.EXPERIMENT)
    assert tracking.KIND_TAG not in client.get_experiment(old).tags
    with tracking.stage_run("train_sst5_elmo@sst5-elmo-s2", {"profile": "tiny"}, []) as run:
        run_id = run.run_id
    assert client.get_experiment(old).tags[tracking.KIND_TAG] == "custom_model_development"
    assert client.get_run(run_id).info.run_name == "train_sst5_elmo@sst5-elmo-s2"
    # a new store is created with it
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path / 'new.db'}")
    _, experiment_id = tracking.open_store()
    tags = MlflowClient(tracking.tracking_uri()).get_experiment(experiment_id).tags
    assert tags[tracking.KIND_TAG] == "custom_model_development"
    mlflow.set_tracking_uri(None)


def test_spooled_stage_runs_reach_mlflow_through_the_launchers_drain(tmp_path, monkeypatch):
    """Under the launcher a stage writes its run to the spool (no MLflow in the stage process);
    the drain logs it as a child of the pipeline run with everything a direct run has."""
    from elmo_repro.tracking_spool import SPOOL_ENV, SpoolDrain

    monkeypatch.chdir(tmp_path)
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    client, experiment_id = tracking.open_store()
    parent = client.create_run(experiment_id, run_name="pipeline").info.run_id
    spool = tmp_path / ".mlflow-spool" / parent
    monkeypatch.setenv(SPOOL_ENV, str(spool))
    (tmp_path / "table.md").write_text("first")
    params = {"profile": "tiny", "tasks": {"ner": {"trainer": {"epochs": 3}}}}
    with tracking.stage_run("train_ner@ner-baseline-s0", params, ["tasks.ner"]) as run:
        run.set_tags({"run_id": "ner-baseline-s0"})
        for epoch in (1, 2):
            run.log_metrics({"dev_f1": 80.0 + epoch}, step=epoch)
        run.log_artifact(tmp_path / "table.md")
    (tmp_path / "table.md").write_text("rewritten later")      # the artifact is the logged copy
    assert run.path.is_file() and [r.info.run_id for r in client.search_runs([experiment_id])] == [parent]
    drain = SpoolDrain(client, experiment_id, spool, parent)
    drain.drain()
    (run_id,) = drain.logged
    logged = client.get_run(run_id)
    assert logged.info.run_name == "train_ner@ner-baseline-s0" and logged.info.status == "FINISHED"
    assert logged.data.tags["mlflow.parentRunId"] == parent and logged.data.tags["run_id"] == "ner-baseline-s0"
    assert logged.data.tags["stage"] == "train_ner@ner-baseline-s0" and logged.data.tags["profile"] == "tiny"
    assert logged.data.params == {"tasks.ner.trainer.epochs": "3"}
    history = client.get_metric_history(run_id, "dev_f1")
    assert [(m.step, m.value) for m in history] == [(1, 81.0), (2, 82.0)]
    assert "duration_s" in logged.data.metrics
    assert logged.data.metrics["peak_rss_mib"] > 10            # a Python process with MLflow loaded
    local = client.download_artifacts(run_id, "table.md", str(tmp_path / "download"))
    assert open(local).read() == "first"
    assert not list(spool.glob("*"))                            # drained: the spool is emptied

    # a stage that raises ends FAILED; one killed mid-run (no end record) is closed FAILED at the end
    try:
        with tracking.stage_run("vocab", params, []):
            raise RuntimeError("boom")
    except RuntimeError:
        pass
    killed = tracking_spool_run(spool, "perplexity")
    killed.log_metrics({"batches": 1})
    with open(killed.path, "a") as handle:                      # half a line: not read yet
        handle.write('{"type": "metr')
    drain.stop()
    runs = {r.info.run_name: r.info.status for r in client.search_runs([experiment_id])}
    assert runs["vocab"] == "FAILED" and runs["perplexity"] == "FAILED"
    assert not spool.exists()
    mlflow.set_tracking_uri(None)


def tracking_spool_run(spool, name):
    from elmo_repro.tracking_spool import SpoolRun

    return SpoolRun(spool, name, {"stage": name}, {})
