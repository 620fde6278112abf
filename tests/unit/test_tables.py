"""Table 1 as a view over run folders: arithmetic, layout and the paper's rows, on hand-made runs."""

import json
import math
from pathlib import Path

from fp_bounds import U64, gamma
from scipy.stats import t as student_t

from elmo_repro.views.runs import load_runs, read_paper_table, relative_error_reduction, welch_p
from elmo_repro.views.table1 import flat_rows, render_markdown, table1_rows

ROOT = Path(__file__).resolve().parents[2]
SPEC = {"runs": {"tasks": ["ner"], "elmo": ["baseline", "elmo", "char_layer"], "seeds": [0, 1]},
        "elmo": "elmo", "control": "char_layer"}
PPL = {"heldout_tokens": 100, "perplexity": 50.0, "forward_perplexity": 51.0, "backward_perplexity": 49.0,
       "unigram_perplexity": 900.0, "vocab_size": 1000, "oov_rate": 0.05}


def test_relative_error_reduction_matches_the_paper_ner_row():
    # paper: 90.15 -> 92.22 is printed as a 21% relative error reduction
    assert round(relative_error_reduction(90.15, 92.22)) == 21
    assert relative_error_reduction(80.0, 90.0) == 50.0                  # 100 * 10 / 20: exact in float64


# Welch p-values: both sides evaluate scipy's Student t survival function (Cephes stdtr, tested peak
# relative error 5.9e-15) at a float64 t and df of about 16 roundings each; sf's relative
# sensitivity to them (|d log sf / d log t| + |d log sf / d log df|) is below 5 for these cases
# (1.4 + 0.2 and 1.5 + 2.6).
P_REL_TOL = 2 * 5.9e-15 + 5 * gamma(16, U64)


def test_welch_p_needs_two_seeds_and_spread():
    assert welch_p([1.0], [2.0, 3.0]) is None
    assert welch_p([1.0, 1.0], [1.0, 1.0]) is None
    # t = (2 - 3) / sqrt(1/3 + 1/3), df = 4 (equal variances and sizes)
    assert math.isclose(welch_p([1.0, 2.0, 3.0], [2.0, 3.0, 4.0]), 2 * student_t.sf(1 / math.sqrt(2 / 3), 4),
                        rel_tol=P_REL_TOL)


def write_run(root, run_id, elmo_name, seed, test, best_epoch=1, fraction=1.0):
    folder = root / run_id
    folder.mkdir(parents=True)
    (folder / "spec.json").write_text(json.dumps({"task": "ner", "elmo_name": elmo_name, "seed": seed,
                                                  "train_fraction": fraction, "elmo": None}))
    (folder / "metrics.json").write_text(json.dumps({"dev_f1": test + 1, "test_f1": test,
                                                     "best_epoch": best_epoch, "epochs": 4}))


