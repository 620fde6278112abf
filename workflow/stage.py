"""The stage type of the registry (:mod:`workflow.registry`): one pipeline stage, or a family of
stages, as data, and its code dependencies (the project's one import scan, :mod:`workflow.imports`).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any, Callable

from elmo_repro.experiments.tasks import TASKS

from .imports import NOT_OUTPUT_CODE, code_deps

PKG = "src/elmo_repro"
# Every stage depends on the params check, so a bad params.yaml fails before any other stage runs
# (and before DVC deletes the outputs of the stages an edit made stale). Its report never changes.
PARAMS_CHECK = "results/params_check.json"


@dataclass(frozen=True)
class Stage:
    """One pipeline stage, or with ``foreach`` a family of stages (one per run).

    ``module`` is run as ``python -m stages.<module>`` from the repo root. In a family, ``${key}``
    in the args, deps, params and outputs stands for the item's key (the run id) and
    ``${item.<path>}`` for a value of its params entry; DVC expands them (``foreach``) and
    :func:`expand` does the same for Snakemake, so both name the stage ``<family>@<key>``.
    """

    name: str
    module: str
    deps: list[str]                                         # data and other non-code inputs
    params: list[str]
    code: list[str] = field(default_factory=list)           # extra entry points (imported by name)
    args: str = ""                                          # extra command-line arguments
    foreach: str | None = None                              # params path of {run id: run spec}
    outs: list[str] = field(default_factory=list)           # cached by DVC
    committed: list[str] = field(default_factory=list)      # kept in git (cache: false)
    metrics: list[str] = field(default_factory=list)        # JSON files, not cached by DVC
    plots: list[str] = field(default_factory=list)          # CSV or PNG files, not cached by DVC
    plot_props: dict[str, dict[str, str]] = field(default_factory=dict)  # DVC plot options by path (template, x, y)
    persist: list[str] = field(default_factory=list)  # outputs DVC must not delete (checkpoints)
    threads: int = 2  # pinned: torch's float reductions depend on it (Snakemake reserves as many)
    # Cluster resources for Snakemake (gpu, mem_mb, runtime, slurm_partition): the profile's
    # compute.resources (:func:`stage_resources`), set by concrete(); DVC ignores them
    resources: dict[str, Any] = field(default_factory=dict)
    # has a device path (``--device``; elmo_repro.device): may request GPUs
    # (compute.resources.<stage>.gpu), and then computes on one
    device: bool = False
    # also takes ``--precision`` (compute.precision.<stage>); the biLM's training stages take
    # pretrain.precision instead, part of the training configuration
    precision: bool = False
    compute_args: str = ""   # --device/--precision from the profile's compute section, set by concrete()
    launcher: str = "python"   # runs `-m stages.<module>`: compute.launcher.<stage> (e.g. torchrun), set by concrete()
    job: str = "main"   # main: dvc.yaml (`dvc repro`); analysis: analysis/dvc.yaml (JOB_FILES)
    always_changed: bool = False  # DVC runs it on every repro (a check of what lies outside the DAG)
    # A view's tables whose runs it reads: their folders (and, for Table 1, its floors) become deps,
    # resolved from the rendered params by concrete(), so each table is its own `dvc repro` target
    # and builds only its own runs
    run_tables: tuple[str, ...] = ()
    task: str | None = None  # the task whose data it reads (none of its stages exist when data.left_out names it)
    declaration_of: str | None = None   # the task whose declaration alone it reads, if not ``task`` ("${key}")
    # exists only when the pipeline trains its biLM: not with released weights (bilm_source.path),
    # which hold no softmax (no pretraining, perplexity or fine-tuning)
    pretraining: bool = False
    # params it reads only where the rendered params hold them (DVC refuses a missing key)
    optional_params: tuple[str, ...] = ()
    # deps that the params choose (prepare_lm: the mirror files of lm_data's sources), added by concrete()
    param_deps: Callable[[dict], list[str]] | None = None

    @property
    def cmd(self) -> str:
        extra = " ".join(part for part in (self.args, self.compute_args) if part)
        return f"{self.launcher} -m stages.{self.module} --threads {self.threads}" + (f" {extra}" if extra else "")

    @property
    def code_deps(self) -> list[str]:
        return list(_code_deps(self.module, tuple(self.code), self.declaration_of or self.task))

    @property
    def all_deps(self) -> list[str]:
        guard = [] if self.name == "check_params" else [PARAMS_CHECK]
        return [*self.code_deps, *self.deps, *guard]

    @property
    def kept(self) -> list[str]:
        """The outputs a failing run of the stage must not delete: the uncached files git tracks
        (tables, metrics, run files). DVC keeps them with ``persist: true`` and Snakemake with
        ``update()`` (restored if the job fails); the stages write every file atomically, so a
        failed run leaves the old ones whole. Cached outputs come back with ``dvc checkout``."""
        return [*self.committed, *self.metrics, *self.plots]

    @property
    def all_outs(self) -> list[str]:
        return [*self.outs, *self.committed, *self.metrics, *self.plots, *self.persist]


DECLARATIONS = f"{PKG}/experiments/tasks/__init__.py"


@functools.lru_cache(maxsize=None)
def _code_deps(module: str, code: tuple[str, ...], task: str | None = None) -> tuple[str, ...]:
    """The import scan of a stage's entry points, once per process (a profile expands a family
    into hundreds of stages that share it). The task declarations are found by name at import time
    (``elmo_repro.experiments.tasks``), which a scan cannot see: a stage of one task depends on
    its own declaration, any other stage that imports them on all of them, so a new task's
    declaration re-runs no other task's stages."""
    deps = code_deps(f"stages/{module}.py", *code, exclude=NOT_OUTPUT_CODE)
    if DECLARATIONS in deps:
        if task == "${key}":                  # a family keyed by task: each item its own declaration
            deps = sorted({*deps, *code_deps("elmo_repro.experiments.declaration"),
                           f"{PKG}/experiments/tasks/${{key}}.py"})
        else:
            names = [task] if task else list(TASKS)
            deps = sorted({*deps, *code_deps(*(f"elmo_repro.experiments.tasks.{name}" for name in names))})
    return tuple(deps)
