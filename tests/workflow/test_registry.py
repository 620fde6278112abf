"""The registry is the single source of truth: dvc.yaml and params.yaml are its renders."""

import importlib
import subprocess
import sys
from pathlib import Path

import yaml

from workflow import profile, render
from elmo_repro.experiments.specs import JOBS, RUNS_DIRS
from elmo_repro.experiments.tasks import TASKS
from elmo_repro.experiments.specs import JOB_FILES
from workflow.imports import NOT_OUTPUT_CODE
from workflow.registry import STAGES, job_stages
from workflow.snakemake_dag import expand

ROOT = Path(__file__).resolve().parents[2]
PARAMS = yaml.safe_load((ROOT / "params.yaml").read_text(encoding="utf-8"))


def test_each_jobs_pipeline_file_is_the_render_of_the_registry():
    assert JOB_FILES == {"main": "dvc.yaml", "analysis": "analysis/dvc.yaml"}
    for job, name in JOB_FILES.items():
        assert (ROOT / name).read_text(encoding="utf-8") == render.render_dvc(job), name
    assert render.main(["--check"]) == 0


def test_the_main_job_is_table1_and_the_analysis_job_everything_else():
    main = {s.name for s in job_stages("main")}
    analysis = {s.name for s in job_stages("analysis")}
    assert {"pretrain_bilm", "perplexity", "finetune", "features", "table1", "train_ner", "train_ner_elmo"} <= main
    assert {"train_cove", "probe_wsd", "table1_controls", "table4", "table5", "table6", "cove_table",
            "finetuning", "train_ner_elmo"} <= analysis
    # Table 1's runs are the main job's; its char-layer control runs the analysis job's
    table1_tasks = PARAMS["tables"]["table1"]["runs"]["tasks"]
    assert set(table1_tasks) <= set(TASKS)
    assert {rid for fam in PARAMS["runs"]["main"].values() for rid in fam} == {
        f"{task}-{elmo}-s{seed}" for task in table1_tasks for elmo in ("baseline", "elmo") for seed in (0, 1, 2)}
    analysis_runs = {rid for fam in PARAMS["runs"]["analysis"].values() for rid in fam}
    assert {rid for rid in analysis_runs if "-char_layer-" in rid} == {
        f"{task}-char_layer-s{seed}" for task in PARAMS["tables"]["table1_controls"]["runs"]["tasks"]
        for seed in (0, 1, 2)}
    # Tables 2, 3 and 7: a spec that computes Table 1's +ELMo run (SRL's input placement, SQuAD's and
    # SNLI's input and output) or its baseline is not trained again
    # Figure 1: SNLI and SRL at 1% and 10% of their training data (100% is Table 1's)
    fractions = {rid for rid in analysis_runs if "-f" in rid.rsplit("-s", 1)[1]}
    assert fractions == {f"{task}-{elmo}-s{seed}-f{pct}" for task in ("snli", "srl") for elmo in ("baseline", "elmo")
                         for seed in (0, 1, 2) for pct in (1, 10)}
    ablations = analysis_runs - fractions - {rid for rid in analysis_runs if "-char_layer-" in rid}
    assert {rid.rsplit("-s", 1)[0] for rid in ablations} == {
        f"{task}-{spec}" for task in ("squad", "snli", "srl")
        for spec in ("elmo_last", "elmo_lambda_1", "elmo_output", "char_only", "elmo_only")
    } | {"squad-elmo_input", "snli-elmo_input", "srl-elmo_both"}
    # the main job's table reads the main job's runs only, so `dvc repro` never trains an analysis run
    concrete = expand(PARAMS)
    table1 = next(s for s in concrete if s.name == "table1")
    assert {d for d in table1.deps if d.startswith("results/")} - {"results/metrics/perplexity.json"} == {
        f"{RUNS_DIRS['main']}/{rid}" for fam in PARAMS["runs"]["main"].values() for rid in fam} | {
        f"{RUNS_DIRS['main']}/{task}-floor" for task in table1_tasks}
    analysis_outs = {out for s in concrete if s.job == "analysis" for out in s.all_outs}
    for stage in (s for s in concrete if s.job == "main"):
        for dep in stage.all_deps:
            assert not any(dep == o or dep.startswith(o + "/") or o.startswith(dep + "/") for o in analysis_outs), (
                stage.name, dep)


def test_committed_params_are_the_tiny_profile():
    committed = yaml.safe_load((ROOT / "params.yaml").read_text(encoding="utf-8"))
    assert committed == profile.render("tiny")