def test_rows_and_markdown_from_run_folders(tmp_path):
    for seed, (b, e, c) in enumerate([(80.0, 90.0, 82.0), (81.0, 92.0, 83.0)]):
        write_run(tmp_path, f"ner-baseline-s{seed}", "baseline", seed, b)
        write_run(tmp_path, f"ner-elmo-s{seed}", "elmo", seed, e, best_epoch=4 if seed == 1 else 2)
        write_run(tmp_path, f"ner-char_layer-s{seed}", "char_layer", seed, c)
    write_run(tmp_path, "ner-elmo-s5", "elmo", 5, 10.0)                      # a seed the table does not list
    write_run(tmp_path, "ner-elmo-s0-f10", "elmo", 0, 20.0, fraction=0.1)    # another table's run
    (tmp_path / "ner-floor").mkdir()
    (tmp_path / "ner-floor" / "metrics.json").write_text(json.dumps({"dev_f1": 60.0, "test_f1": 55.5}))
    runs, floors = load_runs(tmp_path)
    rows = table1_rows(read_paper_table(ROOT / "paper/table1.csv"), runs, floors, SPEC)
    assert [r["task"] for r in rows] == ["SQuAD", "SNLI", "SRL", "Coref", "NER", "SST-5"]
    row = rows[4]
    assert row["floor"] == 55.5 and row["split"] == "test"
    assert row["elmo"]["per_seed"] == {0: 90.0, 1: 92.0} and row["elmo"]["runs"] == ["ner-elmo-s0", "ner-elmo-s1"]
    # 100 * 10.5 / 19.5 (exact means and differences; 1 rounding) vs 10.5 / 19.5 * 100 (2)
    assert row["increase_absolute"] == 10.5 and math.isclose(row["increase_relative"], 10.5 / 19.5 * 100,
                                                             rel_tol=gamma(3, U64))
    assert row["elmo"]["still_learning"] == [1] and row["baseline"]["still_learning"] == []
    # Welch by hand: diff 10.5, s^2 = 0.5 and 2.0 over n = 2 each -> t = 10.5 / sqrt(1.25),
    # Welch-Satterthwaite df = 1.25^2 / (0.25^2 + 1^2)
    assert math.isclose(row["welch_p_elmo_vs_baseline"],
                        2 * student_t.sf(10.5 / math.sqrt(1.25), 1.25 ** 2 / (0.25 ** 2 + 1)), rel_tol=P_REL_TOL)
    assert row["welch_p_elmo_vs_control"] is not None
    assert row["paper_elmo"] == "92.22" and row["paper_increase_absolute"] == "2.06"
    assert all(r["baseline"] is None and r["floor"] is None for i, r in enumerate(rows) if i != 4)
    text = render_markdown(rows, PPL, "39.7", "smoke", SPEC)
    assert "| NER" in text and "80.50 ± 0.71" in text and "91.00 ± 1.41†" in text and "10.50 / 53.8%" in text
    assert "| SQuAD" in text and "| SST-5" in text and "55.50" in text
    assert "NER test per seed: baseline s0 80.00, s1 81.00; +ELMo s0 90.00, s1 92.00†; char layer s0 82.00" in text
    assert "**50.0**" in text and "**900.0**" in text and "Not comparable to the paper's 39.7" in text
    flat = flat_rows(rows)
    assert flat[4]["elmo_mean"] == 91.0 and flat[0]["elmo_mean"] is None


def test_a_run_without_metrics_is_an_error(tmp_path):
    import pytest

    from elmo_repro.io import InputError

    (tmp_path / "ner-elmo-s0").mkdir()
    (tmp_path / "ner-elmo-s0" / "spec.json").write_text("{}")
    with pytest.raises(InputError, match="metrics.json.*no metrics"):
        load_runs(tmp_path)


def test_a_run_that_never_learned_is_flagged_and_counted(tmp_path):
    """issue 29: snli-char_layer-s1 sat at ln 3 for all 9 epochs (test 37.58) and was averaged into
    the control column silently. A run whose lowest training loss is not 5% below the prior's
    (the floor's prior_train_loss) is marked ‡ per seed and counted in its cell; it stays in the mean."""
    prior = math.log(3)                                      # three balanced classes
    histories = {"baseline": [1.10, 1.05, 0.98], "elmo": [1.11, 1.04, 0.95], "char_layer": [1.13, 1.10, 1.094]}
    for seed in (0, 1):
        for name, losses in histories.items():
            write_run(tmp_path, f"ner-{name}-s{seed}", name, seed, 50.0 + seed)
            stalled = name == "char_layer" and seed == 1      # seed 0 of the control learns: 1.03 < 0.95 ln 3
            rows = losses if stalled else [*losses[:2], 1.03]
            (tmp_path / f"ner-{name}-s{seed}" / "history.csv").write_text(
                "epoch,train_loss,dev_f1\n" + "".join(f"{i},{x},50\n" for i, x in enumerate(rows, 1)))
    (tmp_path / "ner-floor").mkdir()
    (tmp_path / "ner-floor" / "metrics.json").write_text(json.dumps({"dev_f1": 1.0, "test_f1": 1.0,
                                                                     "prior_train_loss": prior}))
    runs, floors = load_runs(tmp_path)
    by_id = {r.id: r for r in runs}
    assert by_id["ner-char_layer-s1"].train_loss == (1.13, 1.10, 1.094)
    # 1.094 > 0.95 ln 3 = 1.0437: never learned; 1.03 < 1.0437: learned
    assert by_id["ner-char_layer-s1"].never_learned(prior) and not by_id["ner-char_layer-s0"].never_learned(prior)
    assert not by_id["ner-char_layer-s1"].never_learned(None)       # no prior (NER): never flagged
    row = next(r for r in table1_rows(read_paper_table(ROOT / "paper/table1.csv"), runs, floors, SPEC)
               if r["baseline"] is not None)
    assert row["control"]["never_learned"] == [1] and row["elmo"]["never_learned"] == []
    assert row["control"]["mean"] == 50.5                             # kept in the mean
    text = render_markdown([row], PPL, "39.7", "tiny", SPEC)
    assert "50.50 ± 0.71 (1‡)" in text and "char layer s0 50.00, s1 51.00‡" in text
    assert "never fell 5% below the loss of predicting the training label frequencies" in text


