"""Fixtures of the end-to-end tests (helpers in ``tests/e2e/pipeline.py``)."""

from pathlib import Path

import pytest

from tests.e2e.pipeline import run, smoke_copy


@pytest.fixture(scope="session")
def smoke_repo(tmp_path_factory) -> Path:
    """The smoke profile built by plain `dvc repro` (no launcher)."""
    repo = smoke_copy(tmp_path_factory.mktemp("dvc"))
    run(["dvc", "repro"], repo)
    return repo