def test_every_stage_reads_exactly_its_declared_sections():
    for stage in STAGES:
        assert (ROOT / "stages" / f"{stage.module}.py").is_file()
        if stage.module in ("train_run", "floor", "prepare", "check_params", "table"):   # per run, task, table; whole file
            continue
        module = importlib.import_module(f"stages.{stage.module}")
        assert [section.replace("${job}", stage.job) for section in module.SECTIONS] == stage.params, stage.name


def test_every_task_has_a_floor_and_both_run_families():
    names = {s.name for s in STAGES}
    for task in TASKS:
        assert {f"floor_{task}", f"train_{task}", f"train_{task}_elmo", TASKS[task].prepare.stage} <= names
        family = next(s for s in STAGES if s.name == f"train_{task}")
        assert family.foreach == f"runs.main.train_{task}" and family.params == [
            f"runs.main.train_{task}.${{key}}", f"tasks.{task}"]
        # the task's own package (imported by name at run time) is a dependency; no other task's is
        assert any(d.startswith(f"src/elmo_repro/tasks/{task}/") for d in family.all_deps)
        # (shared modules directly under tasks/ are allowed: base, word_embeddings, classification)
        others = [d for d in family.all_deps if d.startswith("src/elmo_repro/tasks/") and d.count("/") > 3
                  and not d.startswith(f"src/elmo_repro/tasks/{task}/")]
        assert not others


def test_families_expand_to_one_stage_per_run():
    concrete = {s.name: s for s in expand(PARAMS)}
    for job in JOBS:
        for family, runs in PARAMS["runs"][job].items():
            for run_id in runs:
                stage = concrete[f"{family}@{run_id}"]
                assert stage.job == job and stage.cmd.endswith(f"--run {run_id}")
                assert f"{RUNS_DIRS[job]}/{run_id}/metrics.json" in stage.metrics
    assert not any("${" in out for s in concrete.values() for out in s.all_outs)


def test_test_only_and_logging_modules_are_no_dependency():
    for stage in STAGES:
        deps = stage.all_deps
        assert "src/elmo_repro/bilm/reference.py" not in deps, stage.name
        assert not set(NOT_OUTPUT_CODE) & set(deps), stage.name
        # validation changes no output: only the params check (whose job it is) depends on it
        assert any(d.startswith("src/elmo_repro/schema/") for d in deps) == (stage.name == "check_params"), stage.name


def test_code_dependencies_exist():
    for stage in STAGES:
        for dep in stage.all_deps:
            if dep.startswith(("stages/", "src/")):
                for key in (TASKS if "${key}" in dep else [None]):     # a family keyed by task
                    path = dep.replace("${key}", key) if key else dep
                    assert (ROOT / path).exists(), f"{stage.name}: {path}"


def test_a_stage_depends_on_the_declarations_it_reads():
    """The declarations are found by name at import time, so the registry adds them: a stage of one
    task (or a family keyed by task) its own, a stage of all tasks all of them; a new task's
    declaration leaves every other task's stages as they are."""
    declarations = {f"src/elmo_repro/experiments/tasks/{name}.py" for name in TASKS}
    by_name = {stage.name: stage for stage in STAGES}
    assert declarations & set(by_name["train_ner"].all_deps) == {"src/elmo_repro/experiments/tasks/ner.py"}
    assert declarations & set(by_name["prepare_coref"].all_deps) == {"src/elmo_repro/experiments/tasks/coref.py"}
    assert declarations & set(by_name["floor_srl"].all_deps) == {"src/elmo_repro/experiments/tasks/srl.py"}
    assert "src/elmo_repro/experiments/tasks/${key}.py" in by_name["finetune"].all_deps
    assert not declarations & set(by_name["finetune"].all_deps)
    assert declarations <= set(by_name["table1"].all_deps)


def test_dag_is_connected_one_way():
    concrete = expand(PARAMS)
    produced = {out: s.name for s in concrete for out in s.all_outs}
    order = [s.name for s in concrete]
    for stage in concrete:
        for dep in stage.all_deps:
            producers = [name for out, name in produced.items()
                         if dep == out or dep.startswith(out + "/") or out.startswith(dep + "/")]
            for producer in producers:
                assert order.index(producer) < order.index(stage.name), (stage.name, dep)


