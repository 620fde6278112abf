"""The params.yaml schema: every section validated, failures name the key path, fast and torch-free."""

from __future__ import annotations

import copy
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import yaml

from elmo_repro.experiments.rendering import render_runs
from elmo_repro.experiments.specs import NO_ELMO, TASKS
from elmo_repro.io import InputError
from elmo_repro.params import load_params
from elmo_repro.schema import (EVAL_SPLITS, HELDOUT_TEXTS, LM_SOURCES, SECTIONS, TASK_SCHEMAS,
                               validate_params, validate_section)

ROOT = Path(__file__).resolve().parents[2]
PROFILES = ROOT / "workflow" / "profiles"
REFRESH = "re-render with `python -m workflow.profile --refresh`"
from workflow.profile import with_runs  # noqa: E402  (pure python: yaml and the specs)

# The tasks' sections as the base profile writes them (every task has one).
TASK_SECTIONS = yaml.safe_load((PROFILES / "base.yaml").read_text(encoding="utf-8"))["tasks"]
ELMO_SPECS = {
    "elmo": {"placement": "paper", "mix": "learned", "l2_coef": 0.001, "dropout": 0.5, "layer_norm": False},
    "char_layer": {"placement": "paper", "mix": "fixed", "layer": 0, "dropout": 0.5},
}
TABLES = {"table1": {"runs": {"tasks": ["ner"], "elmo": [NO_ELMO, "elmo"], "seeds": [0, 1, 2]},
                     "elmo": "elmo", "control": "char_layer"},
          "table1_controls": {"runs": {"tasks": ["ner"], "elmo": ["char_layer"], "seeds": [0, 1, 2]}}}


def _valid() -> dict:
    """base.yaml's pipeline sections plus the run-matrix sections built here, ``runs`` rendered."""
    base = yaml.safe_load((PROFILES / "base.yaml").read_text(encoding="utf-8"))
    params = {"profile": "tiny", **{k: v for k, v in base.items()
                                    if k not in ("ner", "tasks", "elmo_specs", "tables", "runs")}}
    params.update(tasks=copy.deepcopy(TASK_SECTIONS), elmo_specs=copy.deepcopy(ELMO_SPECS),
                  tables=copy.deepcopy(TABLES))
    return with_runs(params)        # runs, and the biLM layers and fine-tunings they need


@pytest.fixture
def params() -> dict:
    return _valid()


def _error(params: dict) -> str:
    with pytest.raises(InputError) as err:
        validate_params(params)
    return str(err.value)


def test_valid_params_pass(params):
    validate_params(params)
    assert set(params) == set(SECTIONS)


@pytest.mark.parametrize("name", sorted(p.stem for p in PROFILES.glob("*.yaml") if p.stem != "base"))
def test_every_profile_validates(name):
    from workflow.profile import render
    validate_params(render(name), f"profile {name}")


def test_yaml_int_for_float_accepted(params):
    params["tasks"]["ner"]["trainer"]["optimizer"]["lr"] = 1
    params["pretrain"]["grad_clip"] = 10
    validate_params(params)


def test_unknown_key_suggests_the_closest(params):
    params["tasks"]["ner"]["model"]["lstm_layer"] = 2
    assert _error(params) == "params.yaml: tasks.ner.model.lstm_layer: unknown key; did you mean lstm_layers?"


def test_unknown_key_without_close_match_lists_allowed(params):
    params["vocab"]["zzz"] = 1
    assert _error(params) == "params.yaml: vocab.zzz: unknown key; allowed: min_count, max_size"


def test_unknown_and_missing_sections(params):
    del params["word_vectors"]
    params["pretrian"] = {}
    message = _error(params)
    assert "params.yaml: word_vectors: missing section" in message
    assert "params.yaml: pretrian: unknown section; did you mean pretrain? (known: profile, data," in message


def test_missing_key(params):
    del params["pretrain"]["n_negative_samples"]
    assert _error(params) == "params.yaml: pretrain.n_negative_samples: missing key"


