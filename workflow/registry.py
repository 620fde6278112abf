"""The single registry of pipeline stages.

Every stage is declared here once: its command, its dependencies (including its own code), the
params sections it reads, its outputs and its metrics. ``dvc.yaml`` is rendered from this list
(``python -m workflow.render``) and a test checks that re-rendering changes nothing. Paths under
the data mirror use DVC's templating (``${data.mirror}``), resolved from ``params.yaml``.

Data flows one way: raw text -> vocabulary -> biLM -> perplexity / features -> tasks -> tables.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field, replace
from typing import Any, Callable

# The one project import here: the mirror paths of the evaluation splits are declared beside their
# readers (a plain constant, so rendering dvc.yaml needs no third-party package).
from elmo_repro.data.eval_text import SPLIT_FILES as EVAL_SPLIT_FILES
from elmo_repro.data.eval_text import SPLIT_PATHS as EVAL_SPLIT_PATHS
from elmo_repro.data.lm_corpus import HELDOUT as LM_HELDOUT
from elmo_repro.data.lm_corpus import SOURCES as LM_SOURCES
from elmo_repro.experiments.bilm_source import PRETRAINED_BILM, released_bilm
from elmo_repro.experiments.specs import JOB_FILES, JOBS, RUNS_DIRS, family  # noqa: F401  (JOB_FILES: for render and tests)
from elmo_repro.experiments.tasks import TASKS
from elmo_repro.params import lookup
from elmo_repro.views.report import INPUTS as REPORT_INPUTS

from .imports import NOT_OUTPUT_CODE, code_deps

MIRROR = "${data.mirror}"
BILM = "${bilm_source.path}"  # models/bilm (trained here) or a directory with released ELMo weights
PKG = "src/elmo_repro"

# Code dependencies come from the project's one import scan (elmo_repro.fingerprint, through
# workflow/imports.py): a stage depends on every project file its module imports, transitively.
# Left out: modules that cannot change an output (NOT_OUTPUT_CODE: log lines, progress, MLflow
# records) and the params schema, which only refuses bad params before a stage starts (params.py
# imports it by name, so the scan does not see it; only check_params depends on it).
# The evaluation splits every training text is checked against (contamination.splits reads them).
EVAL_MIRROR = [f"{MIRROR}/{path}" for path in EVAL_SPLIT_PATHS]
# Training stages depend on the contamination report: they never run on a text that failed it.
CONTAMINATION_REPORT = "results/metrics/contamination.json"
# Every stage depends on the params check, so a bad params.yaml fails before any other stage runs
# (and before DVC deletes the outputs of the stages an edit made stale). Its report never changes.
PARAMS_CHECK = "results/params_check.json"
WHOLE_FILE = "params.yaml:"      # DVC: a params entry without keys tracks every key of the file

PRETRAINED = PRETRAINED_BILM   # written by pretrain_bilm; its checkpoint (Adagrad state) beside it


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
        return list(_code_deps(self.module, tuple(self.code)))

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


@functools.lru_cache(maxsize=None)
def _code_deps(module: str, code: tuple[str, ...]) -> tuple[str, ...]:
    """The import scan of a stage's entry points, once per process (a profile expands a family
    into hundreds of stages that share it)."""
    return tuple(code_deps(f"stages/{module}.py", *code, exclude=NOT_OUTPUT_CODE))


def run_family(task: str, with_elmo: bool, job: str) -> Stage:
    """The stages of a task's runs of one job without ELMo (``train_<task>``) or on cached layers
    (``..._elmo``), writing ``<RUNS_DIRS[job]>/<run id>/``."""
    name = family(task, with_elmo)
    out = f"{RUNS_DIRS[job]}/${{key}}"
    return Stage(
        name=name,
        module="train_run",
        args="--run ${key}",
        foreach=f"runs.{job}.{name}",
        job=job,
        code=[f"elmo_repro.tasks.{task}", f"elmo_repro.tasks.{task}.units"],
        # with ELMo: the layers of the run's biLM (base or fine-tuned), ${item} being its run spec
        deps=[TASKS[task].data_dir, f"${{tasks.{task}.vectors}}",
              *([f"{TASKS[task].features_dir}/${{item.elmo.bilm}}"] if with_elmo else [])],
        params=[f"runs.{job}.{name}.${{key}}", f"tasks.{task}"],
        outs=[f"{out}/model.pt", f"{out}/predictions.json"],
        committed=[f"{out}/spec.json", f"{out}/scalar_mix.json", f"{out}/units.csv"],
        metrics=[f"{out}/metrics.json"],
        plots=[f"{out}/history.csv"],
        task=task,
        device=True,
        precision=True,
    )


def prepare_stage(task: str) -> Stage:
    """The task's splits from the mirror (``data/<dir>/<split>.jsonl`` examples pointing at
    ``<split>.texts.jsonl``), as declared."""
    prepare = TASKS[task].prepare
    return Stage(name=prepare.stage, module=prepare.stage, deps=[f"{MIRROR}/{path}" for path in prepare.inputs],
                 params=list(prepare.params), outs=[TASKS[task].data_dir], metrics=list(prepare.metrics),
                 threads=1, task=task)


def features_stage(job: str) -> Stage:
    """Every biLM layer of every distinct text of a task's splits under one biLM (one HDF5 per
    split, keyed by text id), once per (task, biLM) that some run of ``job`` reads first: the rendered params section
    ``elmo_features.<job>``, keyed ``<task>-<biLM>`` (experiments.specs.render_elmo_features)."""
    return Stage(
        name="features",
        module="extract_features",
        args=f"--features ${{key}} --job {job}",
        foreach=f"elmo_features.{job}",
        job=job,
        deps=["${item.model}", "${item.data}"],
        params=["features", f"elmo_features.{job}.${{key}}"],
        outs=["${item.out}"],
        device=True,
        precision=True,
    )


def finetune_stage(job: str) -> Stage:
    """Domain fine-tuning (paper §3.4) of the pretrained biLM on a task's training text, once per
    task whose runs of ``job`` read a fine-tuned biLM first (the rendered params section
    ``finetune_tasks.<job>``). The pretraining checkpoint beside models/bilm supplies the Adagrad
    state; the stage checks it holds these weights."""
    return Stage(
        name="finetune",
        module="finetune_bilm",
        args="--task ${key}",
        foreach=f"finetune_tasks.{job}",
        job=job,
        deps=[BILM, "${item.data}", CONTAMINATION_REPORT],
        params=["bilm_source", "pretrain", "finetune", "perplexity"],
        outs=["${item.out}"],
        persist=["models/finetune_checkpoints/${key}"],
        metrics=["results/metrics/finetune/${key}.json"],
        pretraining=True,
        device=True,
    )


# --- CoVe and the probes (paper §5.3, Tables 4-6) --------------------------------------------------
MULTI30K_REPORT = "results/metrics/contamination_multi30k.json"
WSD_DATA = f"{MIRROR}/wsd_raganato_eval"          # probes.wsd's default sets (docs/results.md: SemCor elsewhere)
TREEBANK = f"{MIRROR}/${{probes.pos.treebank}}"
PROBE_FEATURES = "data/features/probes/${key}"

COVE_STAGES = [
    Stage(
        name="cove_vectors",
        module="cove_vectors",
        deps=["data/lm/train.txt", CONTAMINATION_REPORT],
        params=["cove.word_vectors"],
        outs=["data/cove_vectors"],
        threads=1,  # gensim with one worker: bit-identical vectors
    ),
    Stage(
        name="prepare_multi30k",
        module="prepare_multi30k",
        deps=[*EVAL_MIRROR, "data/lm/heldout.txt"],    # EVAL_MIRROR holds multi30k/raw
        params=["data", "contamination", "cove.data"],
        outs=["data/multi30k"],
        metrics=["results/metrics/multi30k_data.json"],
        threads=1,
    ),
    Stage(
        name="check_contamination_multi30k",
        module="check_contamination",
        args="--text multi30k",
        deps=[*EVAL_MIRROR, "data/multi30k/train.jsonl", "data/lm/heldout.txt"],
        params=["data", "contamination"],
        committed=["results/contamination_multi30k"],
        metrics=[MULTI30K_REPORT],
        threads=1,
    ),
    Stage(
        name="train_cove",
        module="train_cove",
        deps=["data/multi30k", "${cove.vectors}", MULTI30K_REPORT],
        params=["cove.vectors", "cove.standardize_vectors", "cove.model", "cove.trainer"],
        outs=["models/cove"],
        persist=["models/cove_checkpoints"],
        committed=["results/cove"],
        metrics=["results/metrics/cove.json"],
        device=True,
    ),
    # the test translations scored as published Multi30k scores are (tokenized, lower-cased), apart
    # from training so a scoring convention never retrains the model
    Stage(
        name="cove_published_bleu",
        module="cove_published_bleu",
        deps=["models/cove", "data/multi30k"],
        params=[],
        metrics=["results/metrics/cove_published_bleu.json"],
        threads=1,
    ),
]

PROBE_STAGES = [
    # every layer of the biLM or CoVe for the WSD sentences and the treebank, once per source
    Stage(
        name="probe_features",
        module="probe_features",
        args="--source ${key}",
        foreach="probes.sources",
        deps=["${item.model}", WSD_DATA, TREEBANK],
        params=["data", "features", "probes.sources.${key}", "probes.wsd", "probes.pos.treebank", "probes.pos.split"],
        outs=[PROBE_FEATURES],
        device=True,
        precision=True,
    ),
    Stage(
        name="probe_wsd",
        module="probe_wsd",
        args="--source ${key}",
        foreach="probes.sources",
        deps=[PROBE_FEATURES, "${probes.wordnet}", WSD_DATA],
        params=["data", "probes.wordnet", "probes.sources.${key}", "probes.wsd"],
        outs=["results/probes/predictions/wsd/${key}"],
        committed=["results/probes/wsd/${key}"],
        threads=1,
    ),
    Stage(
        name="wsd_first_sense",
        module="wsd_first_sense",
        deps=["${probes.wordnet}", WSD_DATA],
        params=["data", "probes.wordnet", "probes.wsd"],
        outs=["results/probes/predictions/wsd/wordnet"],
        committed=["results/probes/wsd/wordnet"],
        threads=1,
    ),
    Stage(
        name="probe_pos",
        module="probe_pos",
        args="--source ${key}",
        foreach="probes.sources",
        deps=[PROBE_FEATURES, TREEBANK],
        params=["data", "probes.sources.${key}", "probes.pos"],
        outs=["results/probes/predictions/pos/${key}"],
        committed=["results/probes/pos/${key}"],
    ),
    Stage(
        name="pos_most_frequent_tag",
        module="pos_most_frequent_tag",
        deps=[TREEBANK],
        params=["data", "probes.pos"],
        outs=["results/probes/predictions/pos/most_frequent_tag"],
        committed=["results/probes/pos/most_frequent_tag"],
        threads=1,
    ),
    Stage(
        name="neighbours",
        module="neighbours",
        deps=["${probes.sources.bilm.model}", "${probes.neighbours.corpus}", "${probes.neighbours.vectors}"],
        params=["probes.sources.bilm.model", "probes.neighbours"],
        committed=["results/probes/neighbours.json"],
    ),
]


MAIN_RUNS, ANALYSIS_RUNS = RUNS_DIRS["main"], RUNS_DIRS["analysis"]
ABLATION_TASKS = ("squad", "snli", "srl")   # the tasks of the paper's Tables 2, 3 and 7 (their views read their data)
TABLES = "results/tables"


def table_stage(name: str, deps: list[str], params: list[str], outs: list[str], job: str = "analysis",
                code: list[str] = (), run_tables: tuple[str, ...] = ()) -> Stage:
    """A view (``python -m stages.table --table NAME``): reads finished runs or probes, writes
    ``results/tables/<outs>`` (kept in git); never trains. One stage per table, so each table is
    rebuilt on its own (``dvc repro [analysis/dvc.yaml:]NAME``) and only from what it reads: the
    folders of the runs ``run_tables`` list (:func:`run_folders`). ``code``: modules the view
    imports by name (the import scan does not see them)."""
    return Stage(name=name, module="table", args=f"--table {name}", code=[f"elmo_repro.views.{name}", *code],
                 deps=deps, params=["profile", *params], committed=[f"{TABLES}/{out}" for out in outs],
                 threads=1, job=job, run_tables=run_tables)


def run_folders(tables: tuple[str, ...], params: dict) -> list[str]:
    """The folders of every run the tables ``tables`` list in the rendered ``params`` (a cell that
    reads another spec's run gives that run's folder; :func:`elmo_repro.views.query.table_runs`),
    and with ``table1`` and ``figure1`` their tasks' floors (``results/runs/<task>-floor``: Figure 1
    marks runs that never beat the floor); each once, in order."""
    from elmo_repro.views.query import table_runs   # pydantic only, as the specs

    folders: list[str] = []
    for table in tables:
        spec = params.get("tables", {}).get(table) or {}
        if spec.get("runs"):
            folders += [str(run.folder) for run in table_runs(params, table)]
        if table in ("table1", "figure1") and spec.get("runs"):
            folders += [f"{MAIN_RUNS}/{task}-floor" for task in spec["runs"]["tasks"]]
    return list(dict.fromkeys(folders))


def left_out(params: dict) -> dict[str, str]:
    """``data.left_out``: {task or evaluation split: why} (workflow/free_data.py)."""
    return (params.get("data") or {}).get("left_out") or {}


def active(stage: Stage, params: dict) -> bool:
    """Whether ``stage`` exists under ``params``: not a stage of a left-out task, nor one of the
    biLM's training when ``bilm_source.path`` names released weights."""
    if stage.pretraining and released_bilm(params):
        return False
    return stage.task is None or stage.task not in left_out(params)


