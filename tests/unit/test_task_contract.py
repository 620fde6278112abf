"""The task contract on in-repo fixtures: every registered task trains, saves and evaluates
through the one trainer and the run stage, without the data mirror (CI covers the task code)."""

import json
import shutil
from pathlib import Path

import h5py
import numpy as np
import pytest
import torch
from fp_bounds import gamma

from elmo_repro.elmo.layer_source import cached_example_layers, feature_path
from elmo_repro.experiments.specs import TASKS, ElmoSpec, RunSpec, listed_runs
from elmo_repro.tasks.base import SPLITS, get_task
from elmo_repro.tasks.units import read_units, task_units
from elmo_repro.training.trainer import prepare_run, train_run
from elmo_repro.vectors import load_text_vectors

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
# A small configuration per task; a task registered without one fails test_every_task_has_a_fixture.
CONFIGS = {
    "ner": {"trainer": {"epochs": 8, "batch_size": 8, "eval_batch_size": 16,
                        "optimizer": {"name": "adam", "lr": 0.02}, "grad_clip": 5.0, "max_train_examples": 0},
            "model": {"char_embedding_dim": 8, "char_filters": 8, "char_kernel": 3, "lstm_hidden": 16,
                      "lstm_layers": 1, "dropout": 0.1, "crf_start_end": False}},
    "sst5": {"vectors": "data/vectors/vectors.txt", "data": {"phrases": False},
             "trainer": {"epochs": 10, "batch_size": 8, "eval_batch_size": 16,
                         "optimizer": {"name": "adam", "lr": 0.01}, "grad_clip": 5.0, "max_train_examples": 0},
             "model": {"freeze_embeddings": False, "embedding_dropout": 0.1, "pre_encode_dim": 16,
                       "pre_encode_dropout": 0.1, "encoder_hidden": 16, "integrator_hidden": 16,
                       "integrator_dropout": 0.1, "output_dims": [16], "output_pool_size": 2,
                       "output_dropout": [0.1, 0.0]}},
    "snli": {"vectors": "data/vectors/vectors.txt", "data": {"train_from": "dev", "selection_premises": 5},
             "trainer": {"epochs": 10, "batch_size": 8, "eval_batch_size": 16,
                         "optimizer": {"name": "adam", "lr": 0.01}, "grad_clip": 10.0, "max_train_examples": 0,
                         "lr_plateau": {"factor": 0.5, "patience": 2}},
             "model": {"freeze_embeddings": False, "dropout": 0.1, "encoder_hidden": 16, "projection_dim": 16,
                       "inference_hidden": 16, "output_hidden": 16}},
    "squad": {"vectors": "data/vectors/vectors.txt",
              "data": {"source": "dev", "selection": ["Town_1"], "report": ["Town_3"], "max_train_questions": 0},
              "trainer": {"epochs": 10, "batch_size": 8, "eval_batch_size": 16,
                          "optimizer": {"name": "adam", "lr": 0.01}, "grad_clip": 5.0, "max_train_examples": 0},
              "model": {"freeze_embeddings": False, "char_embedding_dim": 8, "char_filters": 8, "char_kernel": 3,
                        "hidden": 16, "dropout": 0.1, "max_span_tokens": 17}},
    "srl": {"vectors": "data/vectors/vectors.txt", "data": {"max_train_sentences": 0},
            "trainer": {"epochs": 10, "batch_size": 8, "eval_batch_size": 16,
                        "optimizer": {"name": "adam", "lr": 0.01}, "grad_clip": 1.0, "max_train_examples": 0},
            "model": {"predicate_dim": 4, "lstm_hidden": 16, "lstm_layers": 2, "recurrent_dropout": 0.1,
                      "embedding_dropout": 0.1}},
    "coref": {"vectors": "data/vectors/vectors.txt",
              "data": {"source": "litbank", "dev_documents": 2, "test_documents": 4, "max_train_documents": 0},
              "trainer": {"epochs": 10, "batch_size": 1, "eval_batch_size": 1,
                          "optimizer": {"name": "adam", "lr": 0.01}, "grad_clip": 5.0, "max_train_examples": 0},
              "model": {"char_embedding_dim": 4, "char_filters": 8, "char_kernels": [1, 2], "lstm_hidden": 16,
                        "lstm_layers": 1, "feature_dim": 4, "ffnn_depth": 1, "ffnn_size": 32, "dropout": 0.1,
                        "lexical_dropout": 0.1, "max_width": 3, "mention_ratio": 0.8, "max_antecedents": 20,
                        "max_training_sentences": 4}},
}
N_LAYERS, DIM = 3, 8