def test_wrong_type(params):
    params["tasks"]["ner"]["trainer"]["epochs"] = "four"
    assert _error(params) == "params.yaml: tasks.ner.trainer.epochs: Input should be a valid integer (got 'four')"


def test_bool_is_not_an_int(params):
    params["tasks"]["ner"]["model"]["lstm_hidden"] = True
    params["word_vectors"]["sg"] = True
    message = _error(params)
    assert "word_vectors.sg: Input should be a valid integer (got True)" in message
    assert "tasks.ner.model.lstm_hidden: Input should be a valid integer (got True)" in message


def test_yaml_exponent_without_dot_is_explained(params):
    params["pretrain"]["learning_rate"] = yaml.safe_load("x: 1e-3")["x"]   # YAML 1.1: a string
    assert "pretrain.learning_rate: Input should be a valid number (got '1e-3'); " \
           "YAML reads a number without a dot (1e-3) as text: write 1.0e-3" in _error(params)


def test_out_of_domain_numbers(params):
    params["pretrain"]["n_negative_samples"] = -5
    params["tasks"]["ner"]["trainer"]["batch_size"] = 0
    params["tasks"]["ner"]["model"]["dropout"] = 1.0
    lines = _error(params).splitlines()
    assert lines == [
        "params.yaml: pretrain.n_negative_samples: Input should be greater than or equal to 1 (got -5)",
        "params.yaml: tasks.ner.trainer.batch_size: Input should be greater than or equal to 1 (got 0)",
        "params.yaml: tasks.ner.model.dropout: Input should be less than 1 (got 1.0)",
    ]


def test_pretrain_needs_a_length(params):
    params["pretrain"].update(epochs=0, token_budget=0)
    assert _error(params) == "params.yaml: pretrain.token_budget: must be > 0 when epochs is 0 (or set epochs)"


def test_bilm_filters(params):
    params["bilm"]["char_cnn"]["filters"].append([60, 8])
    assert _error(params) == \
        "params.yaml: bilm.char_cnn.filters: widths [60] exceed max_characters_per_token=50"
    params["bilm"]["char_cnn"]["filters"][-1] = [6]
    assert "bilm.char_cnn.filters[4]: List should have at least 2 items" in _error(params)


def test_data_names(params):
    params["lm_data"]["train_sources"] = ["brown", "brown"]
    params["contamination"]["splits"].append("sst_dev")
    message = _error(params)
    assert "lm_data.train_sources: listed twice: brown" in message
    assert f"contamination.splits[{len(params['contamination']['splits']) - 1}]: Input should be " in message
    assert "(got 'sst_dev'); did you mean sst5_dev?" in message


def test_optimizer_options(params):
    optimizer = params["tasks"]["ner"]["trainer"]["optimizer"]
    optimizer["momentum"] = 0.9
    assert _error(params) == "params.yaml: tasks.ner.trainer.optimizer.momentum: only for name: sgd"
    optimizer.update(name="sgd", weight_decay=0.0001)
    validate_params(params)
    optimizer.update(name="adadelta", momentum=None, rho=1.5)
    assert _error(params) == \
        "params.yaml: tasks.ner.trainer.optimizer.rho: Input should be less than 1 (got 1.5)"
    optimizer["name"] = "adagrad"
    assert "tasks.ner.trainer.optimizer.name: Input should be 'adam', 'adadelta' or 'sgd' (got 'adagrad')" \
        in _error(params)


def test_unknown_task(params):
    params["tasks"]["pos"] = {}
    assert _error(params) == "params.yaml: tasks.pos: unknown task; known: ner, sst5, snli, squad, srl, coref"


def test_table_lists_unknown_task(params):
    params["tables"]["table1"]["runs"]["tasks"].append("pos")
    assert _error(params) == "params.yaml: tables.table1.runs.tasks: unknown task 'pos'; known: ner, sst5, snli, squad, srl, coref"


