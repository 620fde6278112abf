"""Fixtures of the end-to-end tests (helpers in ``tests/e2e/pipeline.py``)."""

from pathlib import Path

import pytest

from tests.e2e.pipeline import run, smoke_copy


@pytest.fixture(scope="session")
def smoke_repo(tmp_path_factory) -> Path:
    """The smoke profile's two jobs built by plain `dvc repro` (no launcher): the main job, then the
    analysis job on top of it."""
    repo = smoke_copy(tmp_path_factory.mktemp("dvc"))
    run(["dvc", "repro"], repo)
    run(["dvc", "repro", "analysis/dvc.yaml"], repo)
    return repo
