"""The smoke profile end to end through `dvc repro` on the real shared data, in a temporary copy of
the repository (so the tiny profile's dvc.lock and results are never touched)."""

import json
import shutil
import sqlite3
import sys
from pathlib import Path

import pytest
import yaml

from tests.browser import dump_dom
from tests.e2e.pipeline import assert_up_to_date, execute, run
from workflow.snakemake_dag import expand

pytestmark = pytest.mark.e2e


def stale_stages(repo: Path) -> tuple[set[str], set[str]]:
    """(stages whose own deps changed per `dvc status`, those plus everything downstream of them).

    Downstream stages re-run once their changed inputs arrive; `dvc status` cannot list them ahead
    because it only compares each stage with its own recorded deps. The params check re-runs on
    every repro but writes the same report, so nothing downstream of it re-runs.
    """
    # every pipeline file's stages; analysis/dvc.yaml's are named "analysis/dvc.yaml:<stage>". The
    # params check is always_changed (it checks files outside the DAG on every repro): left out.
    changed = {name.split(":", 1)[-1] for name in json.loads(run(["dvc", "status", "--json"], repo) or "{}")}
    changed.discard("check_params")
    stages = expand(yaml.safe_load((repo / "params.yaml").read_text(encoding="utf-8")))
    stale, grew = set(changed), True
    while grew:
        grew = False
        outs = {o for s in stages if s.name in stale - {"check_params"} for o in s.all_outs}
        for stage in stages:
            if stage.name not in stale and any(d == o or d.startswith(o + "/") or o.startswith(d + "/")
                                               for d in stage.all_deps for o in outs):
                stale.add(stage.name)
                grew = True
    return changed, stale


TASK_ROWS = {"ner": 4, "sst5": 5, "snli": 1, "squad": 0, "srl": 2, "coref": 3}   # task -> its row in the paper's Table 1
RUNS = {f"{task}-{elmo}-s0" for task in TASK_ROWS for elmo in ("baseline", "elmo", "char_layer")}
# the smoke profile's Table 2 (SNLI), Table 3 (SRL; its "input only" is Table 1's srl-elmo-s0), Table 7
# (SRL; its "vectors only" and "ELMo & vectors" are Table 1's runs) and Figure 1 (SRL at 10%): the
# analysis job's other runs
ANALYSIS_RUNS = {"snli-elmo_last-s0", "snli-elmo_lambda_1-s0", "srl-elmo_both-s0", "srl-elmo_output-s0",
                 "srl-char_only-s0", "srl-elmo_only-s0", "srl-baseline-s0-f10", "srl-elmo-s0-f10"}


def test_table_has_the_task_rows_and_perplexity(smoke_repo):
    table = json.loads((smoke_repo / "results/tables/table1.json").read_text())
    controls = json.loads((smoke_repo / "results/tables/table1_controls.json").read_text())
    assert table["profile"] == "smoke"
    assert [r["task"] for r in table["rows"]] == ["SQuAD", "SNLI", "SRL", "Coref", "NER", "SST-5"]
    for task, index in TASK_ROWS.items():
        row, full = table["rows"][index], controls["rows"][index]
        for key in ("baseline", "elmo"):
            assert 0.0 < row[key]["mean"] <= 100.0 and list(row[key]["per_seed"]) == ["0"]
            assert full[key] == row[key]                           # the same runs in both views
        assert 0.0 < row["floor"] < 100.0
        # the main job's table reads the main job's runs: its control column is the analysis job's
        # (0 allowed: coreference's smoke control finds no link in 6 epochs on some CPUs, e.g. an
        # AVX-512 Xeon, where the AMD machines' builds found some)
        assert row["control"] is None and 0.0 <= full["control"]["mean"] <= 100.0
        assert {r for key in ("baseline", "elmo", "control") for r in full[key]["runs"]} == {
            f"{task}-{elmo}-s0" for elmo in ("baseline", "elmo", "char_layer")}
        assert (smoke_repo / "results/analysis/runs" / f"{task}-char_layer-s0/metrics.json").is_file()
        assert not (smoke_repo / "results/runs" / f"{task}-char_layer-s0").exists()
    ppl = table["perplexity"]
    assert ppl["perplexity"] < ppl["unigram_perplexity"], "the biLM must beat the unigram model"
    assert ppl["heldout_tokens"] <= 5000
    markdown = (smoke_repo / "results/tables/table1.md").read_text()
    assert "| NER" in markdown and "Not comparable" in markdown and "table1_controls.md" in markdown
    for name in ("table4.md", "table5.md", "table6.md", "cove.md", "finetuning.md",   # the analysis job's views
                 "table2.md", "table3.md", "table7.md", "figure1.md", "figure1.png", "figure2.md", "figure2.png"):
        assert (smoke_repo / "results/tables" / name).stat().st_size > 0, name


