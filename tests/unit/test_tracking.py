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
