"""Every heavy stage computes on the device its profile gives it (issue 28 §2b), tested on the CPU:

* the registry gives ``--device cuda`` to exactly the stages whose resources hold a GPU, and only
  stages with a device path may hold one; ``--precision`` comes from ``compute.precision``;
* each such stage's command line takes ``--device`` and refuses CUDA where there is none;
* the device reaches the model and every tensor: the code of each stage (a task run of every task,
  features, perplexity, biLM training and fine-tuning, CoVe) runs on an explicit ``cpu`` device
  while torch's default device is ``meta``, so a tensor made on the default device behind the
  explicit one fails (a meta tensor cannot meet a CPU one), and gives the numbers it gives without
  that default.

The CUDA paths themselves run in ``benchmarks/gpu_check.sh`` (``gpu_device_runs.py``).
"""

from __future__ import annotations

import contextlib
import importlib

import numpy as np
import pytest
import torch
from pretrain_settings import settings
from test_cove import copy_task
from test_task_contract import CONFIGS, FIXTURES, fixture_with_layers

from elmo_repro.bilm.evaluate import bilm_perplexity
from elmo_repro.bilm.model import BiLM, BiLMConfig
from elmo_repro.bilm.train import pretrain
from elmo_repro.cove.model import CoVeConfig
from elmo_repro.cove.train import CoVeTrainConfig, SourceVectors, train_cove
from elmo_repro.data.vocabulary import Vocabulary, count_tokens
from elmo_repro.device import check_precision, resolve_device, to_device
from elmo_repro.elmo.features import embed_sentences
from elmo_repro.experiments.specs import TASKS, ElmoSpec, RunSpec
from elmo_repro.training.trainer import train_run
from elmo_repro.vectors import load_text_vectors
from workflow import profile
from workflow.registry import STAGES
from workflow.resources import compute_args
from workflow.snakemake_dag import expand

CPU = torch.device("cpu")
SENTENCES = [s.split() for s in ["the cat sat on the mat", "a dog barked", "the dog sat", "cats and dogs are pets",
                                 "the mat is red", "a cat is a pet", "dogs bark at cats", "the red dog sat on a mat"]]


@contextlib.contextmanager
def default_device_meta():
    """torch's default device is ``meta`` inside: any tensor made without an explicit device (or one
    derived from the inputs) is a meta tensor, which fails as soon as it meets a CPU tensor."""
    torch.set_default_device("meta")
    try:
        yield
    finally:
        torch.set_default_device(None)


def test_meta_default_catches_a_tensor_made_behind_the_device():
    with default_device_meta(), pytest.raises((RuntimeError, NotImplementedError)):
        _ = torch.ones(3, device=CPU) + torch.zeros(3)        # torch.zeros(3): on the default device


# ------------------------------------------------------------------------------ the stages' code

@pytest.mark.parametrize("name", TASKS)
def test_a_task_run_on_an_explicit_device_makes_nothing_on_the_default_one(name, tmp_path):
    task, data, layers = fixture_with_layers(name, tmp_path)
    elmo = ElmoSpec(placement="input" if name == "coref" else "both", mix="learned", l2_coef=0.01,
                    gamma_init="matched")
    spec = RunSpec(task=name, elmo_name="elmo", elmo=elmo, seed=1, train_fraction=1.0)
    cfg = {**CONFIGS[name], "trainer": {**CONFIGS[name]["trainer"], "epochs": 2}}
    vectors = load_text_vectors(FIXTURES / name / "vectors.txt")
    plain = train_run(task, spec, cfg, data, vectors, layers)
    with default_device_meta():
        on_cpu = train_run(task, spec, cfg, data, vectors, layers, device=CPU)
    assert on_cpu.metrics == plain.metrics and on_cpu.predictions == plain.predictions
    assert all(t.device == CPU and torch.equal(t, plain.state_dict[k]) for k, t in on_cpu.state_dict.items())


def _bilm(vocab_size: int = 0) -> BiLM:
    torch.manual_seed(0)
    return BiLM(BiLMConfig(filters=((1, 4), (2, 4)), char_dim=4, n_highway=1, cell_dim=8, projection_dim=4,
                           n_layers=2, dropout=0.1, n_tokens_vocab=vocab_size)).eval()


def test_features_and_perplexity_compute_on_the_models_device():
    vocab = Vocabulary.build(*count_tokens(SENTENCES))
    model = _bilm(len(vocab))
    plain = dict(embed_sentences(model, SENTENCES, batch_size=3))
    perplexity = bilm_perplexity(model, vocab, SENTENCES, batch_size=3)
    with default_device_meta():
        on_cpu = dict(embed_sentences(model.to(CPU), SENTENCES, batch_size=3))
        assert bilm_perplexity(model, vocab, SENTENCES, batch_size=3) == perplexity
    assert all(np.array_equal(on_cpu[i], plain[i]) for i in plain)


def test_bilm_training_takes_its_device(tmp_path):
    vocab = Vocabulary.build(*count_tokens(SENTENCES))
    config = BiLMConfig(filters=((1, 4), (2, 4)), char_dim=4, n_highway=1, cell_dim=8, projection_dim=4,
                        n_layers=2, dropout=0.1, n_tokens_vocab=len(vocab))
    cfg = settings(batch_size=2, unroll_steps=4, n_negative_samples=4, token_budget=80, checkpoint_every=5, log_every=5)
    plain, _ = pretrain(config, cfg, SENTENCES, vocab, tmp_path / "plain")
    with default_device_meta():
        on_cpu, _ = pretrain(config, cfg, SENTENCES, vocab, tmp_path / "cpu", device=CPU)
    assert all(t.device == CPU and torch.equal(t, plain.state_dict()[k]) for k, t in on_cpu.state_dict().items())