def absent_deps(params: dict) -> set[str]:
    """The deps no stage may read under ``params``: the outputs of the stages that do not exist
    (:func:`active`: a left-out task's prepared data, the perplexity without pretraining), and the
    mirror path of left-out evaluation splits (unless a kept split shares it)."""
    gone = left_out(params)
    deps = {out for stage in STAGES if stage.foreach is None and not active(stage, params) for out in stage.all_outs}
    kept = {path for split, path in EVAL_SPLIT_FILES.items() if split not in gone}
    deps |= {f"{MIRROR}/{path}" for split, path in EVAL_SPLIT_FILES.items() if split in gone and path not in kept}
    return deps


def lm_text_deps(params: dict) -> list[str]:
    """prepare_lm's mirror inputs under ``params``: each of ``lm_data.train_sources`` (a file, a zip,
    or the folder of the official 1B Word training shards, which DVC hashes file by file, so a
    changed shard re-runs the stage) and the ``lm_data.heldout`` text, in the reader's order."""
    config = params.get("lm_data") or {}
    chosen = set(config.get("train_sources") or [])
    deps = [f"{MIRROR}/{path}" for name, (path, _) in LM_SOURCES.items() if name in chosen]
    heldout = config.get("heldout")
    return deps + ([f"{MIRROR}/{LM_HELDOUT[heldout]}"] if heldout in LM_HELDOUT else [])