def test_unknown_table(params):
    params["tables"]["table9"] = {}
    assert _error(params) == "params.yaml: tables.table9: unknown table; did you mean table7? (known: table1, table1_controls, finetuning, figure2, table2, table3, table7, figure1)"


def test_unknown_placement(params):
    params["elmo_specs"]["elmo"]["placement"] = "top"
    assert _error(params) == ("params.yaml: elmo_specs.elmo.placement: Input should be 'input', 'output', "
                              "'both' or 'paper' (got 'top')")


def test_elmo_spec_rules(params):
    params["elmo_specs"]["elmo"]["mix"] = "fixed"           # fixed without a layer
    params["elmo_specs"]["elmo"]["mixx"] = "learned"
    lines = _error(params).splitlines()
    assert lines == ["params.yaml: elmo_specs.elmo.mixx: unknown key; did you mean mix?"]  # schema first
    del params["elmo_specs"]["elmo"]["mixx"]
    assert _error(params) == ("params.yaml: elmo_specs.elmo.layer: set it exactly when mix is 'fixed' "
                              "(the layer index, 0 = char layer)")


@pytest.mark.parametrize("name", ["big-elmo", "elmo.v2", NO_ELMO])
def test_elmo_spec_names(params, name):
    params["elmo_specs"][name] = {}
    assert _error(params).startswith(f"params.yaml: elmo_specs.{name}: not a valid ELMo spec name")


def test_table_references_unknown_elmo_spec(params):
    params["tables"]["table1"]["runs"]["elmo"].append("elmo_big")
    assert _error(params) == "params.yaml: tables.table1.runs.elmo[2]: unknown ELMo spec 'elmo_big'; did you mean elmo?"
    params["tables"]["table1"]["runs"]["elmo"][2] = "zzz"
    assert _error(params).endswith(f"unknown ELMo spec 'zzz'; defined: {NO_ELMO}, elmo, char_layer")


def test_table1_columns_must_be_listed(params):
    params["tables"]["table1"]["runs"]["elmo"] = [NO_ELMO]
    params["runs"] = render_runs(params["tables"], params["elmo_specs"])
    assert _error(params) == "params.yaml: tables.table1.elmo: 'elmo' is not listed in runs.elmo"
    params["tables"]["table1"]["runs"]["elmo"] = [NO_ELMO, "elmo"]
    params["tables"]["table1_controls"]["runs"]["elmo"] = ["elmo"]      # the control column's runs
    params["runs"] = render_runs(params["tables"], params["elmo_specs"])
    assert _error(params) == ("params.yaml: tables.table1.control: 'char_layer' is not listed in "
                              "tables.table1_controls.runs.elmo (the control column's runs)")
    params["tables"]["table1"]["control"] = None
    validate_params(params)
    params["tables"]["table1"]["elmo"] = NO_ELMO
    assert _error(params) == f"params.yaml: tables.table1.elmo: must name an ELMo spec, not {NO_ELMO!r}"
    del params["tables"]["table1"]["control"]
    assert "tables.table1.control: missing key" in _error(params)


def test_stale_runs(params):
    params["tables"]["table1"]["runs"]["seeds"].append(3)
    assert _error(params) == (f"params.yaml: runs: out of date with tables/elmo_specs; {REFRESH} "
                              f"(runs.main.train_ner.ner-{NO_ELMO}-s3: missing)")
    params = _valid()
    params["elmo_specs"]["elmo"]["l2_coef"] = 0.01
    assert _error(params).endswith("(runs.main.train_ner_elmo.ner-elmo-s0: differs from its rendering)")
    params = _valid()
    params["tables"]["table1"]["runs"]["seeds"] = [0]
    assert _error(params).endswith(f"(runs.main.train_ner.ner-{NO_ELMO}-s1: no table lists it)")
    params = _valid()
    params["runs"]["main"]["train_pos"] = {}
    assert _error(params).endswith("(runs.main.train_pos: no table lists it)")