def write_layers(features_dir: Path, split: str, task, examples, seed=0):
    """Random (L+1, T, D) float16 layers per text the examples point at, in the feature-file layout."""
    rng = np.random.default_rng(seed)
    lengths = {}
    for e in examples:
        for field in task.fields:
            ids, texts = e["text_ids"][field], e[field]
            # a field of several texts (coreference: a document's sentences) lists their ids
            lengths.update(zip(ids, map(len, texts)) if isinstance(ids, list) else [(ids, len(texts))])
    assert sorted(lengths) == list(range(len(lengths)))                 # every text of the split, ids 0..N-1
    path = feature_path(features_dir, split)
    path.parent.mkdir(parents=True, exist_ok=True)
    with h5py.File(path, "w") as out:
        for text_id in range(len(lengths)):
            out.create_dataset(str(text_id), data=rng.normal(size=(N_LAYERS, lengths[text_id], DIM)).astype("float16"))


def fixture_with_layers(name: str, features_dir: Path) -> tuple:
    """The task, its fixture's splits and random cached ELMo layers for them under ``features_dir``."""
    task = get_task(name)
    data = {split: task.read(split, FIXTURES / name) for split in SPLITS}
    for split in SPLITS:
        write_layers(features_dir, split, task, data[split])
    return task, data, {split: cached_example_layers(features_dir, split, data[split], task.fields) for split in SPLITS}


def test_every_task_has_a_fixture():
    assert set(CONFIGS) == set(TASKS)
    for name in TASKS:
        assert (FIXTURES / name).is_dir(), name


@pytest.mark.parametrize("name", TASKS)
def test_task_trains_beats_its_floor_and_reproduces(name, tmp_path):
    task = get_task(name)
    data = {split: task.read(split, FIXTURES / name) for split in SPLITS}
    vectors = load_text_vectors(FIXTURES / name / "vectors.txt")
    spec = RunSpec(task=name, elmo_name="baseline", elmo=None, seed=0, train_fraction=1.0)
    logged = []
    result = train_run(task, spec, CONFIGS[name], data, vectors, None, lambda m, step: logged.append(step))
    metric = task.metric
    floor = task.score(data["test"], task.floor(data["train"], data["test"]))[metric]
    assert 0.0 <= floor < result.metrics[f"test_{metric}"] <= 100.0
    assert logged == list(range(1, CONFIGS[name]["trainer"]["epochs"] + 1))
    assert [h["epoch"] for h in result.history] == logged
    assert result.metrics[f"dev_{metric}"] == max(h[f"dev_{metric}"] for h in result.history)
    assert len(result.predictions["test"]) == len(data["test"])
    assert task.score(data["test"], result.predictions["test"])[metric] == result.metrics[f"test_{metric}"]
    again = train_run(task, spec, CONFIGS[name], data, vectors, None)
    assert again.metrics == result.metrics and again.history == result.history


@pytest.mark.parametrize("name", TASKS)
def test_task_with_cached_elmo_layers(name, tmp_path):
    task, data, layers = fixture_with_layers(name, tmp_path)
    # coreference takes ELMo at the input only (the paper's placement; Table 3 has no coreference row)
    elmo = ElmoSpec(placement="input" if name == "coref" else "both", mix="learned", l2_coef=0.01)
    spec = RunSpec(task=name, elmo_name="elmo", elmo=elmo, seed=1, train_fraction=0.5)
    cfg = {**CONFIGS[name], "trainer": {**CONFIGS[name]["trainer"], "epochs": 2}}
    result = train_run(task, spec, cfg, data, load_text_vectors(FIXTURES / name / "vectors.txt"), layers)
    assert result.metrics["train_examples"] == len(data["train"]) // 2
    s = result.mixes["input"]["s"]
    # float32 softmax: w_i = e_i / sum(e) (the same rounded e_i on top and below), so the weights sum
    # to 1 within the sum's N - 1 roundings and the division's 1 (or 2 via a reciprocal), plus this
    # float64 check's sum (negligible, counted as 1)
    assert set(result.mixes) == ({"input"} if name == "coref" else {"input", "output"}) and len(s) == N_LAYERS and abs(sum(s) - 1) <= gamma(N_LAYERS + 2)
    with pytest.raises(ValueError, match="exactly when"):
        train_run(task, spec, cfg, data, None, None)


@pytest.mark.parametrize("name", TASKS)
def test_word_vectors_off_the_model_reads_no_static_vector(name, tmp_path):
    """``ElmoSpec.word_vectors: false`` (Table 7's "ELMo only"): the same run built over two different
    static matrices gives the same eval loss; with the vectors on, it does not (the check can fail)."""
    task = get_task(name)
    data = {split: task.read(split, FIXTURES / name) for split in SPLITS}
    for split in SPLITS:
        write_layers(tmp_path, split, task, data[split])
    layers = {split: cached_example_layers(tmp_path, split, data[split], task.fields) for split in SPLITS}
    words, matrix = load_text_vectors(FIXTURES / name / "vectors.txt")
    other = (words, (matrix * 3.0 + 0.5).astype(matrix.dtype))

    def eval_loss(word_vectors: bool, vectors) -> float:
        elmo = ElmoSpec(placement="input", mix="learned", word_vectors=word_vectors)
        spec = RunSpec(task=name, elmo_name="elmo_only", elmo=elmo, seed=0, train_fraction=1.0)
        run = prepare_run(task, spec, CONFIGS[name], data, vectors, layers)
        run.model.eval()
        assert (run.model.words.embedding_dim == 0) == (not word_vectors)
        with torch.no_grad():
            return float(run.model.loss(run.splits["train"].batch([0, 1])))

    assert eval_loss(False, (words, matrix)) == eval_loss(False, other)
    assert eval_loss(True, (words, matrix)) != eval_loss(True, other)