def concrete(stage: Stage, params: dict) -> Stage:
    """``stage`` as ``params`` make it: the run folders of its ``run_tables`` added to its deps,
    and no dep on what does not exist under them (:func:`absent_deps`). Unchanged when neither
    applies."""
    gone = absent_deps(params)
    chosen = stage.param_deps(params) if stage.param_deps is not None else []
    deps = [dep for dep in stage.deps if dep not in gone and dep not in chosen] + chosen
    extra = [name for name in stage.optional_params if lookup(params, name) is not None]
    launcher = ((params.get("compute") or {}).get("launcher") or {}).get(stage.name.split("@")[0], "python")
    resources = stage_resources(stage, params)
    return replace(stage, deps=[*deps, *run_folders(stage.run_tables, params)], run_tables=(), param_deps=None,
                   params=[*stage.params, *extra], optional_params=(), launcher=launcher,
                   resources=resources, compute_args=compute_args(stage, params, resources))


DEFAULT_RESOURCES = {"mem_mb": 4000, "runtime": 60}   # without a compute section (hand-made params)


def _compute_key(stage: Stage, table: dict) -> str:
    """The entry of a ``compute`` table that applies to ``stage``: its (family's) name, else its
    module (``train_run``: every task run; ``table``: every view), else ``default``."""
    name = stage.name.split("@")[0]
    return name if name in table else stage.module if stage.module in table else "default"


