"""Fixtures of the end-to-end tests (helpers in ``tests/e2e/pipeline.py``)."""

from pathlib import Path

import pytest

from tests.e2e.pipeline import run, smoke_copy


@pytest.fixture(scope="session")
def smoke_repo(tmp_path_factory) -> Path:
    """The smoke profile's two jobs: the main job as README command 1 runs it (the launcher: stage
    runs spooled, then logged as children of one pipeline run), then the analysis job on top of it
    by plain `dvc repro` (each stage logs its own top-level MLflow run), so both ways of tracking
    are exercised."""
    repo = smoke_copy(tmp_path_factory.mktemp("dvc"))
    run(["python", "-m", "workflow.launch", "dvc", "repro"], repo)
    run(["dvc", "repro", "analysis/dvc.yaml"], repo)
    return repo
