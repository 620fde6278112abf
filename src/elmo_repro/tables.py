"""The paper's Table 1 in our numbers: task, the paper's previous SOTA, baseline and +ELMo, and
ours (baseline, +ELMo as mean ± std over seeds, absolute increase, relative error reduction),
followed by the held-out perplexity of our biLM beside the unigram baseline.

Relative error reduction = (ELMo − baseline) / (100 − baseline), as in the paper's Table 1.
Whether a gain is more than seed noise: Welch's two-sided t-test of the +ELMo against the baseline
test scores over seeds (scipy ``ttest_ind(equal_var=False)``; needs two seeds or more).
"""

from __future__ import annotations

from typing import Any

import pandas as pd
from scipy.stats import ttest_ind

from .paper import PAPER_PERPLEXITY, PREVIOUS_SOTA_STD, TABLE1

TASK_METRICS = {"ner": "NER"}  # metrics-file task name -> Table 1 row


def relative_error_reduction(baseline: float, improved: float) -> float:
    """Percent of the baseline's error (100 − score) removed: 100·(improved − baseline)/(100 − baseline)."""
    return 100.0 * (improved - baseline) / (100.0 - baseline)


def welch_p(improved: list[float], baseline: list[float]) -> float | None:
    """Two-sided p-value of Welch's t-test between two sets of per-seed scores; None with fewer
    than two scores on a side or when both sides have no spread."""
    if min(len(improved), len(baseline)) < 2 or (len(set(improved)) == 1 and len(set(baseline)) == 1):
        return None
    return float(ttest_ind(improved, baseline, equal_var=False).pvalue)


def table1_rows(task_metrics: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per task with results; each value is a number (JSON) or None."""
    rows = []
    for metrics in task_metrics:
        name = TASK_METRICS[metrics["task"]]
        metric, sota_system, sota, paper_base, paper_elmo, paper_std, paper_abs, paper_rel = TABLE1[name]
        base, elmo = metrics["variants"]["baseline"], metrics["variants"]["elmo"]
        increase = elmo["test_f1_mean"] - base["test_f1_mean"]
        base_scores = [r["test_f1"] for r in base["runs"]]
        elmo_scores = [r["test_f1"] for r in elmo["runs"]]
        rows.append({
            "task": name, "metric": metric, "dataset": metrics["dataset"],
            "paper_previous_sota_system": sota_system, "paper_previous_sota": sota,
            "paper_previous_sota_std": PREVIOUS_SOTA_STD.get(name),
            "paper_baseline": paper_base, "paper_elmo": paper_elmo, "paper_elmo_std": paper_std,
            "paper_increase_absolute": paper_abs, "paper_increase_relative": paper_rel,
            "baseline_mean": base["test_f1_mean"], "baseline_std": base["test_f1_std"],
            "elmo_mean": elmo["test_f1_mean"], "elmo_std": elmo["test_f1_std"],
            "increase_absolute": increase,
            "increase_relative": relative_error_reduction(base["test_f1_mean"], elmo["test_f1_mean"]),
            "welch_p": welch_p(elmo_scores, base_scores),
            "baseline_per_seed": dict(zip([r["seed"] for r in base["runs"]], base_scores)),
            "elmo_per_seed": dict(zip([r["seed"] for r in elmo["runs"]], elmo_scores)),
            "seeds": len(elmo["runs"]),
            "mlflow_run_ids": {"stage": metrics.get("stage_run_id"),
                               "baseline": [r["mlflow_run_id"] for r in base["runs"]],
                               "elmo": [r["mlflow_run_id"] for r in elmo["runs"]]},
        })
    return rows


def render_markdown(rows: list[dict[str, Any]], perplexity: dict[str, Any], profile: str) -> str:
    """Markdown in the layout of the paper's Table 1, plus the perplexity line and caveats."""
    frame = pd.DataFrame([{
        "Task": r["task"],
        "Previous SOTA (paper)": f"{r['paper_previous_sota_system']} {r['paper_previous_sota']}"
        + (f" ± {r['paper_previous_sota_std']}" if r["paper_previous_sota_std"] else ""),
        "Paper baseline": f"{r['paper_baseline']}",
        "Paper +ELMo": f"{r['paper_elmo']}" + (f" ± {r['paper_elmo_std']}" if r["paper_elmo_std"] else ""),
        "Paper increase (abs / rel)": f"{r['paper_increase_absolute']} / {r['paper_increase_relative']}",
        "Our baseline": f"{r['baseline_mean']:.2f} ± {r['baseline_std']:.2f}",
        "Our +ELMo": f"{r['elmo_mean']:.2f} ± {r['elmo_std']:.2f}",
        "Our increase (abs / rel)": f"{r['increase_absolute']:.2f} / {r['increase_relative']:.1f}%",
        "Welch p": "—" if r["welch_p"] is None else f"{r['welch_p']:.3g}",
        "Seeds": r["seeds"],
    } for r in rows])
    per_seed = [f"- {r['task']} test per seed: baseline "
                + ", ".join(f"s{seed} {score:.2f}" for seed, score in r["baseline_per_seed"].items())
                + "; +ELMo " + ", ".join(f"s{seed} {score:.2f}" for seed, score in r["elmo_per_seed"].items())
                for r in rows]
    ppl = perplexity
    lines = [
        f"# Table 1 (profile `{profile}`)",
        "",
        "Test-set results (CoNLL-2003 NER: entity span F1 on eng.testb, model selected on eng.testa). "
        "Ours: mean ± sample std over seeds. Relative increase = error reduction "
        "(+ELMo − baseline) / (100 − baseline). Welch p: two-sided Welch t-test of our +ELMo against "
        "our baseline over seeds (p < 0.05: the gain exceeds seed noise).",
        "",
        frame.to_markdown(index=False),
        "",
        *per_seed,
        "",
        "## biLM held-out perplexity",
        "",
        f"Average of forward and backward perplexity (full softmax, all targets incl. `</S>`/`<S>` and "
        f"`<UNK>`) on {int(ppl['heldout_tokens']):,} tokens of 1B Word heldout sections 12–13 never seen "
        f"in training: **{ppl['perplexity']:.1f}** (forward {ppl['forward_perplexity']:.1f}, backward "
        f"{ppl['backward_perplexity']:.1f}); unigram model on the same targets: "
        f"**{ppl['unigram_perplexity']:.1f}**. Vocabulary {int(ppl['vocab_size']):,} words, held-out OOV "
        f"rate {100 * ppl['oov_rate']:.2f}%.",
        "",
        f"Not comparable to the paper's {PAPER_PERPLEXITY} (1B Word test shard, a 793k-word vocabulary, "
        "a 4096/512 biLM trained for 10 epochs on 800M tokens): this profile trains a much smaller "
        "biLM on a few million tokens with a different vocabulary.",
        "",
    ]
    return "\n".join(lines)