def test_profiles_override_only_known_keys():
    base = profile.render("tiny")

    def keys(tree, prefix=""):
        return {prefix + k for k in tree} | {x for k, v in tree.items() if isinstance(v, dict)
                                              for x in keys(v, prefix + k + ".")}

    # named-entry maps: a profile may add entries (the ablations' ELMo specs and the features they
    # need), but each entry's keys are ones the default's entries use; tables have optional fields
    # (the fine-tuning table's downstream runs), checked by the schema on every profile
    named = ("elmo_specs", "elmo_features", "finetune_tasks")

    def entry_keys(tree):
        return set().union(*(keys(entry) for entry in tree.values() if isinstance(entry, dict)))

    for name in profile.available():
        rendered = profile.render(name)
        fixed = ("runs", "tables", "compute") + named     # compute: per-stage maps (test_slurm_submission.py)
        assert set(rendered["tables"]) == set(base["tables"]), name     # a table's optional fields: the schema's
        assert keys({k: v for k, v in rendered.items() if k not in fixed}) == keys(
            {k: v for k, v in base.items() if k not in fixed}), name
        for section in ("elmo_specs",):
            assert entry_keys(rendered[section]) <= entry_keys(base[section]), (name, section)
        for section in ("elmo_features", "finetune_tasks"):                   # per job
            assert set(rendered[section]) == set(JOBS), (name, section)
            entries = {key: e for job in JOBS for key, e in rendered[section][job].items()}
            assert entry_keys(entries) <= entry_keys({k: e for job in JOBS for k, e in base[section][job].items()}), (
                name, section)
        assert {job: set(fams) for job, fams in rendered["runs"].items()} == {
            job: set(fams) for job, fams in base["runs"].items()}, name           # the same jobs and families


def _local_imports(path: Path, seen: set[Path]) -> set[Path]:
    """Project files (src/elmo_repro, stages) that ``path`` imports, transitively, added to
    ``seen``; imports under ``if TYPE_CHECKING:`` are annotations only and left out."""
    from workflow.imports import local_imports

    return seen | local_imports(path)


def test_every_stage_depends_on_all_the_code_it_imports():
    """A stage must re-run when any project file it imports changes: each file a stage's module
    imports (transitively) lies under one of its declared dependencies (the logging-only modules
    and package ``__init__`` files aside)."""
    for stage in STAGES:
        deps = [ROOT / d for d in [*stage.all_deps, *NOT_OUTPUT_CODE] if d.startswith(("stages/", "src/"))]
        imported = _local_imports(ROOT / "stages" / f"{stage.module}.py", set())
        missing = sorted(str(f.relative_to(ROOT)) for f in imported
                         if f.name != "__init__.py" and not any(f == d or f.is_relative_to(d) for d in deps))
        assert not missing, f"{stage.name} imports {missing} but does not depend on them"


def test_the_import_scan_finds_real_imports():
    """The scan behind the test above: a stage's own imports, relative imports and submodules."""
    found = {str(f.relative_to(ROOT)) for f in _local_imports(ROOT / "stages" / "pretrain_bilm.py", set())}
    assert {"src/elmo_repro/bilm/train.py", "src/elmo_repro/data/prefetch.py",       # via ..data.prefetch
            "src/elmo_repro/bilm/lstm.py", "stages/__init__.py"} <= found
    assert "src/elmo_repro/bilm/token_cache.py" not in found                          # TYPE_CHECKING only


def test_refresh_re_renders_the_runs_of_an_edited_params_file(tmp_path):
    params = profile.render("smoke")
    params["tables"]["table1"]["runs"]["seeds"] = [0, 7]
    path = tmp_path / "params.yaml"
    path.write_text(profile.dump(params, "smoke"), encoding="utf-8")
    from elmo_repro.io import InputError
    from elmo_repro.params import load_params

    try:
        load_params(path)
        raise AssertionError("a stale runs section must be refused")
    except InputError as err:
        assert "runs: out of date" in str(err) and "ner-baseline-s7: missing" in str(err)
    assert profile.main(["--refresh", "--output", str(path)]) == 0
    refreshed = load_params(path)
    assert set(refreshed["runs"]["main"]["train_ner"]) == {"ner-baseline-s0", "ner-baseline-s7"}
    assert refreshed["tables"] == params["tables"] and refreshed["profile"] == "smoke"


def test_every_stage_answers_help_with_its_own_name():
    """`python -m stages.<name> --help` prints the stage's usage and exits 0 (issue 31 §3). One
    process imports every stage (torch once); each sees itself as ``__main__``, as under ``-m``."""
    names = sorted(p.stem for p in (ROOT / "stages").glob("*.py") if p.stem != "__init__")
    code = f"""
import contextlib, importlib, importlib.util, io, sys
for name in {names!r}:
    sys.modules["__main__"].__spec__ = importlib.util.find_spec("stages." + name)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        try:
            importlib.import_module("stages." + name).main(["--help"])
        except SystemExit as done:
            assert done.code == 0, (name, done.code)
        else:
            raise AssertionError(name + ": --help did not exit")
    assert out.getvalue().startswith("usage: python -m stages." + name + " "), (name, out.getvalue()[:80])
    print(name)
"""
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == names


