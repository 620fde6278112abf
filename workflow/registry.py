"""The single registry of pipeline stages.

Every stage is declared here once: its command, its dependencies (including its own code), the
params sections it reads, its outputs and its metrics. ``dvc.yaml`` is rendered from this list
(``python -m workflow.render``) and a test checks that re-rendering changes nothing. Paths under
the data mirror use DVC's templating (``${data.mirror}``), resolved from ``params.yaml``.

Data flows one way: raw text -> vocabulary -> biLM -> perplexity / features -> tasks -> tables.

Beside it: the stage type and its code dependencies (:mod:`workflow.stage`), what a stage asks of
the machine (:mod:`workflow.resources`) and the Snakemake side (:mod:`workflow.snakemake_dag`).
"""

from __future__ import annotations

from dataclasses import replace

# The one project import here: the mirror paths of the evaluation splits are declared beside their
# readers (a plain constant, so rendering dvc.yaml needs no third-party package).
from elmo_repro.data.eval_text import SPLIT_FILES as EVAL_SPLIT_FILES
from elmo_repro.data.eval_text import SPLIT_PATHS as EVAL_SPLIT_PATHS
from elmo_repro.data.lm_corpus import HELDOUT as LM_HELDOUT
from elmo_repro.data.lm_corpus import SOURCES as LM_SOURCES
from elmo_repro.experiments.bilm_source import PRETRAINED_BILM, released_bilm
from elmo_repro.experiments.specs import JOBS, RUNS_DIRS, family
from elmo_repro.experiments.tasks import TASKS
from elmo_repro.params import lookup
from elmo_repro.views.report import INPUTS as REPORT_INPUTS

from .resources import compute_args, stage_resources
from .stage import PARAMS_CHECK, Stage

MIRROR = "${data.mirror}"
BILM = "${bilm_source.path}"  # models/bilm (trained here) or a directory with released ELMo weights

# Code dependencies come from the project's one import scan (elmo_repro.fingerprint, through
# workflow/imports.py): a stage depends on every project file its module imports, transitively.
# Left out: modules that cannot change an output (NOT_OUTPUT_CODE: log lines, progress, MLflow
# records) and the params schema, which only refuses bad params before a stage starts (params.py
# imports it by name, so the scan does not see it; only check_params depends on it).
# The evaluation splits every training text is checked against (contamination.splits reads them).
EVAL_MIRROR = [f"{MIRROR}/{path}" for path in EVAL_SPLIT_PATHS]
# Training stages depend on the contamination report: they never run on a text that failed it.
CONTAMINATION_REPORT = "results/metrics/contamination.json"
WHOLE_FILE = "params.yaml:"      # DVC: a params entry without keys tracks every key of the file

PRETRAINED = PRETRAINED_BILM   # written by pretrain_bilm; its checkpoint (Adagrad state) beside it


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
        code=[f"elmo_repro.tasks.{task}.task", f"elmo_repro.tasks.{task}.units"],
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
    return Stage(name=prepare.stage, module="prepare", args=f"--task {task}", code=[f"elmo_repro.tasks.{task}.prepare"],
                 deps=[*(f"{MIRROR}/{path}" for path in prepare.inputs), *prepare.sources],
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
        declaration_of="${key}",
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


TABLE_STAGES = [
    # the main job's Table 1: its runs and floors only (the control column is the analysis job's)
    replace(table_stage("table1", ["paper/table1.csv", "paper/perplexity.txt", "results/metrics/perplexity.json"],
                        ["tables.table1", "bilm_source"], ["table1.md", "table1.csv", "table1.json"], job="main",
                        run_tables=("table1",)), optional_params=("data.left_out",)),
    # Table 1 again with its char-layer control column and the +ELMo vs control p-values
    # and its test on each task's evaluation units (the runs' units.csv, elmo_repro.views.bootstrap)
    replace(table_stage("table1_controls", ["paper/table1.csv", "paper/perplexity.txt",
                                            "results/metrics/perplexity.json"],
                        ["tables.table1", "tables.table1_controls", "bilm_source"],
                        ["table1_controls.md", "table1_controls.csv", "table1_controls.json"],
                        code=[f"elmo_repro.tasks.{t}.units" for t in TASKS],
                        run_tables=("table1", "table1_controls")), optional_params=("data.left_out",)),
    replace(table_stage("finetuning", ["results/metrics/finetune"], ["tables.finetuning"],
                        ["finetuning.md", "finetuning.json"], run_tables=("finetuning",)), pretraining=True),
    # the ablations of §5.1-5.2: dev and test metrics and a paired bootstrap on each split
    *(table_stage(name, [f"paper/{name}.csv"],
                  [f"tables.{name}"], [f"{name}.md", f"{name}.csv", f"{name}.json"],
                  code=[f"elmo_repro.tasks.{t}.units" for t in ABLATION_TASKS],
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
        code=[f"elmo_repro.tasks.{task}.task", f"elmo_repro.tasks.{task}.units"],
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
