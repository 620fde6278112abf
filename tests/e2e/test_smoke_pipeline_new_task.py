"""A seventh task added through its declaration, its folder and its profile entry only
(tests/fixtures/toy_task): in a copy of the built smoke repository, the pipeline files render, its
stages run with `dvc repro`, no stage of the other six tasks re-runs, and Table 1 has its row."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.e2e.pipeline import ROOT, run, smoke_profile

pytestmark = pytest.mark.e2e

FIXTURE = ROOT / "tests" / "fixtures" / "toy_task"
OTHERS = ("ner", "sst5", "snli", "squad", "srl", "coref", "conll2003")


def add_toy_task(repo: Path) -> None:
    """The three places a new task takes (tests/fixtures/toy_task/README.md)."""
    shutil.copy(FIXTURE / "declaration.py", repo / "src/elmo_repro/experiments/tasks/toy.py")
    shutil.copytree(FIXTURE / "toy", repo / "src/elmo_repro/tasks/toy")
    entry = yaml.safe_load((FIXTURE / "profile.yaml").read_text(encoding="utf-8"))
    base = yaml.safe_load((repo / "workflow/profiles/base.yaml").read_text(encoding="utf-8"))
    base["tasks"].update(entry["base"])
    (repo / "workflow/profiles/base.yaml").write_text(yaml.safe_dump(base, sort_keys=False), encoding="utf-8")
    smoke = yaml.safe_load((repo / "workflow/profiles/smoke.yaml").read_text(encoding="utf-8"))
    smoke["tables"]["table1"]["runs"]["tasks"] = entry["smoke_table1_tasks"]
    (repo / "workflow/profiles/smoke.yaml").write_text(yaml.safe_dump(smoke, sort_keys=False), encoding="utf-8")


def test_a_new_task_is_its_declaration_folder_and_profile_entry(smoke_repo, tmp_path):
    repo = tmp_path / "repo"
    subprocess.run(["cp", "-a", str(smoke_repo), str(repo)], check=True)
    try:
        add_toy_task(repo)
        smoke_profile(repo)                                   # renders params.yaml, dvc.yaml and the Snakefile
        dag = (repo / "dvc.yaml").read_text(encoding="utf-8")
        assert "prepare_toy:" in dag and "python -m stages.prepare --threads 1 --task toy" in dag
        assert "floor_toy:" in dag and "train_toy:" in dag and "train_toy_elmo:" in dag
        jobs = run(["snakemake", "-n", "--forceall", "all"], repo)          # the same DAG under Snakemake
        assert "prepare_toy" in jobs and "train_toy_elmo@toy-elmo-s0" in jobs

        output = run(["dvc", "repro"], repo)
        ran = set(re.findall(r"Running stage '([^']+)'", output))
        assert {"prepare_toy", "floor_toy", "train_toy@toy-baseline-s0", "train_toy_elmo@toy-elmo-s0",
                "table1"} <= ran, ran
        # nothing of the other six tasks: the new declaration is no dependency of their stages
        assert not [name for name in ran if any(re.search(rf"\b{task}\b", name) for task in OTHERS)], ran

        table = json.loads((repo / "results/tables/table1.json").read_text(encoding="utf-8"))
        (row,) = [r for r in table["rows"] if r["task"] == "Toy negation"]
        assert row["paper_elmo"] == "" and row["floor"] == 50.0     # balanced labels: the majority is half
        for group in ("baseline", "elmo"):
            assert list(row[group]["per_seed"]) == ["0"] and 0.0 <= row[group]["mean"] <= 100.0
        markdown = (repo / "results/tables/table1.md").read_text(encoding="utf-8")
        assert "| Toy negation " in markdown and "toy negation accuracy on its 40 test sentences" in markdown
        assert (repo / "results/runs/toy-elmo-s0/units.csv").read_text(encoding="utf-8").startswith(
            "split,unit,correct,examples\n")
    finally:
        shutil.rmtree(repo, ignore_errors=True)