def test_every_p_value_is_rederived_from_what_git_tracks(smoke_repo, tmp_path):
    """A clone holds no DVC output: without the cache, the prepared data, the models and the runs'
    predictions, the committed unit statistics re-derive every p-value, Holm p and detectable
    difference of the tables (Table 1's controls, Tables 2, 3 and 7, Figure 1)."""
    dvc_outputs = {".dvc", ".git", "data", "models", "mlruns", "mlflow.db"}

    def ignore(folder: str, names: list[str]) -> set[str]:
        top = Path(folder) == smoke_repo
        return {n for n in names if (top and n in dvc_outputs) or n in ("predictions.json", "model.pt")}

    clone = tmp_path / "clone"
    shutil.copytree(smoke_repo, clone, ignore=ignore)
    assert not list(clone.glob("results/**/predictions.json"))
    out = run([sys.executable, "-m", "elmo_repro.views.rederive", "--quiet"], clone)
    assert out.strip().endswith("all agree"), out[-3000:]
    # every table that tests differences was re-derived (its comparisons counted in the summary)
    counted = int(out.strip().splitlines()[-1].split()[0])
    expected = sum(len(json.loads((clone / "results/tables" / f"{name}.json").read_text())["comparisons"][split])
                   for name in ("table2", "table3", "table7", "figure1") for split in ("dev", "test"))
    expected += len(json.loads((clone / "results/tables/table1_controls.json").read_text())["bootstrap"])
    assert counted == expected > 0


def test_report_page_in_a_browser(smoke_repo):
    """The analysis job's report page, opened in headless Chromium: every section holds its table,
    Table 1's rows and findings are there, and both figures decoded."""
    from elmo_repro.views.report import SECTIONS
    dom = dump_dom(smoke_repo / "results/report/index.html")
    for stem, _ in SECTIONS:
        section = dom.split(f'<section id="{stem}">', 1)[1].split("</section>", 1)[0]
        assert "<table>" in section or (stem == "table4" and "<li>" in section), stem   # Table 4: neighbour lists
    table1 = dom.split('<section id="table1_controls">', 1)[1].split("</section>", 1)[0]
    assert all(f"<td>{title}</td>" in table1 for title in ("SQuAD", "SNLI", "SRL", "Coref", "NER", "SST-5"))
    findings = dom.split('<section id="findings">', 1)[1].split("</section>", 1)[0]
    assert findings.count("<td>Table 1</td>") == len(TASK_ROWS)
    assert dom.count('data-loaded="true"') == 2 and 'data-loaded="false"' not in dom


def test_every_stage_logged_an_mlflow_run(smoke_repo):
    with sqlite3.connect(smoke_repo / "mlflow.db") as db:
        rows = db.execute("SELECT r.run_uuid, t.value FROM runs r JOIN tags t ON r.run_uuid = t.run_uuid "
                          "WHERE t.key = 'stage' AND r.status = 'FINISHED'").fetchall()
        stages = {value for _, value in rows}
        expanded = expand(yaml.safe_load((smoke_repo / "params.yaml").read_text(encoding="utf-8")))
        assert stages == {s.name for s in expanded}
        tagged = {value for (value,) in db.execute("SELECT t.value FROM tags t JOIN runs r ON r.run_uuid = t.run_uuid "
                                                   "WHERE t.key = 'run_id' AND r.status = 'FINISHED'")}
        assert tagged == RUNS | ANALYSIS_RUNS | {f"{task}-floor" for task in TASK_ROWS}   # each run by its run id tag
        durations = db.execute("SELECT COUNT(DISTINCT run_uuid) FROM metrics WHERE key = 'duration_s'").fetchone()
        assert durations[0] >= len(expanded)
        # the main job under the launcher: its stage runs are children of one pipeline run; the
        # analysis job by plain `dvc repro`: top-level stage runs
        (pipeline,), = db.execute("SELECT run_uuid FROM runs WHERE name = 'pipeline: dvc repro (smoke)'").fetchall()
        parents: dict[str, set] = {}
        for stage, parent in db.execute("SELECT t.value, p.value FROM tags t LEFT JOIN tags p ON p.run_uuid = "
                                        "t.run_uuid AND p.key = 'mlflow.parentRunId' WHERE t.key = 'stage'"):
            parents.setdefault(stage, set()).add(parent)
        main = {s.name for s in expanded if s.job == "main"}
        assert main and all(pipeline in parents[name] for name in main)    # (the params check re-runs with each repro)
        assert set().union(*(parents[name] for name in stages - main)) == {None}


