"""Comparisons of run groups (views/bootstrap.py) from the runs' unit statistics (``units.csv``),
on the in-repo SST-5 fixture."""

from pathlib import Path

import pytest
from scipy.stats import t as student_t

from elmo_repro.experiments.specs import RunSpec
from elmo_repro.io import InputError
from elmo_repro.tasks.base import get_task
from elmo_repro.tasks.units import task_units, write_units
from elmo_repro.views.bootstrap import compare, holm_table
from elmo_repro.views.query import TableRun

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "sst5"
ELMO = {"bilm": "finetuned", "placement": "both", "mix": "learned"}


def run(root, name, seed, predictions, examples):
    """A finished run's folder holding only what a clone has of it: its ``units.csv``."""
    spec = RunSpec(task="sst5", elmo_name=name, elmo=None if name == "baseline" else ELMO, seed=seed,
                   train_fraction=1.0)
    folder = root / spec.id
    folder.mkdir(parents=True)
    statistics = task_units("sst5").statistics(examples, predictions)
    write_units(folder / "units.csv", "sst5", {"dev": statistics, "test": statistics})
    return TableRun(spec.id, spec, folder)


def test_the_difference_is_that_of_the_task_scores_and_seeds_are_paired(tmp_path):
    task = get_task("sst5")
    test = task.read("test", FIXTURE)
    gold = [task.labels.index(e["label"]) for e in test]
    wrong = [(g + 1) % 5 for g in gold]
    half = [g if i % 2 else w for i, (g, w) in enumerate(zip(gold, wrong))]
    control = [run(tmp_path, "baseline", 1, wrong, test), run(tmp_path, "baseline", 0, half, test)]
    treatment = [run(tmp_path, "elmo", s, gold, test) for s in (0, 1, 2)]
    result = compare("sst5", control, treatment, resamples=2000)
    # seeds 0 and 1 only (seed 2 has no pair): (100 + 100) / 2 - (50 + 0) / 2 = 75 points
    assert result["seeds"] == 2 and result["units"] == len(test) and result["unit"] == "sentence"
    assert result["difference"] == pytest.approx(100.0 - (task.score(test, half)["accuracy"] + 0.0) / 2)
    assert result["control_runs"] == ["sst5-baseline-s0", "sst5-baseline-s1"]
    # per-seed differences 50 and 100: seed SE 25, about 1 degree of freedom, so not significant
    assert result["seed_se"] == pytest.approx(25.0) and result["df"] < 1.5
    assert result["p_value"] == pytest.approx(2 * student_t.sf(75.0 / result["standard_error"], result["df"]))
    assert result["p_value"] > 0.05
    same = compare("sst5", control, [run(tmp_path / "b", "elmo", 0, half, test), run(tmp_path / "b", "elmo", 1, wrong, test)],
                   resamples=500)
    assert same["difference"] == 0.0 and same["p_value"] == 1.0
    rows = holm_table([result, same])
    assert rows[0]["p_holm"] == pytest.approx(min(1.0, 2 * result["p_value"])) and rows[1]["p_holm"] == 1.0
    # the smaller p is tested at 0.05 / 2, the other at 0.05; the per-batch p-values are not kept
    assert rows[0]["level"] == 0.025 and rows[1]["level"] == 0.05 and "p_batches" not in rows[0]
    assert rows[1]["decision"] == "not significant" and rows[0]["detectable"] > 0


def test_missing_units_and_unpaired_seeds_are_named(tmp_path):
    test = get_task("sst5").read("test", FIXTURE)
    a = run(tmp_path, "baseline", 0, [0] * len(test), test)
    b = run(tmp_path, "elmo", 1, [0] * len(test), test)
    with pytest.raises(InputError, match="no seed in common"):
        compare("sst5", [a], [b])
    (a.folder / "units.csv").unlink()
    c = run(tmp_path, "elmo", 0, [0] * len(test), test)
    with pytest.raises(InputError, match="sst5-baseline-s0/units.csv: missing"):
        compare("sst5", [a], [c])