def compute_args(stage: Stage, params: dict, resources: dict[str, Any]) -> str:
    """The stage's ``--device`` and ``--precision`` under ``params``: ``--device cuda`` exactly when
    its resources hold a GPU (so a stage computes on the GPU it is given, and only then), and
    ``--precision`` from ``compute.precision`` when it is not fp32. Empty for a CPU stage in fp32:
    the tiny profile's commands are those of the code before devices.

    Raises:
        ValueError: a precision for a stage without ``--precision``, or bf16 without a GPU (naming
            the key path).
    """
    table = (params.get("compute") or {}).get("precision") or {}
    key = _compute_key(stage, table)
    precision = table.get(key, "fp32")
    args = ["--device cuda"] if resources.get("gpu") else []
    if precision != "fp32":
        if not stage.precision:
            name = stage.name.split("@")[0]
            raise ValueError(f"compute.precision.{key}: stage {name} takes no --precision"
                             + (" (the biLM trains in pretrain.precision)" if name in ("pretrain_bilm", "finetune") else ""))
        if not resources.get("gpu"):
            raise ValueError(f"compute.precision.{key}: {precision} needs a GPU (compute.resources.{key}.gpu)")
        args.append(f"--precision {precision}")
    return " ".join(args)


def stage_resources(stage: Stage, params: dict) -> dict[str, Any]:
    """Snakemake's resources for ``stage`` under ``params``: ``compute.resources`` by the stage's (or
    family's) name, else by its module (``train_run``: every task run; ``table``: every view), else
    its ``default``; ``slurm_partition`` from ``compute.partitions`` (``gpu`` when it requests GPUs,
    else ``cpu``), so CPU stages never wait in the GPU queue.

    Raises:
        ValueError: GPUs requested for a stage that computes on the CPU (``Stage.device`` False).
    """
    compute = params.get("compute") or {}
    table = compute.get("resources") or {}
    name = stage.name.split("@")[0]
    key = _compute_key(stage, table)
    chosen = {**DEFAULT_RESOURCES, **table.get("default", {}), **table.get(key, {})}
    if chosen.get("gpu") and not stage.device:
        raise ValueError(f"compute.resources.{key}.gpu: stage {name} computes on the CPU (no device path): "
                         "it must not hold a GPU")
    if not chosen.get("gpu"):
        chosen.pop("gpu", None)
    partition = (compute.get("partitions") or {}).get("gpu" if chosen.get("gpu") else "cpu")
    return {**chosen, **({"slurm_partition": partition} if partition else {})}