def test_second_repro_is_a_no_op_and_staleness_follows_the_dag(smoke_repo):
    assert_up_to_date(smoke_repo)
    assert "didn't change, skipping" in run(["dvc", "repro"], smoke_repo)
    lstm = smoke_repo / "src/elmo_repro/bilm/lstm.py"
    original = lstm.read_text()
    lstm.write_text(original + "\n# edited\n")
    try:
        changed, stale = stale_stages(smoke_repo)
    finally:
        lstm.write_text(original)
    # the biLM's code: pretraining, perplexity, each task's fine-tuning and its features, the probes'
    # features (one stage module embeds with either source) and Table 4's contextual neighbours
    assert changed == {"pretrain_bilm", "perplexity", *(f"finetune@{task}" for task in TASK_ROWS),
                       *(f"features@{task}-finetuned" for task in TASK_ROWS),
                       "probe_features@bilm", "probe_features@cove", "neighbours"}
    all_elmo_runs = {f"train_{task}_elmo@{task}-{elmo}-s0" for task in TASK_ROWS for elmo in ("elmo", "char_layer")} | {
        f"train_{rid.split('-')[0]}_elmo@{rid}" for rid in ANALYSIS_RUNS if "-baseline-" not in rid}
    probes = {f"{probe}@{source}" for probe in ("probe_wsd", "probe_pos") for source in ("bilm", "cove")}
    # the baselines, CoVe's training and the probes' baselines need no biLM (nor does CoVe's table)
    # ... and the report page, a view of every table
    run_tables = {"table1", "table1_controls", "finetuning", "table2", "table3", "table7", "figure1", "figure2", "report"}
    assert stale == changed | all_elmo_runs | probes | run_tables | {"table4", "table5", "table6"}
    elmo_runs = {"train_ner_elmo@ner-elmo-s0", "train_ner_elmo@ner-char_layer-s0"}
    params_file = smoke_repo / "params.yaml"
    original_params = params_file.read_text()

    try:
        def edited(change) -> tuple[set[str], set[str]]:
            params = yaml.safe_load(original_params)
            change(params)
            params_file.write_text(yaml.safe_dump(params, sort_keys=False))
            run(["python", "-m", "workflow.profile", "--refresh"], smoke_repo)
            return stale_stages(smoke_repo)

        # one task's parameters: that task's runs only, and the views that read them (each view
        # depends on its own tables' run folders: Tables 2, 3 and 7 and Figure 1 read no NER run)
        ner_runs = {"train_ner@ner-baseline-s0", *elmo_runs}
        ner_views = {"table1", "table1_controls", "figure2", "report"}
        assert edited(lambda p: p["tasks"]["ner"]["model"].update(lstm_hidden=33)) == (ner_runs, ner_runs | ner_views)
        # an ELMo spec: the runs that use it; and Table 3's SRL "input only", which read Table 1's
        # +ELMo run while the two specs computed the same run, becomes a run of its own
        elmo_spec_runs = {f"train_{task}_elmo@{task}-elmo-s0" for task in TASK_ROWS} | {
            "train_srl_elmo@srl-elmo-s0-f10", "train_srl_elmo@srl-elmo_input-s0"}
        # (Table 3's stage now reads that new run's folder: its deps changed); every view with a
        # +ELMo run re-runs, the fine-tuning table (no runs in this profile) does not
        assert edited(lambda p: p["elmo_specs"]["elmo"].update(l2_coef=0.01)) == (
            elmo_spec_runs | {"table3"}, elmo_spec_runs | run_tables - {"finetuning"})
        # a seed more: one new job per (task, ELMo spec) of the tables, and the tables
        new = {f"train_{task}@{task}-baseline-s1" for task in TASK_ROWS} | {
            f"train_{task}_elmo@{task}-{elmo}-s1" for task in TASK_ROWS for elmo in ("elmo", "char_layer")}

        def more_seeds(p):
            for table in ("table1", "table1_controls"):
                p["tables"][table]["runs"].update(seeds=[0, 1])
        table1_views = {"table1", "table1_controls"}                   # the views that read tables.table1
        assert edited(more_seeds) == (new | table1_views, new | table1_views | {"report"})
        # the table's layout: no training
        assert edited(lambda p: p["tables"]["table1"].update(control=None)) == (table1_views, table1_views | {"report"})
    finally:
        params_file.write_text(original_params)
        run(["python", "-m", "workflow.render"], smoke_repo)      # the views' run folders, as before
    assert stale_stages(smoke_repo) == (set(), set())


