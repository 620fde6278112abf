"""Table 1 arithmetic and layout on a hand-made metrics file."""

import math

from elmo_repro.tables import relative_error_reduction, render_markdown, table1_rows


def test_relative_error_reduction_matches_the_paper_ner_row():
    # paper: 90.15 -> 92.22 is printed as a 21% relative error reduction
    assert round(relative_error_reduction(90.15, 92.22)) == 21
    assert math.isclose(relative_error_reduction(80.0, 90.0), 50.0)


def test_welch_p_needs_two_seeds_and_spread():
    from elmo_repro.tables import welch_p
    assert welch_p([1.0], [2.0, 3.0]) is None
    assert welch_p([1.0, 1.0], [1.0, 1.0]) is None
    # t = (2 - 3) / sqrt(1/3 + 1/3), df = 4 (equal variances and sizes)
    from scipy.stats import t as student_t
    assert math.isclose(welch_p([1.0, 2.0, 3.0], [2.0, 3.0, 4.0]), 2 * student_t.sf(1 / math.sqrt(2 / 3), 4))


def test_rows_and_markdown():
    def variant(scores):
        return {"runs": [{"seed": i, "test_f1": s, "dev_f1": s, "mlflow_run_id": f"r{i}{s}"}
                         for i, s in enumerate(scores)],
                "test_f1_mean": sum(scores) / len(scores), "test_f1_std": 1.0}

    metrics = {"task": "ner", "dataset": "conll2003", "stage_run_id": "stage",
               "variants": {"baseline": variant([80.0, 81.0]), "elmo": variant([90.0, 92.0])}}
    (row,) = table1_rows([metrics])
    assert row["increase_absolute"] == 10.5 and math.isclose(row["increase_relative"], 10.5 / 19.5 * 100)
    # Welch by hand: diff 10.5, s^2 = 0.5 and 2.0 over n = 2 each -> t = 10.5 / sqrt(1.25) = 9.39,
    # Welch-Satterthwaite df = 1.25^2 / (0.25^2 + 1^2) = 1.47; two-sided p from Student's t
    from scipy.stats import t as student_t
    assert math.isclose(row["welch_p"], 2 * student_t.sf(10.5 / math.sqrt(1.25), 1.25 ** 2 / (0.25 ** 2 + 1)))
    assert 0.01 < row["welch_p"] < 0.05
    assert row["elmo_per_seed"] == {0: 90.0, 1: 92.0}
    assert row["paper_elmo"] == "92.22" and row["paper_increase_absolute"] == "2.06"
    assert row["mlflow_run_ids"]["elmo"] == ["r090.0", "r192.0"]
    ppl = {"heldout_tokens": 100, "perplexity": 50.0, "forward_perplexity": 51.0, "backward_perplexity": 49.0,
           "unigram_perplexity": 900.0, "vocab_size": 1000, "oov_rate": 0.05}
    text = render_markdown([row], ppl, "smoke")
    assert "| NER" in text and "80.50 ± 1.00" in text and "10.50 / 53.8%" in text
    assert f" {row['welch_p']:.3g} |" in text
    assert "NER test per seed: baseline s0 80.00, s1 81.00; +ELMo s0 90.00, s1 92.00" in text
    assert "**50.0**" in text and "**900.0**" in text and "Not comparable" in text
