"""Each task's evaluation units (tasks/<task>/units.py): the metric of the summed unit
statistics is exactly the task's own score, on the in-repo fixtures, for the floor's predictions
and for a perturbed copy of the gold answers."""

import random
from pathlib import Path

import numpy as np
import pytest

from elmo_repro.experiments.tasks import TASKS
from elmo_repro.tasks.base import get_task
from elmo_repro.io import InputError
from elmo_repro.tasks.units import read_units, task_units, write_units

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def near_gold(name, task, examples, rng):
    """Predictions equal to the gold answer for about half of the examples, else the floor's."""
    floor = task.floor(examples, examples)
    gold = {"ner": lambda e: __import__("elmo_repro.tasks.ner.reader", fromlist=["to_iob2"]).to_iob2(e["ner"]),
            "sst5": lambda e: task.labels.index(e["label"]), "snli": lambda e: task.labels.index(e["label"]),
            "squad": lambda e: list(e["span"]), "srl": lambda e: list(e["tags"]),
            "coref": lambda e: e["clusters"]}[name]
    return [gold(e) if rng.random() < 0.5 else f for e, f in zip(examples, floor)]


@pytest.mark.parametrize("name", list(TASKS))
def test_summed_unit_statistics_give_the_task_score(name):
    task, units = get_task(name), task_units(name)
    train, test = task.read("train", FIXTURES / name), task.read("test", FIXTURES / name)
    for predictions in (task.floor(train, test), near_gold(name, task, test, random.Random(0))):
        keys, stats = units.statistics(test, predictions)
        assert len(keys) == len(set(keys)) == stats.shape[0] and stats.ndim == 2
        expected = task.score(test, predictions)[units.METRIC]
        assert float(units.reduce(stats.sum(axis=0))) == pytest.approx(expected, abs=1e-9)


def test_units_group_what_is_not_independent():
    snli, squad = get_task("snli"), get_task("squad")
    test = snli.read("test", FIXTURES / "snli")
    keys, stats = task_units("snli").statistics(test, [0] * len(test))
    assert len(keys) == len({e["text_ids"]["premise"] for e in test}) and stats[:, 1].sum() == len(test)
    questions = squad.read("test", FIXTURES / "squad")
    keys, stats = task_units("squad").statistics(questions, [e["span"] for e in questions])
    assert len(keys) == len({e["paragraph"] for e in questions})
    assert np.allclose(stats[:, 0], stats[:, 1])            # gold spans: F1 1 for every question


@pytest.mark.parametrize("name", list(TASKS))
def test_units_file_round_trips_exactly(name, tmp_path):
    task, units = get_task(name), task_units(name)
    train, test = task.read("train", FIXTURES / name), task.read("test", FIXTURES / name)
    scored = units.statistics(test, near_gold(name, task, test, random.Random(1)))
    floor = units.statistics(test, task.floor(train, test))
    write_units(tmp_path / "units.csv", name, {"dev": floor, "test": scored})
    keys, stats = read_units(tmp_path / "units.csv", name, "test")
    assert keys == scored[0] and np.array_equal(stats, scored[1])        # floats read back bit for bit
    assert read_units(tmp_path / "units.csv", name, "dev")[0] == floor[0]
    assert (tmp_path / "units.csv").read_text().splitlines()[0] == ",".join(["split", "unit", *units.COLUMNS])


@pytest.mark.parametrize("text, error", [
    (None, "units.csv: missing"),
    ("split,unit,correct\n", "line 1: header"),
    ("split,unit,correct,examples\ntest,s1,1,1\ntest,s2,x,1\n", "line 3: a statistic is not a number"),
    ("split,unit,correct,examples\ntest,s1,1\n", "line 2: 3 fields, expected 4"),
    ("split,unit,correct,examples\ndev,s1,1,1\n", "no 'test' units"),
])
def test_a_bad_units_file_is_named_with_its_line(tmp_path, text, error):
    path = tmp_path / "units.csv"
    if text is not None:
        path.write_text(text)
    with pytest.raises(InputError, match=error):
        read_units(path, "sst5", "test")