def test_word_vectors_off_needs_elmo_at_the_input():
    with pytest.raises(ValueError, match="needs ELMo at the input"):
        ElmoSpec(placement="output", word_vectors=False)


@pytest.mark.parametrize("name", TASKS)
def test_run_stage_writes_the_run_folder(name, tmp_path, monkeypatch):
    """``python -m stages.train_run --run ID`` in a repository laid out like the pipeline's."""
    import contextlib

    from stages import train_run as stage

    task = get_task(name)
    monkeypatch.chdir(tmp_path)
    shutil.copytree(FIXTURES / name, task.data_dir)
    Path("data/vectors").mkdir(parents=True)
    shutil.copy(FIXTURES / name / "vectors.txt", "data/vectors/vectors.txt")
    for split in SPLITS:                       # the specs below name no biLM: the base one
        write_layers(task.features_dir / "base", split, task, task.read(split))
    cfg = {**CONFIGS[name], "trainer": {**CONFIGS[name]["trainer"], "epochs": 2}}
    tables = {"table1": {"runs": {"tasks": [name], "elmo": ["baseline", "char_layer"], "seeds": [0]}}}
    params = {"tasks": {name: {**cfg, "vectors": "data/vectors/vectors.txt"}},
              "runs": listed_runs(tables, {"char_layer": {"mix": "fixed", "layer": 0}})}

    class FakeRun:
        def __init__(self):
            self.tags, self.metrics = {}, []

        def set_tags(self, tags):
            self.tags.update(tags)

        def log_metrics(self, metrics, step=None):
            self.metrics.append((step, metrics))

    runs = []

    @contextlib.contextmanager
    def fake_stage_run(stage_name, params, sections):
        runs.append((stage_name, sections, FakeRun()))
        yield runs[-1][2]

    monkeypatch.setattr(stage, "stage_run", fake_stage_run)
    monkeypatch.setattr(stage, "load_params", lambda: params)
    for run_id in (f"{name}-baseline-s0", f"{name}-char_layer-s0"):
        stage.main(["--run", run_id, "--threads", "1"])
        out = Path("results/runs") / run_id
        assert sorted(p.name for p in out.iterdir()) == ["history.csv", "metrics.json", "model.pt",
                                                         "predictions.json", "scalar_mix.json", "spec.json", "units.csv"]
        metrics = json.loads((out / "metrics.json").read_text())
        # the unit statistics re-derive the run's test score (what every significance test reads)
        units = task_units(name)
        _, statistics = read_units(out / "units.csv", name, "test")
        assert float(units.reduce(statistics.sum(axis=0))) == pytest.approx(metrics[f"test_{units.METRIC}"], abs=1e-9)
        assert all(isinstance(v, (int, float)) for v in metrics.values())      # flat
        assert json.loads((out / "spec.json").read_text())["seed"] == 0
        assert (out / "history.csv").read_text().splitlines()[0] == f"epoch,train_loss,dev_{task.metric}"
        assert isinstance(torch.load(out / "model.pt"), dict)
    (base_name, base_sections, base_run), (char_name, _, char_run) = runs
    assert base_name == f"train_{name}@{name}-baseline-s0" and char_name == f"train_{name}_elmo@{name}-char_layer-s0"
    assert base_sections == [f"runs.main.train_{name}.{name}-baseline-s0", f"tasks.{name}"]
    assert base_run.tags["run_id"] == f"{name}-baseline-s0"
    mix = json.loads((Path("results/runs") / f"{name}-char_layer-s0" / "scalar_mix.json").read_text())
    assert mix["input"]["s"] == [1.0, 0.0, 0.0]                  # layer 0 only; gamma still learned
    assert json.loads((Path("results/runs") / f"{name}-baseline-s0" / "scalar_mix.json").read_text()) == {}



def test_prior_loss_is_the_entropy_of_the_training_labels():
    from elmo_repro.tasks.prior import prior_loss
    from stages.floor import floor_metrics

    # -(1/2 ln 1/2 + 2 * 1/4 ln 1/4) = 1.5 ln 2, worked by hand
    assert abs(prior_loss(["a", "a", "b", "c"]) - 1.5 * np.log(2)) < 1e-15
    assert abs(prior_loss(["entailment", "neutral", "contradiction"]) - np.log(3)) < 1e-15
    with pytest.raises(ValueError, match="no labels"):
        prior_loss([])

    sst5 = get_task("sst5")
    labels = [e["label"] for e in sst5.read("train", FIXTURES / "sst5")]
    assert floor_metrics(sst5, FIXTURES / "sst5")[0]["prior_train_loss"] == prior_loss(labels)
    assert "prior_train_loss" not in floor_metrics(get_task("ner"), FIXTURES / "ner")[0]   # NER: no prior