def test_a_params_typo_fails_fast_with_its_key_path(smoke_repo):
    params_file = smoke_repo / "params.yaml"
    original = params_file.read_text()
    params_file.write_text(original.replace("lstm_layers:", "lstm_layer:"))
    try:
        result = execute(["dvc", "repro"], smoke_repo, check=False)
    finally:
        params_file.write_text(original)
    # fast = before any other stage, not a wall-clock bound (that belongs in a benchmark)
    assert result.returncode != 0 and result.stdout.count("Running stage") == 1, result.stdout
    assert "tasks.ner.model.lstm_layer: unknown key; did you mean lstm_layers?" in result.stdout + result.stderr
    # the check ran first: the runs the edit made stale still have their outputs
    assert (smoke_repo / "results/runs/ner-baseline-s0/metrics.json").is_file()
    assert "Running stage 'train_ner" not in result.stdout
    # fixed: the check runs again and nothing else does
    out = run(["dvc", "repro"], smoke_repo)
    assert "Running stage 'check_params'" in out and out.count("Running stage") == 1


def test_dvc_exp_run_with_a_wrong_type_fails_with_its_key_path(smoke_repo):
    params_file = smoke_repo / "params.yaml"
    original = params_file.read_text()
    try:
        result = execute(["dvc", "exp", "run", "-S", "tasks.ner.trainer.epochs=two"], smoke_repo, check=False)
    finally:
        params_file.write_text(original)
    assert result.returncode != 0
    assert "tasks.ner.trainer.epochs: Input should be a valid integer" in result.stdout + result.stderr
    assert (smoke_repo / "results/runs/ner-baseline-s0/metrics.json").is_file()
    run(["dvc", "repro"], smoke_repo)
    assert_up_to_date(smoke_repo)


def test_launcher_makes_stage_runs_children_of_one_pipeline_run(smoke_repo):
    table = (smoke_repo / "results/tables/table1.md").read_bytes()
    run(["python", "-m", "workflow.launch", "dvc", "repro", "--force", "--single-item", "table1"], smoke_repo)
    assert (smoke_repo / "results/tables/table1.md").read_bytes() == table
    with sqlite3.connect(smoke_repo / "mlflow.db") as db:
        # the collapsed row tells what ran (the fixture's main job was the first launcher run)
        (parent, status), = db.execute(
            "SELECT r.run_uuid, r.status FROM runs r JOIN tags t ON r.run_uuid = t.run_uuid WHERE t.key = "
            "'runner' AND t.value = 'dvc' AND r.name = 'pipeline: dvc repro --force --single-item table1 (smoke)'"
        ).fetchall()
        assert status == "FINISHED"
        # the experiment opens on its runs table in MLflow 3's UI
        assert db.execute("SELECT t.value FROM experiment_tags t JOIN experiments e ON t.experiment_id = "
                          "e.experiment_id WHERE e.name = 'elmo-repro' AND t.key = 'mlflow.experimentKind'"
                          ).fetchall() == [("custom_model_development",)]
        children = db.execute("SELECT t.value FROM tags t JOIN tags p ON t.run_uuid = p.run_uuid "
                              "WHERE t.key = 'stage' AND p.key = 'mlflow.parentRunId' AND p.value = ?",
                              (parent,)).fetchall()
        assert children == [("table1",)]
    (artifact,) = (smoke_repo / "mlruns").glob(f"**/{parent}/artifacts/table1.md")
    assert artifact.read_bytes() == table


