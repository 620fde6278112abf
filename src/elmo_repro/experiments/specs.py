"""The run matrix as data: ELMo specs, run specs, and the table specs that request runs.

A run is (task, ELMo spec, seed, training fraction) and is one DVC stage instance, one Snakemake
job and one MLflow run. Profiles name ELMo specs (``elmo_specs``) and list, per table, which runs
that table reads (``tables``); :func:`listed_runs` turns them into the ``runs`` section of
``params.yaml``, grouped by job (the main job's Table 1, the analysis job's comparisons) and in
stage families (``train_<task>`` without ELMo, ``train_<task>_elmo`` with cached ELMo layers), so a
run shared by two tables is trained once and a sparse table never becomes a Cartesian product
nobody reads.

This module imports only pydantic (tasks are declared in :mod:`.tasks`), so the workflow (dvc.yaml
rendering, the Snakefile) can use it without torch.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from .strict import Strict
from .tasks import TASKS

NO_ELMO = "baseline"                          # the name of "no ELMo" in table specs and run ids
# The layer sources a run can read (ElmoSpec.bilm): the pretrained biLM, the task's fine-tuned copy
# (§3.4), or CoVe's MT-LSTM (McCann et al. 2017; its two layers through the same injection module).
BILMS = ("base", "finetuned", "cove")
COVE_MODEL = "models/cove"                    # written by stage train_cove
# The two jobs (docs/pipeline.md): the main job builds the paper's Table 1 (`dvc repro`), the analysis job every
# table that compares settings (`dvc repro analysis/dvc.yaml`), reusing the main job's outputs.
JOBS = ("main", "analysis")
MAIN_TABLES = ("table1",)                     # every other table belongs to the analysis job
RUNS_DIRS = {"main": "results/runs", "analysis": "results/analysis/runs"}
# Each job's pipeline file (rendered by workflow.render); the analysis job's stages run in the
# repository root (wdir) and reuse the main job's outputs.
JOB_FILES = {"main": "dvc.yaml", "analysis": "analysis/dvc.yaml"}


def features_dir(task: str, bilm: str) -> str:
    """Where the cached layers of ``task``'s examples under ``bilm`` live (a stage output)."""
    return f"{TASKS[task].features_dir}/{bilm}"


def finetuned_dir(task: str) -> str:
    """Where the biLM fine-tuned on ``task``'s training text is written (a stage output)."""
    return f"models/finetuned/{task}"


class ElmoSpec(Strict):
    """How a run uses ELMo (paper §3.3, Eq. 1; ablations §5.1–5.2).

    ``mix``: ``learned`` = softmax-normalised layer weights s and scale γ, trained with the L2
    penalty λ·Σw² (``l2_coef``) toward the uniform average; ``last`` = the top biLM layer only
    (bilm-tf ``use_top_only``); ``fixed`` = one layer ``layer`` (0 is the context-free char layer).
    A fixed mix trains no s and adds no penalty but keeps γ trainable, as bilm-tf's top-only mix.
    ``train_weights`` / ``train_gamma`` switch training of s and γ separately. ``bilm``: the
    pretrained biLM (``base``), the one fine-tuned on the run's task (``finetuned``), or CoVe's
    MT-LSTM (``cove``: its two layers, ``layer`` 0 the first; no char layer).

    ``gamma_init``: ``one`` starts γ at 1 as bilm-tf's ``weight_layers`` does; ``matched`` starts it
    at RMS(static word vectors) / RMS(the unscaled mix over the run's first training texts), so
    ELMo enters the task model at the scale of the vectors it joins (a declared departure: the
    paper's supplement A.2 credits γ with bridging exactly that difference in distributions, and
    with a few hundred updates per epoch Adam moves γ at most ~lr per update, too slowly to do it
    in time; issue 29).

    ``word_vectors``: feed the task model's static word vectors beside ELMo (the paper's default).
    Off, ELMo (or, with ``mix: fixed`` and ``layer: 0``, the biLM's char layer) replaces them: the
    "ELMo only" and "char layer instead of the vectors" cells of Table 7. A task's own character
    encoder (SQuAD, NER, coreference) stays; a matched γ still targets the vectors' scale, the
    scale of what ELMo replaces.
    """

    bilm: Literal[BILMS] = "base"      # finetuned: the task's fine-tuned biLM (paper §3.4); cove: CoVe
    placement: Literal["input", "output", "both", "paper"] = "paper"
    mix: Literal["learned", "last", "fixed"] = "learned"
    layer: int | None = Field(default=None, ge=0)
    l2_coef: float = Field(default=0.0, ge=0.0)     # λ
    dropout: float = Field(default=0.5, ge=0.0, lt=1.0)
    layer_norm: bool = False
    train_weights: bool = True
    train_gamma: bool = True
    gamma_init: Literal["one", "matched"] = "one"
    word_vectors: bool = True

    @model_validator(mode="after")
    def _layer_matches_mix(self) -> "ElmoSpec":
        if (self.mix == "fixed") != (self.layer is not None):
            raise ValueError("layer: set it exactly when mix is 'fixed' (the layer index, 0 = char layer)")
        if not self.word_vectors and self.placement == "output":
            raise ValueError("word_vectors: false needs ELMo at the input (placement input, both or paper), "
                             "which replaces the vectors there")
        return self