def test_bad_run_entry_names_its_path(params):
    run = params["runs"]["main"]["train_ner"][f"ner-{NO_ELMO}-s0"]
    run["seed"] = -1
    assert _error(params) == (f"params.yaml: runs.main.train_ner.ner-{NO_ELMO}-s0.seed: "
                              "Input should be greater than or equal to 0 (got -1)")
    run["seed"] = 0
    params["runs"]["main"]["train_ner_elmo"]["ner-elmo-s0"]["elmo"]["mixx"] = 1
    assert _error(params) == "params.yaml: runs.main.train_ner_elmo.ner-elmo-s0.elmo.mixx: unknown key; did you mean mix?"


def test_section_not_a_mapping(params):
    params["bilm"] = [1, 2]
    assert _error(params) == "params.yaml: bilm: expected a mapping, got [1, 2]"


def test_validate_section(params):
    validate_section("pretrain", params["pretrain"])
    with pytest.raises(InputError, match=r"^x\.yaml: features\.dtype: Input should be 'float16' or 'float32' "
                                         r"\(got 'int8'\)$"):
        validate_section("features", {"dtype": "int8", "batch_size": 1}, "x.yaml")
    with pytest.raises(InputError, match="^params.yaml: pretrian: unknown section; did you mean pretrain"):
        validate_section("pretrian", {})


def test_schema_covers_every_task_and_data_name():
    from elmo_repro.data.eval_text import SPLITS
    from elmo_repro.data.lm_corpus import HELDOUT, SOURCES
    assert set(TASK_SCHEMAS) == set(TASKS)
    assert LM_SOURCES == tuple(SOURCES) and HELDOUT_TEXTS == tuple(HELDOUT) and EVAL_SPLITS == tuple(SPLITS)


def _write(path: Path, params: dict) -> Path:
    path.write_text(yaml.safe_dump(params, sort_keys=False), encoding="utf-8")
    return path


def test_load_params_validates(tmp_path, params):
    good = _write(tmp_path / "good.yaml", params)
    assert load_params(good) == params
    params["tasks"]["ner"]["model"]["lstm_layer"] = 2
    bad = _write(tmp_path / "bad.yaml", params)
    with pytest.raises(InputError, match="lstm_layer: unknown key; did you mean lstm_layers") as err:
        load_params(bad)
    assert err.value.path == str(bad) and str(err.value).startswith(f"{bad}: tasks.ner.model.lstm_layer")
    assert load_params(bad, validate=False)["tasks"]["ner"]["model"]["lstm_layer"] == 2