def test_a_stage_under_a_python_without_the_project_says_so_in_one_line():
    # `python -S` skips site-packages (and the editable install): as a `python` outside the venv
    done = subprocess.run([sys.executable, "-S", "-m", "stages.train_run", "--help"], cwd=ROOT,
                          capture_output=True, text=True)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert done.stderr.startswith("error: ") and "does not have the project installed" in done.stderr
    assert "python -m workflow.launch dvc repro" in done.stderr and len(done.stderr.strip().splitlines()) == 1


def test_each_view_depends_on_exactly_its_tables_runs():
    """A table is its own target: its stage depends on the folders of the runs its spec lists (a
    cell computing another spec's run reads that run's folder) and on no other run."""
    views = {s.name: s for s in expand(PARAMS) if s.module == "table"}
    run_deps = {name: {d for d in s.deps if d.startswith(("results/runs/", "results/analysis/runs/"))}
                for name, s in views.items()}
    table7 = {d.rsplit("/", 1)[1] for d in run_deps["table7"]}
    assert table7 == {f"{task}-{spec}-s{seed}" for task in ("squad", "snli", "srl")
                      for spec in ("baseline", "char_only", "elmo_only", "elmo") for seed in (0, 1, 2)}
    # Table 3's SRL "input only" is Table 1's srl-elmo run, in the main job's folder
    assert {"results/runs/srl-elmo-s0", "results/analysis/runs/srl-elmo_both-s0"} <= run_deps["table3"]
    assert not any("elmo_input" in d for d in run_deps["table3"] if "/srl-" in d)
    # Figure 1: its runs at every fraction, and its tasks' floors (a run that never beat its floor is marked)
    floors = {d for d in run_deps["figure1"] if d.endswith("-floor")}
    assert floors == {"results/runs/snli-floor", "results/runs/srl-floor"}
    assert all("-f" in d.rsplit("-s", 1)[1] or d.endswith(("-s0", "-s1", "-s2")) for d in run_deps["figure1"] - floors)
    assert not run_deps["table4"] and not run_deps["cove_table"]      # the probes' views read no run


def test_a_mirror_or_released_biLM_that_is_not_there_fails_in_one_line(tmp_path, capsys):
    out = tmp_path / "params.yaml"
    assert profile.main(["tiny", "--mirror", str(tmp_path / "nothing"), "--output", str(out)]) == 2
    assert profile.main(["tiny", "--released", str(tmp_path / "no-bilm"), "--output", str(out)]) == 2
    errors = capsys.readouterr().err.strip().splitlines()
    assert errors[0].startswith(f"error: data mirror {tmp_path / 'nothing'} not found: fetch one with")
    assert errors[1].startswith(f"error: released biLM {tmp_path / 'no-bilm'} not found:")
    assert not out.exists()                                              # nothing written


def test_profile_reads_a_fetched_mirror(tmp_path):
    out = tmp_path / "params.yaml"
    assert profile.main(["tiny", "--mirror", "/data/elmo-mirror", "--output", str(out), "--allow-missing"]) == 0
    rendered = yaml.safe_load(out.read_text(encoding="utf-8"))
    expected = profile.render("tiny")
    expected["data"]["mirror"] = "/data/elmo-mirror"
    assert rendered == expected


def test_prepare_lm_depends_on_the_files_of_its_profiles_sources():
    """DVC hashes what prepare_lm reads, as the profile chooses it: the tiny profile's three
    sources and held-out file; the paper profile's folder of official training shards (hashed
    file by file: a changed shard re-runs the stage) and held-out shard; pretraining reads the
    text with its shard index."""
    def deps(name: str, stage: str) -> list[str]:
        return next(s.deps for s in expand(profile.render(name)) if s.name == stage)
    tiny = [d for d in deps("tiny", "prepare_lm") if "lm1b" in d or "lm_supplement" in d]
    assert tiny == ["${data.mirror}/lm1b_heldout_subset/1b_benchmark.dev.tokens",
                    "${data.mirror}/lm_supplement_nltk/corpora/brown.zip",
                    "${data.mirror}/lm_supplement_nltk/corpora/abc.zip",
                    "${data.mirror}/lm1b_heldout_subset/1b_benchmark.test.tokens"]
    official = "${data.mirror}/1-billion-word-language-modeling-benchmark-r13output"
    paper = [d for d in deps("paper", "prepare_lm") if "lm1b" in d or "lm_supplement" in d or "billion" in d]
    assert paper == [f"{official}/training-monolingual.tokenized.shuffled",
                     f"{official}/heldout-monolingual.tokenized.shuffled/news.en.heldout-00000-of-00050"]
    assert {"data/lm/train.txt", "data/lm/train.shards.tsv"} <= set(deps("tiny", "pretrain_bilm"))