TABLE_STAGES = [
    # the main job's Table 1: its runs and floors only (the control column is the analysis job's)
    replace(table_stage("table1", ["paper/table1.csv", "paper/perplexity.txt", "results/metrics/perplexity.json"],
                        ["tables.table1", "bilm_source"], ["table1.md", "table1.csv", "table1.json"], job="main",
                        run_tables=("table1",)), optional_params=("data.left_out",)),
    # Table 1 again with its char-layer control column and the +ELMo vs control p-values
    # and its paired bootstrap: the runs' test predictions scored per unit against each task's test split
    replace(table_stage("table1_controls", ["paper/table1.csv", "paper/perplexity.txt",
                                            "results/metrics/perplexity.json", *(t.data_dir for t in TASKS.values())],
                        ["tables.table1", "tables.table1_controls", "bilm_source"],
                        ["table1_controls.md", "table1_controls.csv", "table1_controls.json"],
                        code=[f"elmo_repro.tasks.{t}" for t in TASKS] + [f"elmo_repro.tasks.{t}.units" for t in TASKS],
                        run_tables=("table1", "table1_controls")), optional_params=("data.left_out",)),
    replace(table_stage("finetuning", ["results/metrics/finetune"], ["tables.finetuning"],
                        ["finetuning.md", "finetuning.json"], run_tables=("finetuning",)), pretraining=True),
    # the ablations of §5.1-5.2: dev and test metrics and a paired bootstrap on each split
    *(table_stage(name, [f"paper/{name}.csv", *(TASKS[t].data_dir for t in ABLATION_TASKS)],
                  [f"tables.{name}"], [f"{name}.md", f"{name}.csv", f"{name}.json"],
                  code=[f"elmo_repro.tasks.{t}" for t in ABLATION_TASKS] + [f"elmo_repro.tasks.{t}.units" for t in ABLATION_TASKS],
                  run_tables=(name,))
      for name in ("table2", "table3", "table7")),
    table_stage("table4", ["results/probes/neighbours.json"], [], ["table4.md"]),
    table_stage("table5", ["paper/table5.csv", "results/probes/wsd"], [], ["table5.md", "table5.json"]),
    table_stage("table6", ["paper/table6.csv", "results/probes/pos"], [], ["table6.md", "table6.json"]),
    table_stage("cove_table", ["results/cove/bleu.json", "results/metrics/cove_published_bleu.json",
                               "results/metrics/multi30k_data.json"], [], ["cove.md"]),
    # Figure 1 (§5.4): dev metric against training-set size, the runs tables.figure1 lists
    replace(table_stage("figure1", [], ["tables.figure1"], ["figure1.md", "figure1.json"], run_tables=("figure1",)),
            plots=[f"{TABLES}/figure1.csv", f"{TABLES}/figure1.png"],
            plot_props={f"{TABLES}/figure1.csv": {"template": "learning_curve", "x": "train_examples", "y": "dev"}}),
    # Figure 2 (§5.5): the learned layer weights of the runs tables.figure2 lists (Table 1's +ELMo)
    replace(table_stage("figure2", [], ["tables.figure2"], ["figure2.md"], run_tables=("figure2",)),
            plots=[f"{TABLES}/figure2.csv", f"{TABLES}/figure2.png"],
            plot_props={f"{TABLES}/figure2.csv": {"template": "heatmap", "x": "layer", "y": "row"}}),
]