class RunSpec(Strict):
    """One run of the matrix. ``elmo`` is None for a run without ELMo (the baseline)."""

    task: str
    elmo_name: str
    elmo: ElmoSpec | None
    seed: int = Field(ge=0)
    train_fraction: float = Field(gt=0.0, le=1.0)

    @model_validator(mode="after")
    def _known_task(self) -> "RunSpec":
        if self.task not in TASKS:
            raise ValueError(f"task: unknown task {self.task!r}; known: {', '.join(TASKS)}")
        if (self.elmo is None) != (self.elmo_name == NO_ELMO):
            raise ValueError(f"elmo: must be null exactly when elmo_name is {NO_ELMO!r}")
        if self.elmo is not None and self.elmo.placement == "paper":
            raise ValueError("elmo.placement: a run's placement is resolved (input, output or both)")
        return self

    @property
    def id(self) -> str:
        return run_id(self.task, self.elmo_name, self.seed, self.train_fraction)

    @property
    def family(self) -> str:
        return family(self.task, self.elmo is not None)

    @property
    def features_path(self) -> str | None:
        """The cached layers the run reads (:func:`features_dir` of its biLM); None without ELMo."""
        return None if self.elmo is None else features_dir(self.task, self.elmo.bilm)


class TableRuns(Strict):
    """The runs one table reads: every (task, ELMo spec, seed, fraction) combination listed."""

    tasks: list[str]
    elmo: list[str] = Field(min_length=1)           # names in elmo_specs, or "baseline" (no ELMo)
    seeds: list[int] = Field(min_length=1)
    train_fractions: list[float] = [1.0]


def run_id(task: str, elmo_name: str, seed: int, train_fraction: float = 1.0) -> str:
    """``ner-elmo-s0``; a fraction below 1 adds ``-f<percent>`` (``-f10``). No dots: DVC reads a
    dot in a foreach key as nesting."""
    rid = f"{task}-{elmo_name}-s{seed}"
    if train_fraction < 1.0:
        rid += f"-f{round(100 * train_fraction, 4):g}".replace(".", "p")
    return rid


def family(task: str, with_elmo: bool) -> str:
    """The stage family of a run: ``train_<task>`` or ``train_<task>_elmo`` (cached ELMo layers)."""
    return f"train_{task}_elmo" if with_elmo else f"train_{task}"


def resolve_elmo(spec: ElmoSpec, task: str) -> ElmoSpec:
    """The spec with ``placement: paper`` replaced by the task's placement in the paper."""
    if spec.placement != "paper":
        return spec
    return spec.model_copy(update={"placement": TASKS[task].placement})


def table_job(table: str) -> str:
    """The job that builds table ``table``: ``main`` for :data:`MAIN_TABLES`, else ``analysis``."""
    return "main" if table in MAIN_TABLES else "analysis"


