"""The ablation views (Tables 2 and 3, views/ablation.py) and runs shared between tables."""

import json
from pathlib import Path

import pytest

from elmo_repro.experiments.rendering import render_runs
from elmo_repro.experiments.specs import job_runs
from elmo_repro.tasks.base import get_task
from elmo_repro.tasks.units import task_units, write_units
from elmo_repro.views import ablation
from elmo_repro.views.query import table_runs

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "snli"
BASE = {"bilm": "finetuned", "mix": "learned", "l2_coef": 0.001}
SPECS = {"elmo": {**BASE, "placement": "paper"}, "elmo_input": {**BASE, "placement": "input"},
         "elmo_output": {**BASE, "placement": "output"}}


def test_a_spec_that_computes_an_existing_run_reads_it():
    tables = {"table1": {"runs": {"tasks": ["srl", "snli"], "elmo": ["elmo"], "seeds": [0]}},
              "table3": {"runs": {"tasks": ["srl", "snli"], "elmo": ["elmo_input", "elmo_output"], "seeds": [0]}}}
    runs = render_runs(tables, SPECS)
    # SRL's paper placement is the input: "input only" is Table 1's run; SNLI's is both: a run of its own
    assert sorted(job_runs(runs, "analysis")) == ["snli-elmo_input-s0", "snli-elmo_output-s0", "srl-elmo_output-s0"]
    params = {"tables": tables, "elmo_specs": SPECS, "runs": runs}
    cells = {(r.cell, r.spec.task): r.id for r in table_runs(params, "table3")}
    assert cells[("elmo_input", "srl")] == "srl-elmo-s0" and cells[("elmo_input", "snli")] == "snli-elmo_input-s0"


def write_run(root, run_id, splits, dev, test, dev_score, test_score, best_epoch=2):
    """A run folder as a clone holds it: metrics and unit statistics (no predictions)."""
    folder = root / run_id
    folder.mkdir(parents=True)
    units = task_units("snli")
    write_units(folder / "units.csv", "snli", {"dev": units.statistics(splits["dev"], dev),
                                               "test": units.statistics(splits["test"], test)})
    (folder / "metrics.json").write_text(json.dumps({"dev_accuracy": dev_score, "test_accuracy": test_score,
                                                     "best_epoch": best_epoch, "epochs": 3}))


def test_the_view_sets_the_paper_beside_dev_and_test_and_compares_on_both(tmp_path, monkeypatch):
    task = get_task("snli")
    splits = {s: task.read(s, FIXTURE) for s in ("dev", "test")}
    monkeypatch.chdir(tmp_path)
    (tmp_path / "paper").mkdir()
    (tmp_path / "paper/t3.csv").write_text("task,name,metric,input_only,output_only\nsnli,SNLI,accuracy,88.9,88.7\n")
    tables = {"table3": {"runs": {"tasks": ["snli"], "elmo": ["elmo_input", "elmo_output"], "seeds": [0, 1]},
                         "paper": "paper/t3.csv", "columns": {"elmo_input": "input_only", "elmo_output": "output_only"},
                         "compare": [["elmo_output", "elmo_input"]]}}
    params = {"profile": "test", "tables": tables, "elmo_specs": SPECS, "runs": render_runs(tables, SPECS)}
    gold = {s: [task.labels.index(e["label"]) for e in examples] for s, examples in splits.items()}
    runs = tmp_path / "results/analysis/runs"
    for seed, score in ((0, 60.0), (1, 70.0)):
        write_run(runs, f"snli-elmo_input-s{seed}", splits, gold["dev"], gold["test"], score, 100.0, best_epoch=3)
        write_run(runs, f"snli-elmo_output-s{seed}", splits, [0] * len(gold["dev"]), [0] * len(gold["test"]), 50.0, 40.0)
    files = ablation.ablation_files(params, "table3")
    text = files["table3.md"]
    assert "| SNLI (accuracy) | 88.9 / 65.00 ± 7.07† | 88.7 / 50.00 ± 0.00 |" in text
    assert "| SNLI (accuracy) | 100.00 ± 0.00† | 40.00 ± 0.00 |" in text
    result = files["table3.json"]
    for split in ("dev", "test"):
        (c,) = result["comparisons"][split]
        expected = 100.0 - task.score(splits[split], [0] * len(gold[split]))["accuracy"]
        assert c["difference"] == pytest.approx(expected) and c["seeds"] == 2 and c["p_holm"] == c["p_value"]
    assert result["rows"][0]["cells"]["elmo_input"]["dev"]["runs"] == ["snli-elmo_input-s0", "snli-elmo_input-s1"]
