"""Released ELMo weights instead of pretraining (`workflow.profile NAME --released PATH`): the DAG
follows the params, with no pretraining, perplexity or fine-tuning stage, and every view says so."""

from pathlib import Path

import pytest

from elmo_repro.experiments.bilm_source import released_bilm
from elmo_repro.io import InputError
from elmo_repro.schema import validate_params
from elmo_repro.views.table1 import render_markdown
from elmo_repro.views import report
from stages.check_params import released_layer_problems
from workflow import profile
from elmo_repro.experiments.specs import JOB_FILES
from workflow.snakemake_dag import expand
from workflow.render import render_dvc

TRAINING_STAGES = ("vocab", "pretrain_bilm", "perplexity", "finetune")


def _released_dir(root: Path) -> Path:
    """A released-format biLM directory (options.json + weights.hdf5) exported from a small biLM."""
    import torch

    from elmo_repro.bilm.model import BiLM, BiLMConfig
    from elmo_repro.bilm.released import export_released

    torch.manual_seed(0)
    config = BiLMConfig.from_options({
        "lstm": {"dim": 16, "projection_dim": 8, "n_layers": 2, "cell_clip": 3, "proj_clip": 3,
                 "use_skip_connections": True},
        "char_cnn": {"activation": "relu", "embedding": {"dim": 4}, "filters": [[1, 4], [2, 4]], "n_highway": 1,
                     "n_characters": 262, "max_characters_per_token": 50}})
    export_released(BiLM(config), root / "released")
    return root / "released"


@pytest.fixture(scope="module")
def params():
    return profile.with_runs(profile.use_released(profile.render("tiny"), "external/elmo/2x4096"))


def test_the_switch_points_every_reader_at_the_released_biLM(params):
    validate_params(params)
    assert released_bilm(params) == "external/elmo/2x4096"
    assert released_bilm(profile.render("tiny")) is None
    assert params["probes"]["sources"]["bilm"]["model"] == "external/elmo/2x4096"
    assert {spec["bilm"] for spec in params["elmo_specs"].values()} <= {"base", "cove"}
    assert params["finetune_tasks"] == {"main": {}, "analysis": {}}
    models = {entry["model"] for job in params["elmo_features"].values() for entry in job.values()}
    assert models == {"external/elmo/2x4096"}
    # a name is a model `elmo_repro.fetch` lays out in the mirror
    named = profile.use_released(profile.render("tiny"), "2x4096_512_2048cnn_2xhighway")
    assert named["bilm_source"]["path"] == "../shared/data/elmo_released/2x4096_512_2048cnn_2xhighway"


def test_no_stage_trains_the_biLM_and_no_view_reads_what_training_writes(params):
    for job in JOB_FILES:
        text = render_dvc(job, params)
        for name in (*TRAINING_STAGES, "finetuning:"):
            assert f"\n  {name}" not in text, (job, name)
        for path in ("results/metrics/perplexity.json", "models/bilm", "data/vocab", "results/tables/finetuning.md"):
            assert f"- {path}\n" not in text, (job, path)
    names = {stage.name.split("@")[0] for stage in expand(params)}
    assert not names & {*TRAINING_STAGES, "finetuning"}
    assert {"features", "table1", "table1_controls", "report", "probe_features"} <= names
    table1 = next(stage for stage in expand(params) if stage.name == "table1")
    assert "bilm_source" in table1.params
    # the pretraining profile keeps them all
    full = {stage.name.split("@")[0] for stage in expand(profile.render("tiny"))}
    assert {*TRAINING_STAGES, "finetuning"} <= full


def test_a_fine_tuned_spec_or_the_trained_biLM_with_released_weights_is_refused(params):
    broken = {**params, "elmo_specs": {**params["elmo_specs"], "elmo": {**params["elmo_specs"]["elmo"],
                                                                        "bilm": "finetuned"}}}
    with pytest.raises(InputError, match=r"elmo_specs\.elmo\.bilm: 'finetuned' needs the biLM's softmax"):
        validate_params(profile.with_runs(broken))
    probes = {**params["probes"], "sources": {**params["probes"]["sources"],
                                              "bilm": {**params["probes"]["sources"]["bilm"], "model": "models/bilm"}}}
    with pytest.raises(InputError, match=r"probes\.sources\.bilm\.model: models/bilm is not trained"):
        validate_params({**params, "probes": probes})


def test_the_params_check_finds_the_released_files(tmp_path, params):
    directory = _released_dir(tmp_path)
    assert released_layer_problems({**params, "bilm_source": {"path": str(directory)}}) == []
    assert released_layer_problems({**params, "bilm_source": {"path": str(directory / "weights.hdf5")}}) == []
    [problem] = released_layer_problems({**params, "bilm_source": {"path": str(tmp_path / "nothing")}})
    assert problem.startswith(f"bilm_source.path: the released biLM {tmp_path / 'nothing'} lacks") and "options.json" in problem
    # a fixed layer beyond the released biLM's two LSTM layers
    specs = {**params["elmo_specs"], "deep": {**params["elmo_specs"]["char_layer"], "layer": 3}}
    [problem] = released_layer_problems({**params, "bilm_source": {"path": str(directory)}, "elmo_specs": specs})
    assert problem.startswith("elmo_specs.deep.layer: layer 3 is outside the released biLM")


def test_table1_and_the_report_say_the_biLM_was_not_trained_here(params):
    text = render_markdown([], None, "39.7", "tiny", params["tables"]["table1"], released="external/elmo/2x4096")
    assert "## The biLM" in text and "The released biLM at `external/elmo/2x4096`" in text
    assert "perplexity" in text and "held-out perplexity" not in text.split("## The biLM")[0]
    assert set(report.not_built(params)) == {"finetuning"}
    assert report.not_built(profile.render("tiny")) == {}