def test_fails_fast_without_torch(tmp_path, params):
    """A typo fails in a fresh interpreter in well under 5 s, and validation imports no torch,
    numpy or h5py (checked in a subprocess: this test process has torch from conftest)."""
    good = _write(tmp_path / "good.yaml", params)
    params["tasks"]["ner"]["model"]["lstm_layer"] = 2
    bad = _write(tmp_path / "bad.yaml", params)
    script = textwrap.dedent("""
        import sys
        from elmo_repro.io import InputError
        from elmo_repro.params import load_params
        load_params(sys.argv[1])
        try:
            load_params(sys.argv[2])
        except InputError as err:
            print(err)
        heavy = sorted({"torch", "numpy", "h5py"} & set(sys.modules))
        print("heavy:", heavy)
        load_params(sys.argv[2])   # uncaught: the process fails
    """)
    start = time.monotonic()
    done = subprocess.run([sys.executable, "-c", script, str(good), str(bad)], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    elapsed = time.monotonic() - start
    assert done.returncode != 0
    assert f"{bad}: tasks.ner.model.lstm_layer: unknown key; did you mean lstm_layers?" in done.stdout
    assert "heavy: []" in done.stdout
    assert "InputError" in done.stderr
    assert elapsed < 5.0, f"validation took {elapsed:.1f} s"


def test_classification_task_sections(params):
    params["tasks"]["sst5"]["model"]["output_dropout"] = [0.2, 0.3]
    params["tasks"]["snli"]["data"]["train_from"] = "train"
    params["tasks"]["snli"]["trainer"]["lr_plateau"] = {"factor": 2.0, "patience": 0}
    message = _error(params)
    assert "tasks.sst5.model.output_dropout: one rate per maxout layer (3: the output_dims " \
           "and the class layer), got 2" in message
    assert "tasks.snli.data.train_from: Input should be 'dev' or 'official' (got 'train')" in message
    assert "tasks.snli.trainer.lr_plateau.factor: Input should be less than 1 (got 2.0)" in message


def test_a_probed_layer_outside_the_model_is_named(params):
    params["probes"]["sources"]["bilm"]["layers"] = [0, 1, 3]
    params["probes"]["sources"]["cove"]["layers"] = [0, 2]
    message = _error(params)
    assert "probes.sources.bilm.layers[2]: layer 3 is outside the model: 0 .. 2 (bilm.lstm.n_layers)" in message
    assert "probes.sources.cove.layers[0]: layer 0 is outside the model: 1 .. 2 (cove.model.layers)" in message


def test_probe_splits_are_checked(params):
    params["probes"]["pos"]["split"]["dev"] = [140, 172]
    assert "params.yaml: probes.pos.split: the document ranges overlap" in _error(params)
    params["probes"]["pos"]["split"]["dev"] = [143, 172]
    params["probes"]["wsd"]["test"].append(params["probes"]["wsd"]["train"][0])
    assert "listed twice: wsd_raganato_eval/senseval2" in _error(params)


def test_a_fixed_cove_layer_of_a_run_must_exist(params):
    params["elmo_specs"]["cove_top"] = {"bilm": "cove", "placement": "paper", "mix": "fixed", "layer": 2}
    assert "elmo_specs.cove_top.layer: CoVe's layers are 0 .. 1 here" in _error(params)


def test_a_fixed_bilm_layer_of_a_run_must_exist(params):
    # issue 30: `mix: fixed, layer: 7` on a 3-layer biLM passed check_params and failed inside
    # train_ner_elmo@ner-char_layer-s0 ("fixed_layer 7 outside the biLM's layers 0..2", no key
    # named) after DVC had deleted that run's committed outputs
    params["elmo_specs"]["char_layer"] = {**params["elmo_specs"]["char_layer"], "layer": 7}
    assert ("elmo_specs.char_layer.layer: layer 7 is outside the biLM: 0 .. 2 (0 = the char layer; "
            "bilm.lstm.n_layers)") in _error(params)
    params["elmo_specs"]["char_layer"] = {**params["elmo_specs"]["char_layer"], "layer": 2}    # the top layer: fine
    params["runs"] = render_runs(params["tables"], params["elmo_specs"])
    validate_params(params)


def test_figure2_needs_learned_mixes(params):
    params["tables"]["figure2"] = {"runs": {"tasks": ["ner"], "elmo": ["char_layer"], "seeds": [0]}}
    assert _error(params).startswith("params.yaml: tables.figure2.runs.elmo[0]: 'char_layer' has mix 'fixed'")
    params["tables"]["figure2"]["runs"]["elmo"] = ["baseline"]
    assert "runs have no layer weights" in _error(params)


def test_an_ablation_table_names_a_column_for_each_spec(params):
    params["tables"]["table2"] = {"runs": {"tasks": ["snli"], "elmo": ["baseline", "elmo"], "seeds": [0]},
                                  "paper": "paper/table2.csv", "columns": {"baseline": "baseline"},
                                  "compare": [["baseline", "elmo"]]}
    assert "columns: name exactly the specs of runs.elmo (baseline, elmo)" in _error(params)
    params["tables"]["table2"]["columns"]["elmo"] = "all_lambda_0.001"
    params["tables"]["table2"]["compare"] = [["baseline", "elmo_last"]]
    assert "compare[0]: 'elmo_last' is not listed in runs.elmo" in _error(params)