# The report page (issue 27): every table and figure above on one offline HTML page, a view of
# the views' files (it reads nothing else, so it is rebuilt exactly when a table changes)
REPORT_STAGE = Stage(
    name="report", module="report", job="analysis", threads=1,
    deps=[f"{TABLES}/{name}" for name in REPORT_INPUTS],
    params=["profile", "bilm_source"], committed=["results/report/index.html"])


def floor_stage(task: str) -> Stage:
    """The task's trivial baseline, scored like its runs (``results/runs/<task>-floor``)."""
    return Stage(
        name=f"floor_{task}",
        module="floor",
        args=f"--task {task}",
        code=[f"elmo_repro.tasks.{task}", f"elmo_repro.tasks.{task}.units"],
        deps=[TASKS[task].data_dir],
        params=[],
        outs=[f"{MAIN_RUNS}/{task}-floor/predictions.json"],
        committed=[f"{MAIN_RUNS}/{task}-floor/units.csv"],
        metrics=[f"{MAIN_RUNS}/{task}-floor/metrics.json"],
        threads=1,
        task=task,
    )


STAGES: list[Stage] = [
    Stage(
        name="check_params",
        module="check_params",
        code=["elmo_repro.schema"],       # what it runs (the other stages do not depend on it)
        # it also checks the files every stage reads from outside the pipeline (the data mirror,
        # the pipeline files): it runs on every repro (~1 s, the same report)
        deps=[],
        always_changed=True,
        params=[WHOLE_FILE],
        committed=[PARAMS_CHECK],
        threads=1,
    ),
    Stage(
        name="prepare_lm",
        module="prepare_lm",
        deps=[*EVAL_MIRROR],
        param_deps=lm_text_deps,
        params=["data", "lm_data", "contamination"],
        outs=["data/lm"],
        metrics=["results/metrics/lm_data.json"],
        threads=1,
    ),
    Stage(
        name="check_contamination",
        module="check_contamination",
        args="--text lm",
        deps=[*EVAL_MIRROR, "data/lm/train.txt", "data/lm/heldout.txt"],
        params=["data", "contamination"],
        committed=["results/contamination"],
        metrics=["results/metrics/contamination.json"],
        threads=1,
    ),
    Stage(
        name="vocab",
        module="vocab",
        deps=["data/lm/train.txt"],
        params=["vocab"],
        outs=["data/vocab"],
        threads=1,
        pretraining=True,
    ),
    Stage(
        name="pretrain_bilm",
        module="pretrain_bilm",
        deps=["data/lm/train.txt", "data/lm/train.shards.tsv", "data/vocab", CONTAMINATION_REPORT],
        params=["bilm", "pretrain"],
        outs=["models/bilm"],
        persist=["models/bilm_checkpoints"],
        metrics=["results/metrics/pretrain.json"],
        pretraining=True,
        device=True,
    ),
    Stage(
        name="perplexity",
        module="perplexity",
        deps=["data/lm/heldout.txt", "data/vocab", "models/bilm"],
        params=["perplexity"],
        metrics=["results/metrics/perplexity.json"],
        pretraining=True,
        device=True,
        precision=True,
    ),
    Stage(
        name="word_vectors",
        module="word_vectors",
        deps=["data/lm/train.txt", CONTAMINATION_REPORT],
        params=["word_vectors"],
        outs=["data/vectors"],
        threads=1,  # gensim with one worker: bit-identical vectors
    ),
    *(stage for task in TASKS for stage in (prepare_stage(task), floor_stage(task))),
    *(stage for job in JOBS for stage in (
        finetune_stage(job), features_stage(job),
        *(run_family(task, with_elmo, job) for task in TASKS for with_elmo in (False, True)))),
    *(replace(stage, job="analysis") for stage in (*COVE_STAGES, *PROBE_STAGES)),
    *TABLE_STAGES,
    REPORT_STAGE,
]


