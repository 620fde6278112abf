"""Paired-bootstrap comparisons of run groups (views/bootstrap.py) on the in-repo SST-5 fixture."""

import json
from pathlib import Path

import pytest

from elmo_repro.experiments.specs import RunSpec
from elmo_repro.io import InputError
from elmo_repro.tasks.base import get_task
from elmo_repro.views.bootstrap import compare, holm_table
from elmo_repro.views.query import TableRun

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "sst5"
ELMO = {"bilm": "finetuned", "placement": "both", "mix": "learned"}


def run(root, name, seed, predictions):
    spec = RunSpec(task="sst5", elmo_name=name, elmo=None if name == "baseline" else ELMO, seed=seed,
                   train_fraction=1.0)
    folder = root / spec.id
    folder.mkdir(parents=True)
    (folder / "predictions.json").write_text(json.dumps({"dev": [], "test": predictions}))
    return TableRun(spec.id, spec, folder)


def test_the_difference_is_that_of_the_task_scores_and_seeds_are_paired(tmp_path):
    task = get_task("sst5")
    test = task.read("test", FIXTURE)
    gold = [task.labels.index(e["label"]) for e in test]
    wrong = [(g + 1) % 5 for g in gold]
    half = [g if i % 2 else w for i, (g, w) in enumerate(zip(gold, wrong))]
    control = [run(tmp_path, "baseline", 1, wrong), run(tmp_path, "baseline", 0, half)]
    treatment = [run(tmp_path, "elmo", 0, gold), run(tmp_path, "elmo", 1, gold), run(tmp_path, "elmo", 2, gold)]
    result = compare("sst5", control, treatment, examples=test, resamples=2000)
    # seeds 0 and 1 only (seed 2 has no pair): (100 + 100) / 2 - (50 + 0) / 2 = 75 points
    assert result["seeds"] == 2 and result["units"] == len(test) and result["unit"] == "sentence"
    assert result["difference"] == pytest.approx(100.0 - (task.score(test, half)["accuracy"] + 0.0) / 2)
    assert result["control_runs"] == ["sst5-baseline-s0", "sst5-baseline-s1"]
    assert result["p_value"] < 0.01 and result["detectable"] > 0
    same = compare("sst5", control, [run(tmp_path / "b", "elmo", 0, half), run(tmp_path / "b", "elmo", 1, wrong)],
                   examples=test, resamples=500)
    assert same["difference"] == 0.0 and same["p_value"] == 1.0
    rows = holm_table([result, same])
    assert rows[0]["p_holm"] == pytest.approx(min(1.0, 2 * result["p_value"])) and rows[1]["p_holm"] == 1.0


def test_missing_predictions_and_unpaired_seeds_are_named(tmp_path):
    test = get_task("sst5").read("test", FIXTURE)
    a = run(tmp_path, "baseline", 0, [0] * len(test))
    b = run(tmp_path, "elmo", 1, [0] * len(test))
    with pytest.raises(InputError, match="no seed in common"):
        compare("sst5", [a], [b], examples=test)
    (a.folder / "predictions.json").unlink()
    c = run(tmp_path, "elmo", 0, [0] * len(test))
    with pytest.raises(InputError, match="sst5-baseline-s0/predictions.json: missing"):
        compare("sst5", [a], [c], examples=test)
