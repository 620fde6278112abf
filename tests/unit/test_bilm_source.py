"""`bilm_source.path`: the feature stage runs on the released ELMo weights as well as on ours."""

import contextlib
from pathlib import Path

import h5py
import numpy as np
import pytest
import torch
from fp_bounds import bilm_bound

import stages.extract_features as stage
from elmo_repro.bilm.released import load_released
from elmo_repro.data.character_ids import batch_to_char_ids
from elmo_repro.data.examples import write_split
from elmo_repro.elmo.features import read_sentence_index

FIXTURES = Path(__file__).resolve().parents[3] / "shared/data/elmo_test_fixtures"
SENTENCES = {"train": [["The", "EU", "rejects", "German", "call"]], "dev": [["Peter", "Blackburn"]],
             "test": [["SOCCER", "-", "JAPAN", "GET", "LUCKY", "WIN", "."], ["Peter", "Blackburn"],
                      ["SOCCER", "-", "JAPAN", "GET", "LUCKY", "WIN", "."]]}
LOGGED: dict = {}


@pytest.fixture
def stage_dir(tmp_path, monkeypatch):
    if not FIXTURES.is_dir():
        pytest.skip(f"{FIXTURES} not present")
    for split, sentences in SENTENCES.items():
        write_split(tmp_path / "data/conll2003", split, [{"tokens": s, "ner": ["O"] * len(s)} for s in sentences],
                    ("tokens",))

    @contextlib.contextmanager
    def fake_stage_run(name, params, sections):
        assert sections == ["features", "elmo_features.main.ner-base"]

        class Run:
            def log_metrics(self, metrics, step=None):
                LOGGED.update(metrics)
        yield Run()

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(stage, "stage_run", fake_stage_run)
    return tmp_path


def _params(model: Path) -> dict:
    """What the stage reads: the features section and its rendered elmo_features entry."""
    return {"features": {"batch_size": 8, "dtype": "float32"},
            "elmo_features": {"main": {"ner-base": {"task": "ner", "bilm": "base", "model": str(model),
                                                    "data": "data/conll2003", "out": "data/features/conll2003/base"}}}}


def test_features_from_released_weights(stage_dir, monkeypatch):
    weights = FIXTURES / "lm_weights.hdf5"
    monkeypatch.setattr(stage, "load_params", lambda: _params(weights))
    stage.main(["--features", "ner-base"])
    model = load_released(FIXTURES / "options.json", weights)
    with torch.no_grad():
        expected = model.layers(torch.from_numpy(batch_to_char_ids([SENTENCES["test"][0]])))[0, :, 1:-1].numpy()
    with h5py.File(stage_dir / "data/features/conll2003/base/test.hdf5", "r") as f:
        assert f["0"].shape == (3, 7, 32)                      # L+1 layers, 7 tokens, 2 x projection 16
        # batched with padding, another float32 ordering: twice the biLM chain bound (fp_bounds.py)
        bound = 2 * bilm_bound(model.config, len(SENTENCES["test"][0]) + 2, np.abs(expected).max())
        np.testing.assert_allclose(f["0"][()], expected, rtol=0, atol=bound)
        assert read_sentence_index(f) == {"SOCCER - JAPAN GET LUCKY WIN .": "0", "Peter Blackburn": "1"}
        assert sorted(f.keys()) == ["0", "1", "sentence_to_index"]      # the repeated sentence: embedded once
    assert LOGGED["test_texts"] == 2 and LOGGED["test_references"] == 3 and LOGGED["test_tokens"] == 9


def test_a_missing_source_names_the_path(stage_dir, monkeypatch):
    from elmo_repro.io import InputError

    monkeypatch.setattr(stage, "load_params", lambda: _params(stage_dir / "nowhere"))
    with pytest.raises(InputError, match="nowhere"):
        stage.main(["--features", "ner-base"])