def job_stages(job: str, params: dict | None = None) -> list[Stage]:
    """The stages (families unexpanded) of one job, in registry order; with ``params``, only those
    that exist under them (:func:`active`)."""
    return [stage for stage in STAGES if stage.job == job and (params is None or active(stage, params))]


def resolve(path: str, params: dict) -> str:
    """Substitute DVC-style ``${section.key}`` references with values from the params."""
    def lookup(match: re.Match) -> str:
        value: Any = params
        for key in match.group(1).split("."):
            value = value[key]
        return str(value)
    return re.sub(r"\$\{([\w.]+)\}", lookup, path)


def expand(params: dict) -> list[Stage]:
    """The concrete stages for Snakemake: each family once per run in ``params`` (named
    ``<family>@<run id>``, as DVC names its ``foreach`` stages), the other stages with their run
    folders resolved (:func:`concrete`)."""
    stages = []
    for stage in STAGES:
        if not active(stage, params):
            continue
        if stage.foreach is None:
            stages.append(concrete(stage, params))
            continue
        section: Any = params
        for key in stage.foreach.split("."):
            section = section.get(key, {}) if isinstance(section, dict) else {}
        for run, item in section.items():
            def sub(text: str, run: str = run, item: Any = item) -> str:
                return _ITEM.sub(lambda m: str(_at(item, m.group(1))), text.replace("${key}", run))
            stages.append(concrete(replace(
                stage, name=f"{stage.name}@{run}", foreach=None, args=sub(stage.args),
                deps=[sub(d) for d in stage.deps],
                params=[sub(p) for p in stage.params], outs=[sub(o) for o in stage.outs],
                committed=[sub(o) for o in stage.committed], metrics=[sub(o) for o in stage.metrics],
                plots=[sub(o) for o in stage.plots], persist=[sub(o) for o in stage.persist]), params))
    return stages


_ITEM = re.compile(r"\$\{item\.([\w.]+)\}")


def _at(item: Any, path: str) -> Any:
    """The value at a dotted ``path`` of a foreach item (DVC's ``${item.a.b}``)."""
    for key in path.split("."):
        item = item[key]
    return item


def is_directory(out: str) -> bool:
    """Outputs are files when their name has a suffix (``metrics.json``), else directories."""
    return "." not in out.rsplit("/", 1)[-1]


class Outputs:
    """Every output of a list of concrete stages, indexed for :func:`snakemake_inputs`: which stage
    writes a path, and which outputs lie inside a directory (built once: a profile can have
    hundreds of stages)."""

    def __init__(self, concrete: list[Stage]):
        self.writer: dict[str, str] = {}               # output -> the stage that writes it
        self.inside: dict[str, list[str]] = {}         # directory -> the outputs under it
        for stage in concrete:
            for out in stage.all_outs:
                self.writer.setdefault(out, stage.name)
                parts = out.split("/")
                for n in range(1, len(parts)):
                    self.inside.setdefault("/".join(parts[:n]), []).append(out)

    def enclosing(self, path: str) -> str | None:
        """The output directory ``path`` lies inside, if any (the nearest)."""
        parts = path.split("/")
        for n in range(len(parts) - 1, 0, -1):
            if "/".join(parts[:n]) in self.writer:
                return "/".join(parts[:n])
        return None


def snakemake_inputs(stage: Stage, concrete: list[Stage], params: dict, outputs: Outputs | None = None) -> list[str]:
    """The stage's deps as Snakemake inputs: ``${...}`` references resolved from the params; a
    file inside another stage's output directory replaced by that directory, and a directory that
    holds other stages' outputs (``results/runs``) by those outputs (Snakemake matches outputs
    exactly). ``outputs``: :class:`Outputs` of ``concrete`` (built here when not given)."""
    outputs = outputs or Outputs(concrete)
    inputs: list[str] = []
    for dep in stage.all_deps:
        dep = resolve(dep, params)
        inside = [out for out in outputs.inside.get(dep, []) if outputs.writer[out] != stage.name]
        if not inside:
            around = outputs.enclosing(dep)
            inside = [around if around is not None and outputs.writer[around] != stage.name else dep]
        inputs += [c for c in inside if c not in inputs]
    return inputs
