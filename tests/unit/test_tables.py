"""Table 1 arithmetic and layout on a hand-made metrics file."""

import math

from elmo_repro.tables import relative_error_reduction, render_markdown, table1_rows


def test_relative_error_reduction_matches_the_paper_ner_row():
    # paper: 90.15 -> 92.22 is printed as a 21% relative error reduction
    assert round(relative_error_reduction(90.15, 92.22)) == 21
    assert math.isclose(relative_error_reduction(80.0, 90.0), 50.0)


def test_rows_and_markdown():
    def variant(scores):
        return {"runs": [{"seed": i, "test_f1": s, "dev_f1": s, "mlflow_run_id": f"r{i}{s}"}
                         for i, s in enumerate(scores)],
                "test_f1_mean": sum(scores) / len(scores), "test_f1_std": 1.0}

    metrics = {"task": "ner", "dataset": "conll2003", "stage_run_id": "stage",
               "variants": {"baseline": variant([80.0, 80.0]), "elmo": variant([90.0, 90.0])}}
    (row,) = table1_rows([metrics])
    assert row["increase_absolute"] == 10.0 and row["increase_relative"] == 50.0
    assert row["paper_elmo"] == "92.22" and row["paper_increase_absolute"] == "2.06"
    assert row["mlflow_run_ids"]["elmo"] == ["r090.0", "r190.0"]
    ppl = {"heldout_tokens": 100, "perplexity": 50.0, "forward_perplexity": 51.0, "backward_perplexity": 49.0,
           "unigram_perplexity": 900.0, "vocab_size": 1000, "oov_rate": 0.05}
    text = render_markdown([row], ppl, "smoke")
    assert "| NER" in text and "80.00 ± 1.00" in text and "10.00 / 50.0%" in text
    assert "**50.0**" in text and "**900.0**" in text and "Not comparable" in text
