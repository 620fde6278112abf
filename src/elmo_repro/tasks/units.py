"""A task's evaluation units for the paired bootstrap: ``tasks/<task>/units.py`` defines ``UNIT``
(what is independent: sentence, premise, paragraph, document), ``METRIC`` (the task metric it
reproduces), ``reduce`` (that metric of summed statistics, from :mod:`elmo_repro.significance`) and
``statistics(examples, predictions) -> (unit keys, [units, k])``. The modules are imported by name
here, never by the task packages, so the runs do not depend on them."""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Iterable, Sequence

import numpy as np

from ..experiments.tasks import declaration


def grouped(rows: Iterable[tuple[str, Sequence[float]]], width: int) -> tuple[list[str], np.ndarray]:
    """``(unit keys, [units, width])``: the rows of each key summed, keys in order of first appearance."""
    units: dict[str, np.ndarray] = {}
    for key, row in rows:
        units[key] = units.get(key, np.zeros(width)) + np.asarray(row, dtype=float)
    return list(units), np.array(list(units.values()), dtype=float).reshape(len(units), width)


def task_units(task: str) -> ModuleType:
    """The units module of ``task``.

    Raises:
        ValueError: an unknown task name.
    """
    return importlib.import_module(f"{__package__}.{declaration(task).name}.units")