def test_cove_training_takes_its_device():
    rng = np.random.default_rng(1)
    data = copy_task(40, rng), copy_task(8, rng), copy_task(8, rng)
    vectors = SourceVectors([f"e{i}" for i in range(8)], np.eye(8, dtype=np.float32))
    model_config = CoVeConfig(hidden=6, layers=2, target_dim=4, dropout=0.3)
    config = CoVeTrainConfig(epochs=2, batch_size=8, lr=0.01, min_count=1, max_length=6, beam_size=2, seed=5)
    plain = train_cove(*data, vectors, model_config, config, log=lambda m: None)
    with default_device_meta():
        on_cpu = train_cove(*data, vectors, model_config, config, log=lambda m: None, device=CPU)
    assert on_cpu[2].metrics == plain[2].metrics and on_cpu[2].test_translations == plain[2].test_translations


# ------------------------------------------------------------------------------ options

def test_a_device_that_is_not_here_is_refused():
    assert resolve_device("cpu") == CPU
    for name, problem in [("tpu", "expected cpu, cuda"), ("gpu", "expected cpu, cuda")]:
        with pytest.raises(ValueError, match=problem):
            resolve_device(name)
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="no CUDA device"):
            resolve_device("cuda")
    with pytest.raises(ValueError, match="needs --device cuda"):
        check_precision("bf16", CPU)
    with pytest.raises(ValueError, match="expected one of"):
        check_precision("fp16", CPU)


def test_to_device_moves_every_tensor_of_a_batch():
    batch = {"a": torch.ones(2), "b": [torch.zeros(1), ("x", torch.ones(1))], "c": None, "d": 3}
    moved = to_device(batch, torch.device("meta"))
    assert moved["a"].is_meta and moved["b"][0].is_meta and moved["b"][1][1].is_meta
    assert moved["b"][1][0] == "x" and moved["c"] is None and moved["d"] == 3
    assert to_device(batch, CPU)["a"] is batch["a"]                      # no copy on the same device


DEVICE_STAGES = {"pretrain_bilm", "perplexity", "finetune", "features", "train_cove", "probe_features",
                 *(stage.name for stage in STAGES if stage.module == "train_run")}


def test_the_stages_with_a_device_path_are_these():
    assert {stage.name for stage in STAGES if stage.device} == DEVICE_STAGES


@pytest.mark.parametrize("name", ["tiny", "smoke", "paper"])
def test_a_stage_computes_on_a_gpu_exactly_when_it_holds_one(name):
    stages = expand(profile.render(name))
    on_gpu = {s.name.split("@")[0] for s in stages if "--device cuda" in s.cmd}
    holding = {s.name.split("@")[0] for s in stages if s.resources.get("gpu")}
    assert on_gpu == holding
    if name == "paper":
        # every stage with a device path computes on a GPU (CoVe and the probes are analysis-job stages)
        assert on_gpu == {s.name.split("@")[0] for s in stages if s.device}
        assert "--precision" not in " ".join(s.cmd for s in stages)       # fp32, as the paper
        pretraining = next(s for s in stages if s.name == "pretrain_bilm")
        assert pretraining.cmd == ("torchrun --standalone --nproc-per-node 3 -m stages.pretrain_bilm --threads 2 "
                                   "--device cuda")
    else:
        assert not on_gpu and all("--device" not in s.cmd and "--precision" not in s.cmd for s in stages)


def test_precision_is_checked_against_the_stage_and_its_gpu():
    params = profile.render("paper")
    run = next(s for s in STAGES if s.module == "train_run")
    bilm = next(s for s in STAGES if s.name == "pretrain_bilm")
    params["compute"]["precision"] = {"train_run": "bf16"}
    assert compute_args(run, params, {"gpu": 1}) == "--device cuda --precision bf16"
    with pytest.raises(ValueError, match=r"compute.precision.train_run: bf16 needs a GPU"):
        compute_args(run, params, {})
    params["compute"]["precision"] = {"pretrain_bilm": "bf16"}
    with pytest.raises(ValueError, match=r"compute.precision.pretrain_bilm: .* pretrain.precision"):
        compute_args(bilm, params, {"gpu": 3})


@pytest.mark.parametrize("module, extra", [("train_run", ["--run", "x"]), ("extract_features", ["--features", "x"]),
                                           ("perplexity", []), ("finetune_bilm", ["--task", "ner"]),
                                           ("pretrain_bilm", []), ("probe_features", ["--source", "bilm"]),
                                           ("train_cove", [])])
def test_each_device_stage_refuses_a_device_it_cannot_use(module, extra, capsys):
    stage = importlib.import_module(f"stages.{module}")
    with pytest.raises(SystemExit) as exit_:
        stage.main([*extra, "--device", "tpu"])
    assert exit_.value.code == 2 and "--device 'tpu'" in capsys.readouterr().err
    if not torch.cuda.is_available():
        with pytest.raises(SystemExit):
            stage.main([*extra, "--device", "cuda"])
        assert "no CUDA device" in capsys.readouterr().err
