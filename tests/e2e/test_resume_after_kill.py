"""The pretraining stage, SIGKILLed after a checkpoint and started again, ends with exactly the weights
of an uninterrupted run (smoke configuration, real 1B Word text from the mirror, streamed in shards
of SHARD_TOKENS tokens: the run crosses several)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
import yaml

from elmo_repro.data.lm_corpus import LM1B_DEV, read_lm1b
from elmo_repro.data.lm_split import write_sharded_text
from elmo_repro.data.vocabulary import Vocabulary, count_tokens
from tests.e2e.pipeline import MIRROR, ROOT
from workflow.profile import render

pytestmark = pytest.mark.e2e

BATCHES, EVERY = 60, 20
SHARD_TOKENS = 5000


def stage_dir(path: Path, sentences: list[list[str]]) -> Path:
    """A working directory with what the pretrain_bilm stage reads: params, text, vocabulary."""
    params = render("smoke")
    cfg = params["pretrain"]
    cfg.update(token_budget=BATCHES * cfg["batch_size"] * cfg["unroll_steps"], checkpoint_every=EVERY)
    (path / "data/lm").mkdir(parents=True)
    (path / "params.yaml").write_text(yaml.safe_dump(params), encoding="utf-8")
    assert len(write_sharded_text(path / "data/lm/train.txt", sentences, SHARD_TOKENS)) > 10
    counts, n = count_tokens(sentences)
    Vocabulary.build(counts, n, min_count=2).save(path / "data/vocab/vocab.txt", path / "data/vocab/counts.tsv")
    return path


def start(cwd: Path) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{ROOT / 'src'}", "MLFLOW_DISABLE_TELEMETRY": "true"}
    env.pop("MLFLOW_TRACKING_URI", None)
    env.pop("ELMO_PARENT_RUN_ID", None)
    return subprocess.Popen([sys.executable, "-m", "stages.pretrain_bilm", "--threads", "2"], cwd=cwd, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finish(process: subprocess.Popen) -> str:
    out, err = process.communicate(timeout=600)
    assert process.returncode == 0, err[-3000:]
    return err


def weights(cwd: Path) -> dict[str, torch.Tensor]:
    return torch.load(cwd / "models/bilm/weights.pt", map_location="cpu", weights_only=True)


def test_sigkill_after_a_checkpoint_then_resume_gives_identical_weights(tmp_path):
    if not MIRROR.is_dir():
        pytest.skip(f"data mirror {MIRROR} not present")
    sentences = [s for _, s in zip(range(3000), read_lm1b(MIRROR / LM1B_DEV))]
    straight = stage_dir(tmp_path / "straight", sentences)
    killed = stage_dir(tmp_path / "killed", sentences)
    finish(start(straight))

    process = start(killed)
    checkpoint = killed / "models/bilm_checkpoints/checkpoint.pt"
    deadline = time.monotonic() + 300
    while not checkpoint.exists():
        assert process.poll() is None, process.stderr.read()[-3000:]
        assert time.monotonic() < deadline, "no checkpoint within 5 minutes"
        time.sleep(0.02)
    process.send_signal(signal.SIGKILL)
    process.wait()
    assert process.returncode == -signal.SIGKILL
    at = torch.load(checkpoint, map_location="cpu", weights_only=True)["batch"]
    assert at % EVERY == 0 and 0 < at < BATCHES, "killed after a checkpoint, before the end"
    assert not (killed / "models/bilm/weights.pt").exists(), "a killed run leaves no model"

    log = finish(start(killed))
    assert f"resumed from models/bilm_checkpoints/checkpoint.pt at batch {at}" in log
    expected, resumed = weights(straight), weights(killed)
    assert expected.keys() == resumed.keys()
    for name, tensor in expected.items():
        assert torch.equal(tensor, resumed[name]), name
