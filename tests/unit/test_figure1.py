"""Figure 1 (sample efficiency) as a view over runs at several training fractions."""

import csv
import io
import json

import numpy as np
import pytest

from elmo_repro.experiments.rendering import render_runs
from elmo_repro.io import InputError
from elmo_repro.tasks.units import span_f1, write_units
from elmo_repro.views import figure1

SPECS = {"elmo": {"bilm": "finetuned", "placement": "paper", "mix": "learned", "l2_coef": 0.001}}
TABLES = {"table1": {"runs": {"tasks": ["srl"], "elmo": ["baseline", "elmo"], "seeds": [0, 1]}, "elmo": "elmo"},
          "figure1": {"runs": {"tasks": ["srl"], "elmo": ["baseline", "elmo"], "seeds": [0, 1],
                               "train_fractions": [0.1, 1.0]}}}


def units(f1: float, sentences: int = 50) -> tuple[list[str], np.ndarray]:
    """SRL unit statistics whose corpus F1 is ``f1``: every sentence 2 gold arguments, f1/50 of
    them found (of as many predicted)."""
    correct = np.full(sentences, 2.0 * f1 / 100.0)
    return [f"s{i}" for i in range(sentences)], np.stack([correct, np.full(sentences, 2.0), np.full(sentences, 2.0)], axis=1)


def write(root, run_id, n, dev, test, updates=100):
    (root / run_id).mkdir(parents=True)
    (root / run_id / "metrics.json").write_text(json.dumps({"train_examples": n, "dev_f1": dev, "test_f1": test,
                                                            "updates": updates}))
    write_units(root / run_id / "units.csv", "srl", {"dev": units(dev), "test": units(test)})


def test_points_per_setting_and_size(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    params = {"profile": "test", "tables": TABLES, "elmo_specs": SPECS, "runs": render_runs(TABLES, SPECS)}
    main, analysis = tmp_path / "results/runs", tmp_path / "results/analysis/runs"
    for seed in (0, 1):
        write(main, f"srl-baseline-s{seed}", 400, 50.0 + seed, 49.0)
        write(main, f"srl-elmo-s{seed}", 400, 60.0 + seed, 59.0)
        write(analysis, f"srl-baseline-s{seed}-f10", 40, 10.0 + 2 * seed, 9.0)
        write(analysis, f"srl-elmo-s{seed}-f10", 40, 30.0, 29.0)
    (main / "srl-floor").mkdir()
    (main / "srl-floor" / "metrics.json").write_text(json.dumps({"dev_f1": 10.5, "test_f1": 10.0}))
    files = figure1.build(params)
    rows = list(csv.DictReader(io.StringIO(files["figure1.csv"])))
    assert [(r["setting"], r["train_examples"]) for r in rows] == [("+ELMo", "40"), ("+ELMo", "400"),
                                                                   ("baseline", "40"), ("baseline", "400")]
    small = rows[2]
    assert float(small["dev"]) == pytest.approx(11.0) and float(small["dev_std"]) == pytest.approx(1.4142, abs=1e-4)
    assert small["runs"] == "srl-baseline-s0-f10 srl-baseline-s1-f10"
    # seed 0 of the baseline at 10% (dev 10.0) is not above the floor's 10.5: it never learned
    assert small["never_learned"] == "1" and small["updates"] == "100"
    assert "| SRL (f1) | baseline | 40 (10%) | 100 | 11.00 ± 1.41 ‡ 1 | 9.00 ± 0.00 | 2 |" in files["figure1.md"]
    assert files["figure1.png"][:4] == b"\x89PNG"
    # the tests: ELMo's gain at each size, and the gain at 10% less the gain at 100%, per split
    dev = files["figure1.json"]["comparisons"]["dev"]
    assert [c["comparison"] for c in dev] == ["+ELMo gain at 10%", "+ELMo gain at 100%", "gain at 10% − gain at 100%"]
    assert dev[0]["difference"] == pytest.approx(30.0 - 11.0) and dev[1]["difference"] == pytest.approx(10.0)
    assert dev[2]["difference"] == pytest.approx(19.0 - 10.0)
    # per-seed contrasts: seed 0 (30 − 10) − (60 − 50) = 10, seed 1 (30 − 12) − (61 − 51) = 8
    assert dev[2]["per_seed"] == pytest.approx([10.0, 8.0]) and dev[2]["seeds"] == 2
    assert all(c["p_holm"] >= c["p_value"] for c in dev)
    (analysis / "srl-elmo-s1-f10" / "metrics.json").write_text(json.dumps({"train_examples": 41, "dev_f1": 1.0,
                                                                           "test_f1": 1.0}))
    with pytest.raises(InputError, match="different numbers of examples \\[40, 41\\]"):
        figure1.build(params)
