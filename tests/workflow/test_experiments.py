"""Issue 14 part 4: `dvc exp run --temp` and `dvc queue` run in copies under .dvc/tmp/exps (queued:
exps/<tmp>; --temp: exps/standalone/<tmp>); the
relative data mirror must resolve from there (a link) and the stage runs must reach the
repository's own MLflow store (tracking.repository_root). The end-to-end check is
tests/e2e/test_smoke_pipeline.py::test_dvc_exp_run_temp_metrics_and_runs_reach_the_workspace."""

import os
from pathlib import Path

import pytest

from elmo_repro.tracking import repository_root, tracking_uri
from workflow.experiments import ensure_mirror_links, mirror_links


def test_a_sibling_mirror_resolves_from_every_experiment_copy_through_links(tmp_path):
    root, mirror = tmp_path / "repo", tmp_path / "shared" / "data"
    (mirror / "conll2003").mkdir(parents=True)
    (mirror / "conll2003" / "eng.train").write_text("x", encoding="utf-8")
    root.mkdir()
    links = ensure_mirror_links("../shared/data", root)
    assert links == [root / ".dvc/tmp/exps/shared", root / ".dvc/tmp/exps/standalone/shared"]
    assert all(link.is_symlink() for link in links)
    # as DVC 3 names its copies: queued (dvc queue start) and --temp
    for copy in (root / ".dvc/tmp/exps/tmpabc123", root / ".dvc/tmp/exps/standalone/tmpxyz789"):
        copy.mkdir()
        assert (copy / "../shared/data/conll2003/eng.train").read_text(encoding="utf-8") == "x"
    assert ensure_mirror_links("../shared/data", root) == links                # idempotent
    # a changed mirror gets its own links; an absolute one needs none
    (tmp_path / "other" / "data").mkdir(parents=True)
    ensure_mirror_links("../other/data", root)
    assert Path(os.readlink(root / ".dvc/tmp/exps/standalone/other")) == (tmp_path / "other").resolve()
    assert mirror_links(str(mirror), root) == []


@pytest.mark.parametrize("mirror, problem", [
    ("data/mirror", "must be a sibling of the repository"),
    ("../../elsewhere/data", "must be a sibling of the repository"),
    ("../cache/data", "clashes with DVC's entries"),
    ("../standalone/data", "clashes with DVC's entries"),
])
def test_mirrors_that_cannot_be_linked_ask_for_an_absolute_path(tmp_path, mirror, problem):
    with pytest.raises(ValueError, match=problem):
        mirror_links(mirror, tmp_path)


def test_stage_runs_in_an_experiment_copy_log_to_the_repository_store(tmp_path, monkeypatch):
    root = tmp_path / "repo"
    queued, temp = root / ".dvc/tmp/exps/tmpq1w2e3", root / ".dvc/tmp/exps/standalone/tmpa1s2d3"
    for copy in (queued, temp):
        copy.mkdir(parents=True)
        assert repository_root(copy) == root.resolve()
    assert repository_root(root) == root.resolve()
    assert repository_root(root / "src") == (root / "src").resolve()       # only DVC's copies
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    monkeypatch.chdir(temp)
    assert tracking_uri() == f"sqlite:///{root.resolve() / 'mlflow.db'}"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "http://tracking:5000")
    assert tracking_uri() == "http://tracking:5000"
