"""Figure 1 (sample efficiency) as a view over runs at several training fractions."""

import csv
import io
import json

import pytest

from elmo_repro.experiments.rendering import render_runs
from elmo_repro.io import InputError
from elmo_repro.views import figure1

SPECS = {"elmo": {"bilm": "finetuned", "placement": "paper", "mix": "learned", "l2_coef": 0.001}}
TABLES = {"table1": {"runs": {"tasks": ["srl"], "elmo": ["baseline", "elmo"], "seeds": [0, 1]}, "elmo": "elmo"},
          "figure1": {"runs": {"tasks": ["srl"], "elmo": ["baseline", "elmo"], "seeds": [0, 1],
                               "train_fractions": [0.1, 1.0]}}}


def write(root, run_id, n, dev, test):
    (root / run_id).mkdir(parents=True)
    (root / run_id / "metrics.json").write_text(json.dumps({"train_examples": n, "dev_f1": dev, "test_f1": test}))


def test_points_per_setting_and_size(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    params = {"profile": "test", "tables": TABLES, "elmo_specs": SPECS, "runs": render_runs(TABLES, SPECS)}
    main, analysis = tmp_path / "results/runs", tmp_path / "results/analysis/runs"
    for seed in (0, 1):
        write(main, f"srl-baseline-s{seed}", 400, 50.0 + seed, 49.0)
        write(main, f"srl-elmo-s{seed}", 400, 60.0 + seed, 59.0)
        write(analysis, f"srl-baseline-s{seed}-f10", 40, 10.0 + 2 * seed, 9.0)
        write(analysis, f"srl-elmo-s{seed}-f10", 40, 30.0, 29.0)
    files = figure1.build(params)
    rows = list(csv.DictReader(io.StringIO(files["figure1.csv"])))
    assert [(r["setting"], r["train_examples"]) for r in rows] == [("+ELMo", "40"), ("+ELMo", "400"),
                                                                   ("baseline", "40"), ("baseline", "400")]
    small = rows[2]
    assert float(small["dev"]) == pytest.approx(11.0) and float(small["dev_std"]) == pytest.approx(1.4142, abs=1e-4)
    assert small["runs"] == "srl-baseline-s0-f10 srl-baseline-s1-f10"
    assert "| SRL (f1) | baseline | 40 (10%) | 11.00 ± 1.41 | 9.00 ± 0.00 | 2 |" in files["figure1.md"]
    assert files["figure1.png"][:4] == b"\x89PNG"
    (analysis / "srl-elmo-s1-f10" / "metrics.json").write_text(json.dumps({"train_examples": 41, "dev_f1": 1.0,
                                                                           "test_f1": 1.0}))
    with pytest.raises(InputError, match="different numbers of examples \\[40, 41\\]"):
        figure1.build(params)
