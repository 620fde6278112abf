"""A task's evaluation units for the paired bootstrap: ``tasks/<task>/units.py`` defines ``UNIT``
(what is independent: sentence, premise, paragraph, document), ``METRIC`` (the task metric it
reproduces), ``reduce`` (that metric of summed statistics, from :mod:`elmo_repro.significance`) and
``statistics(examples, predictions) -> (unit keys, [units, k])``, and ``COLUMNS`` (the names of the
k statistics). The corpus metrics of summed statistics shared by several tasks are defined here.
A run writes its units (``units.csv``, :func:`write_units`) beside its metrics, git-tracked, so
every significance test is re-derivable from a clone without the runs' predictions.""" 

from __future__ import annotations

import csv
import importlib
import io
from pathlib import Path
from types import ModuleType
from typing import Iterable, Sequence

import numpy as np

from ..experiments.tasks import declaration
from ..io import InputError, atomic_open, read_text

UNITS_FILE = "units.csv"


def _ratio(numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    """numerator / denominator elementwise, 0 where the denominator is 0 (a scorer's convention)."""
    return np.divide(numerator, denominator, out=np.zeros(np.shape(numerator)), where=denominator > 0)


def mean_percent(totals: np.ndarray) -> np.ndarray:
    """100 · Σ score / Σ count, from unit vectors ``[score, count]``: accuracy (score = correct
    examples), SQuAD EM or F1 (score = the questions' best EM or token F1 in [0, 1], as the
    official v1.1 script averages them). Shape ``[..., 2]`` → ``[...]``; 0 where the count is 0."""
    return _ratio(100.0 * totals[..., 0], totals[..., 1])


def span_f1(totals: np.ndarray) -> np.ndarray:
    """Corpus span F1 in percent, from unit vectors ``[true positives, predicted, gold]`` (exact
    span matches, as conlleval and srl-eval.pl count them): 2·tp / (predicted + gold). Shape
    ``[..., 3]`` → ``[...]``; 0 where nothing was predicted or expected."""
    return _ratio(200.0 * totals[..., 0], totals[..., 1] + totals[..., 2])


def coref_average_f1(totals: np.ndarray) -> np.ndarray:
    """The CoNLL average F1 in percent (mean of MUC, B³ and CEAFφ4 F1) from unit (document)
    vectors of 12: for each metric in that order, recall numerator, recall denominator, precision
    numerator, precision denominator: the sums :func:`elmo_repro.tasks.coref.metric.coref_scores`
    accumulates (the reference scorer v8.01 micro-averages over documents the same way). Shape
    ``[..., 12]`` → ``[...]``."""
    f1s = []
    for m in range(3):
        rn, rd, pn, pd = (totals[..., 4 * m + i] for i in range(4))
        recall, precision = _ratio(rn, rd), _ratio(pn, pd)
        f1s.append(_ratio(200.0 * recall * precision, recall + precision))
    return sum(f1s) / 3.0


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


def _number(value: float) -> str:
    """A statistic as written: an integer without a decimal point, else the shortest repr that
    reads back to the same float (the file round-trips exactly)."""
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def write_units(path: Path, task: str, splits: dict[str, tuple[list[str], np.ndarray]]) -> None:
    """Write ``units.csv`` atomically: one row per (split, unit) with the task's ``COLUMNS``, the
    splits in the order given, the units in the order :func:`statistics` returned them.

    Raises:
        ValueError: a split whose statistics do not have one row per key and one column per name.
    """
    columns = list(task_units(task).COLUMNS)
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["split", "unit", *columns])
    for split, (keys, statistics) in splits.items():
        if statistics.shape != (len(keys), len(columns)):
            raise ValueError(f"{task} {split}: statistics of shape {statistics.shape} for {len(keys)} units "
                             f"and columns {columns}")
        for key, row in zip(keys, statistics):
            writer.writerow([split, key, *(_number(v) for v in row)])
    with atomic_open(path) as handle:
        handle.write(buffer.getvalue())


def write_run_units(folder: Path, task: str, examples: dict[str, list[dict]], predictions: dict[str, list]) -> None:
    """A run's (or floor's) ``units.csv``: the unit statistics of its dev and test predictions
    (:func:`write_units`); ``examples`` and ``predictions`` by split."""
    units = task_units(task)
    write_units(Path(folder) / UNITS_FILE, task, {split: units.statistics(examples[split], predictions[split])
                                                  for split in ("dev", "test")})


def read_units(path: Path, task: str, split: str) -> tuple[list[str], np.ndarray]:
    """``(unit keys, [units, k])`` of one split of a run's ``units.csv``.

    Raises:
        InputError: the file is missing, its header is not ``split,unit`` and the task's
            ``COLUMNS``, a row has the wrong number of fields or a non-number, or the split is absent.
    """
    path = Path(path)
    if not path.is_file():
        raise InputError(path, "missing: a run writes its unit statistics when it finishes (`dvc repro`)")
    columns = list(task_units(task).COLUMNS)
    reader = csv.reader(read_text(path).splitlines())
    header = next(reader, None)
    if header != ["split", "unit", *columns]:
        raise InputError(path, f"line 1: header {header}, expected {['split', 'unit', *columns]}")
    keys, rows = [], []
    for line, row in enumerate(reader, 2):
        if len(row) != 2 + len(columns):
            raise InputError(path, f"line {line}: {len(row)} fields, expected {2 + len(columns)}")
        if row[0] != split:
            continue
        try:
            rows.append([float(v) for v in row[2:]])
        except ValueError:
            raise InputError(path, f"line {line}: a statistic is not a number: {row[2:]}") from None
        keys.append(row[1])
    if not keys:
        raise InputError(path, f"no {split!r} units")
    return keys, np.array(rows, dtype=float)
