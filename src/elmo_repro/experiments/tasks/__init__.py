"""Every downstream task declared once, one module per task in this folder, each with its
``DECLARATION`` (:class:`~elmo_repro.experiments.declaration.TaskDeclaration`): what the params
schema, the run specs, the stage registry, the tables and :func:`elmo_repro.tasks.base.get_task`
know of a task without importing its code.

A new task is a module here, its folder ``elmo_repro/tasks/<name>/`` (task, reader, metric, prepare,
model, floor, units) and its section in the profiles. The modules are found by name when this
package is imported, so a new one changes no other file (and no other stage's code dependencies:
``workflow.registry`` gives each stage the declarations it reads). Torch-free.
"""

from __future__ import annotations

import importlib
import pkgutil

from ..declaration import TaskDeclaration


def _discover() -> dict[str, TaskDeclaration]:
    """The declarations of this folder's modules, by name, in their ``order``.

    Raises:
        TypeError: a module without a ``DECLARATION``.
        ValueError: a declaration whose name is not its module's.
    """
    found = []
    for info in pkgutil.iter_modules(__path__):
        module = importlib.import_module(f"{__name__}.{info.name}")
        task = getattr(module, "DECLARATION", None)
        if not isinstance(task, TaskDeclaration):
            raise TypeError(f"{module.__file__}: no DECLARATION (a TaskDeclaration)")
        if task.name != info.name:
            raise ValueError(f"{module.__file__}: declares task {task.name!r}; the file must be named after it")
        found.append(task)
    return {task.name: task for task in sorted(found, key=lambda task: (task.order, task.name))}


TASKS: dict[str, TaskDeclaration] = _discover()
TASK_NAMES = tuple(TASKS)


def declaration(name: str) -> TaskDeclaration:
    """The declaration of task ``name``.

    Raises:
        ValueError: an unknown task (the known ones are listed).
    """
    if name not in TASKS:
        raise ValueError(f"unknown task {name!r}; known: {', '.join(TASKS)}")
    return TASKS[name]