def test_the_view_reads_only_the_runs_and_floors_its_profile_lists(tmp_path, monkeypatch):
    # a clone holds the committed runs of another profile: Table 1 of a profile that leaves SRL out
    # must show SRL as "—", not the committed SRL run and floor
    from elmo_repro.experiments.rendering import render_runs
    from elmo_repro.views.table1 import table1_files

    specs = {"elmo": {"bilm": "finetuned", "placement": "paper", "mix": "learned", "l2_coef": 0.001}}
    tables = {"table1": {"runs": {"tasks": ["ner"], "elmo": ["baseline", "elmo"], "seeds": [0]},
                         "elmo": "elmo", "control": None}}
    params = {"profile": "test", "data": {"mirror": "m", "left_out": {"srl": "licensed"}},
              "bilm_source": {"path": "models/bilm"}, "tables": tables, "elmo_specs": specs,
              "runs": render_runs(tables, specs)}
    runs = tmp_path / "results/runs"
    write_run(runs, "ner-baseline-s0", "baseline", 0, 80.0)
    write_run(runs, "ner-elmo-s0", "elmo", 0, 90.0)
    write_run(runs, "ner-elmo-s1", "elmo", 1, 10.0)                       # a seed this profile does not run
    for task, folder in (("srl", "srl-baseline-s0"), ("srl", "srl-elmo-s0")):
        write_run(runs, folder, folder.split("-")[1], 0, 55.0)
        (runs / folder / "spec.json").write_text(json.dumps({"task": task, "elmo_name": folder.split("-")[1],
                                                             "seed": 0, "train_fraction": 1.0, "elmo": None}))
    for task, score in (("ner", 55.5), ("srl", 1.0)):
        (runs / f"{task}-floor").mkdir()
        (runs / f"{task}-floor" / "metrics.json").write_text(json.dumps({"test_f1": score}))
    (tmp_path / "paper").mkdir()
    for name in ("table1.csv", "perplexity.txt"):
        (tmp_path / "paper" / name).write_text((ROOT / "paper" / name).read_text(encoding="utf-8"), encoding="utf-8")
    (tmp_path / "results/metrics").mkdir(parents=True)
    (tmp_path / "results/metrics/perplexity.json").write_text(json.dumps(PPL))
    monkeypatch.chdir(tmp_path)
    rows = {row["task"]: row for row in table1_files(params, ["results/runs"], "table1", False)["table1.json"]["rows"]}
    assert rows["NER"]["elmo"]["per_seed"] == {0: 90.0} and rows["NER"]["floor"] == 55.5
    assert rows["SRL"]["baseline"] is None and rows["SRL"]["elmo"] is None and rows["SRL"]["floor"] is None