def listed_runs(tables: dict, elmo_specs: dict) -> dict[str, dict[str, dict[str, dict]]]:
    """The ``runs`` section: ``{job: {family: {run id: run spec as a plain dict}}}`` for every run
    that some table in ``tables`` lists, each once. A run that a main-job table lists
    (:data:`MAIN_TABLES`) belongs to the main job, any other to the analysis job. Every job holds
    every task's two families (empty ones too: DVC's ``foreach`` needs the key); ids sorted.

    Raises:
        ValueError: a table names an ELMo spec that ``elmo_specs`` does not define, or an unknown task.
    """
    specs = {name: ElmoSpec.model_validate(value) for name, value in elmo_specs.items()}
    runs: dict[str, dict[str, dict[str, dict]]] = {job: {} for job in JOBS}
    # main tables first: a run both jobs list is trained once, by the main job
    for table_name, table in sorted(tables.items(), key=lambda item: table_job(item[0]) != "main"):
        if not table.get("runs"):
            continue
        wanted = TableRuns.model_validate(table["runs"])
        job = table_job(table_name)
        for task in wanted.tasks:
            for name in wanted.elmo:
                if name != NO_ELMO and name not in specs:
                    raise ValueError(f"tables.{table_name}.runs.elmo: unknown ELMo spec {name!r}; "
                                     f"defined: {', '.join([NO_ELMO, *specs])}")
                elmo = None if name == NO_ELMO else resolve_elmo(specs[name], task)
                for seed in wanted.seeds:
                    for fraction in wanted.train_fractions:
                        spec = RunSpec(task=task, elmo_name=name, elmo=elmo, seed=seed,
                                       train_fraction=fraction)
                        if any(spec.id in items for items in runs["main"].values()):
                            continue
                        runs[job].setdefault(spec.family, {})[spec.id] = spec.model_dump(mode="json")
    families = [family(task, with_elmo) for task in TASKS for with_elmo in (False, True)]
    return {job: {fam: dict(sorted(runs[job].get(fam, {}).items())) for fam in families} for job in JOBS}


def job_runs(runs_section: dict, job: str | None = None) -> dict[str, dict]:
    """The run specs (plain dicts) of a rendered ``runs`` section by id: one job's, or every job's."""
    jobs = [job] if job is not None else list(runs_section)
    return {rid: spec for j in jobs for items in runs_section.get(j, {}).values() for rid, spec in items.items()}


def find_run(runs_section: dict, run_id: str) -> tuple[str, str, RunSpec] | None:
    """``(job, family, spec)`` of ``run_id`` in a rendered ``runs`` section; None if absent."""
    for job, families in runs_section.items():
        for fam, items in families.items():
            if run_id in items:
                return job, fam, RunSpec.model_validate(items[run_id])
    return None


def render_elmo_features(runs: dict, base_model: str) -> dict[str, dict[str, dict[str, str]]]:
    """The ``elmo_features`` section: per job, one entry ``<task>-<biLM>`` per (task, biLM) that
    some run of the job reads (a rendered ``runs`` section) and no earlier job extracts, with the
    biLM directory (``base_model`` for the base biLM, :func:`finetuned_dir` for a fine-tuned one,
    :data:`COVE_MODEL` for CoVe), the examples and the output directory; the features stage family
    iterates over it, so layers are extracted once per biLM in use."""
    section: dict[str, dict[str, dict[str, str]]] = {}
    done: set[tuple[str, str]] = set()
    for job in JOBS:
        wanted = sorted({(spec["task"], spec["elmo"]["bilm"]) for spec in job_runs(runs, job).values()
                         if spec.get("elmo") is not None} - done)
        done |= set(wanted)
        section[job] = {f"{task}-{bilm}": {"task": task, "bilm": bilm,
                                           "model": {"base": base_model, "cove": COVE_MODEL}.get(bilm)
                                           or finetuned_dir(task),
                                           "data": TASKS[task].data_dir, "out": features_dir(task, bilm)}
                        for task, bilm in wanted}
    return section


def render_finetune_tasks(runs: dict) -> dict[str, dict[str, dict[str, str]]]:
    """The ``finetune_tasks`` section: per job, the tasks whose runs read a fine-tuned biLM and
    that no earlier job fine-tunes, with their examples and the fine-tuned biLM's directory (the
    fine-tuning stage family iterates over it)."""
    section: dict[str, dict[str, dict[str, str]]] = {}
    done: set[str] = set()
    for job in JOBS:
        tasks = sorted({spec["task"] for spec in job_runs(runs, job).values()
                        if spec.get("elmo") is not None and spec["elmo"]["bilm"] == "finetuned"} - done)
        done |= set(tasks)
        section[job] = {task: {"data": TASKS[task].data_dir, "out": finetuned_dir(task)} for task in tasks}
    return section