def test_dvc_remote_push_clone_pull_is_a_no_op(smoke_repo, tmp_path):
    """A local-directory DVC remote: push, clone elsewhere, pull, and `dvc repro` there does nothing."""
    remote = tmp_path / "remote"
    run(["dvc", "remote", "add", "--default", "shared", str(remote)], smoke_repo)
    run(["dvc", "push"], smoke_repo)
    run(["git", "add", "-A"], smoke_repo)
    run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "pipeline state"], smoke_repo)
    clone = tmp_path / "clone"
    run(["git", "clone", "-q", str(smoke_repo), str(clone)], tmp_path)
    run(["dvc", "pull"], clone)
    assert (clone / "models/bilm/weights.pt").read_bytes() == (smoke_repo / "models/bilm/weights.pt").read_bytes()
    assert_up_to_date(clone)
    out = run(["dvc", "repro"], clone)
    # nothing but the params check, which runs on every repro (always_changed)
    assert out.count("Running stage") == 1 and "Running stage 'check_params'" in out, out
    assert "didn't change, skipping" in out


def _find_named(tree, name: str):
    """The first dict in `dvc exp show --json` output whose "name" is ``name`` (the layout nests
    experiments under their baseline commit)."""
    if isinstance(tree, dict):
        if tree.get("name") == name:
            return tree
        tree = list(tree.values())
    if isinstance(tree, list):
        for item in tree:
            found = _find_named(item, name)
            if found is not None:
                return found
    return None


def test_dvc_exp_run_temp_metrics_and_runs_reach_the_workspace(smoke_repo):
    """Issue 14 part 4: an experiment in DVC's temporary copy (.dvc/tmp/exps/<tmp>) shows its
    metrics in `dvc exp show` and logs its stage runs to the repository's own MLflow store (not to
    one inside the copy, which DVC deletes); the workspace is left as it was."""
    run(["git", "add", "-A"], smoke_repo)
    run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "pipeline state", "--allow-empty"],
        smoke_repo)
    metrics_file = smoke_repo / "results/runs/ner-baseline-s0/metrics.json"
    before, params_before = metrics_file.read_bytes(), (smoke_repo / "params.yaml").read_bytes()
    run(["dvc", "exp", "run", "--temp", "-n", "ner-3-epochs", "-S", "tasks.ner.trainer.epochs=3"], smoke_repo)
    assert metrics_file.read_bytes() == before and (smoke_repo / "params.yaml").read_bytes() == params_before
    experiment = _find_named(json.loads(run(["dvc", "exp", "show", "--json"], smoke_repo)), "ner-3-epochs")
    assert experiment is not None, "the experiment is not in `dvc exp show`"
    data = experiment["data"] if "data" in experiment else experiment["revs"][0]["data"]
    metrics = data["metrics"]["results/runs/ner-baseline-s0/metrics.json"]["data"]
    assert metrics["epochs"] == 3 and metrics != json.loads(before)
    with sqlite3.connect(smoke_repo / "mlflow.db") as db:
        stages = {name for (name,) in db.execute(
            "SELECT r.name FROM runs r JOIN params p ON r.run_uuid = p.run_uuid "
            "WHERE p.key = 'tasks.ner.trainer.epochs' AND p.value = '3'")}
    assert {f"train_ner@ner-baseline-s0", "train_ner_elmo@ner-elmo-s0"} <= stages
    assert not list((smoke_repo / ".dvc/tmp/exps").glob("tmp*/mlflow.db"))


def test_a_failing_stage_keeps_the_committed_results(smoke_repo):
    """Issue 30 §1: a stage that fails once DVC has started it (here a bug in the NER model's code)
    leaves the files git tracks byte-identical (``persist: true``; the stages write atomically);
    the cached outputs DVC removed come back with ``dvc checkout`` once the bug is gone."""
    model = smoke_repo / "src/elmo_repro/tasks/ner/model.py"
    run_dir = smoke_repo / "results/runs/ner-baseline-s0"
    kept = [run_dir / name for name in ("metrics.json", "history.csv", "spec.json", "scalar_mix.json")]
    before = {path: path.read_bytes() for path in kept}
    original = model.read_bytes()
    model.write_bytes(original + b"\nraise RuntimeError('a bug in the model code')\n")
    try:
        result = execute(["dvc", "repro", "train_ner@ner-baseline-s0"], smoke_repo, check=False)
    finally:
        model.write_bytes(original)
    assert result.returncode != 0 and "a bug in the model code" in result.stdout + result.stderr
    assert {path: path.read_bytes() for path in kept} == before
    run(["dvc", "checkout", "train_ner@ner-baseline-s0"], smoke_repo)
    assert_up_to_date(smoke_repo)
