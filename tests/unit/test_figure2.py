"""Figure 2 (learned layer weights) and the views' run query, on hand-made run folders."""

import csv
import io
import json

import pytest

from elmo_repro.experiments.rendering import render_runs
from elmo_repro.io import InputError
from elmo_repro.views import figure2
from elmo_repro.views.query import table_runs

SPECS = {"elmo": {"bilm": "finetuned", "placement": "paper", "mix": "learned", "l2_coef": 0.001},
         "char_layer": {"bilm": "finetuned", "placement": "paper", "mix": "fixed", "layer": 0}}


def params(tables):
    return {"profile": "test", "tables": tables, "elmo_specs": SPECS, "runs": render_runs(tables, SPECS)}


def write_mix(root, run_id, mixes):
    folder = root / run_id
    folder.mkdir(parents=True)
    (folder / "scalar_mix.json").write_text(json.dumps(
        {mix: {"gamma": 1.0, "gamma_init": 1.0, "s": s} for mix, s in mixes.items()}))


def test_the_query_returns_the_listed_runs_in_order_with_their_job_folders():
    p = params({"table1": {"runs": {"tasks": ["ner"], "elmo": ["baseline", "elmo"], "seeds": [0, 1]}},
                "table1_controls": {"runs": {"tasks": ["ner"], "elmo": ["char_layer"], "seeds": [0]}},
                "figure2": {"runs": {"tasks": ["ner"], "elmo": ["elmo", "char_layer"], "seeds": [1, 0]}}})
    runs = table_runs(p, "figure2")
    assert [r.id for r in runs] == ["ner-elmo-s1", "ner-elmo-s0", "ner-char_layer-s1", "ner-char_layer-s0"]
    # a run Table 1 lists is the main job's; the others the analysis job's
    assert [str(r.folder) for r in runs] == ["results/runs/ner-elmo-s1", "results/runs/ner-elmo-s0",
                                             "results/analysis/runs/ner-char_layer-s1",
                                             "results/analysis/runs/ner-char_layer-s0"]
    assert runs[0].spec.elmo.placement == "input" and runs[0].spec.seed == 1


def test_the_query_names_a_stale_runs_section():
    p = params({"figure2": {"runs": {"tasks": ["ner"], "elmo": ["elmo"], "seeds": [0]}}})
    p["tables"]["figure2"]["runs"]["seeds"] = [0, 5]           # edited without re-rendering
    with pytest.raises(InputError, match="ner-elmo-s5.*workflow.profile --refresh"):
        table_runs(p, "figure2")
    with pytest.raises(InputError, match="tables.table9.runs"):
        table_runs(p, "table9")


def test_figure2_means_and_stds_over_seeds(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    p = params({"figure2": {"runs": {"tasks": ["ner", "squad"], "elmo": ["elmo"], "seeds": [0, 1]}}})
    runs = tmp_path / "results" / "analysis" / "runs"
    write_mix(runs, "ner-elmo-s0", {"input": [0.2, 0.5, 0.3]})
    write_mix(runs, "ner-elmo-s1", {"input": [0.4, 0.3, 0.3]})
    write_mix(runs, "squad-elmo-s0", {"input": [0.1, 0.6, 0.3], "output": [0.3, 0.3, 0.4]})
    write_mix(runs, "squad-elmo-s1", {"input": [0.1, 0.6, 0.3], "output": [0.5, 0.1, 0.4]})
    files = figure2.build(p)
    rows = list(csv.DictReader(io.StringIO(files["figure2.csv"])))
    assert [(r["row"], r["layer"]) for r in rows][:4] == [("NER input", "0"), ("NER input", "1"),
                                                          ("NER input", "2"), ("SQuAD input", "0")]
    ner0 = rows[0]
    assert float(ner0["weight"]) == pytest.approx(0.3) and float(ner0["std"]) == pytest.approx(0.1414, abs=1e-4)
    assert ner0["seeds"] == "2" and ner0["runs"] == "ner-elmo-s0 ner-elmo-s1"
    squad_out1 = [r for r in rows if r["row"] == "SQuAD output" and r["layer"] == "1"][0]
    assert float(squad_out1["weight"]) == pytest.approx(0.2) and float(squad_out1["std"]) == pytest.approx(0.1414, abs=1e-4)
    assert "| NER | input | 0.300 ± 0.141 | 0.400 ± 0.141 | 0.300 ± 0.000 | 2 |" in files["figure2.md"]
    assert files["figure2.png"][:8] == b"\x89PNG\r\n\x1a\n"
    assert figure2.build(p)["figure2.png"] == files["figure2.png"]        # same bytes each build


def test_figure2_refuses_weights_that_are_not_a_softmax_and_missing_runs(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    p = params({"figure2": {"runs": {"tasks": ["ner"], "elmo": ["elmo"], "seeds": [0]}}})
    with pytest.raises(InputError, match="scalar_mix.json: missing"):
        figure2.build(p)
    write_mix(tmp_path / "results" / "analysis" / "runs", "ner-elmo-s0", {"input": [0.5, 0.5, 0.5]})
    with pytest.raises(InputError, match="input.s sums to 1.500000"):
        figure2.build(p)
