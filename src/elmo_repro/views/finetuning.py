"""The fine-tuning table (paper §3.4; issue 12), a view over the fine-tuning stages' metrics and,
in the ``ablations`` profile, over the runs that compare +ELMo with and without fine-tuning.

Per task: the fine-tuning text (sentences, tokens, held-out sentences dropped, target tokens
trained, whether the pretraining Adagrad state was restored), and the task's dev text's
perplexity under the base and the fine-tuned biLM (the biLM never trains on dev text; the paper's
supplement reports this kind of drop, not the downstream effect). With runs: the task metric on the
test split of +ELMo on the fine-tuned biLM against +ELMo on the base biLM (mean ± sample std over
the same seeds, per seed, Welch's two-sided p), a comparison the paper does not report.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..experiments.specs import RUNS_DIRS
from ..experiments.tasks import TASKS
from ..io import read_json
from . import Output
from .runs import Run, compare, group, load_runs


def load_finetune_metrics(directory: str | Path) -> dict[str, dict[str, Any]]:
    """``results/metrics/finetune/<task>.json`` by task (the tasks that were fine-tuned)."""
    directory = Path(directory)
    return {task: read_json(directory / f"{task}.json") for task in TASKS if (directory / f"{task}.json").is_file()}


def finetuning_rows(metrics: dict[str, dict[str, Any]], runs: list[Run], spec: dict[str, Any]
                    ) -> list[dict[str, Any]]:
    """One row per fine-tuned task (the tasks' order), with the downstream comparison when
    ``spec`` (``tables.finetuning``) lists runs."""
    rows = []
    for task in (t for t in TASKS if t in metrics):
        m = metrics[task]
        row: dict[str, Any] = {"task": TASKS[task].title, **m,
                               "dev_perplexity_change_percent":
                                   100.0 * (m["dev_perplexity_finetuned"] - m["dev_perplexity_base"])
                                   / m["dev_perplexity_base"]}
        if spec.get("runs"):
            metric, seeds = TASKS[task].metric, spec["runs"]["seeds"]
            tuned = group(runs, task, spec["finetuned"], seeds, metric)
            base = group(runs, task, spec["base"], seeds, metric)
            row.update(metric=metric, split="test", finetuned=tuned, base=base,
                       difference=None if tuned is None or base is None else tuned["mean"] - base["mean"],
                       welch_p=compare(tuned, base))
        rows.append(row)
    return rows


def _cell(group: dict[str, Any] | None) -> str:
    if group is None:
        return "–"
    seeds = ", ".join(f"{v:.2f}" for v in group["per_seed"].values())
    return f"{group['mean']:.2f} ± {group['std']:.2f} ({seeds})"


def render_finetuning_markdown(rows: list[dict[str, Any]], profile: str, spec: dict[str, Any]) -> str:
    """The table as Markdown, with what each column means."""
    lines = [f"# Domain fine-tuning of the biLM (paper §3.4), profile `{profile}`", "",
             "| task | fine-tuning text (sentences / tokens) | held-out sentences dropped | target tokens trained "
             "| Adagrad state | dev text (sentences / tokens) | dev perplexity, base biLM | dev perplexity, "
             "fine-tuned | change |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(
            f"| {r['task']} | {r['text_sentences']:,} / {r['text_tokens']:,} | {r['dropped_held_out_sentences']:,} "
            f"| {r['target_tokens_per_direction']:,.0f} per direction | "
            f"{'continued from pretraining' if r['optimizer_state_restored'] else 'fresh'} "
            f"| {r['dev_sentences']:,} / {r['dev_tokens']:,} | {r['dev_perplexity_base']:.1f} "
            f"| {r['dev_perplexity_finetuned']:.1f} | {r['dev_perplexity_change_percent']:+.1f}% |")
    lines += ["", "Perplexity: the biLM's full-softmax perplexity (mean of the two directions) on the task's dev "
              "split, each distinct sentence once; the biLM never trains on it. The fine-tuning text is the "
              "task's training split only, one sentence per line, each distinct sentence once, without any "
              "sentence of the dev or test split. Each fine-tuning's wall time is on its MLflow run "
              "(`finetune@<task>`, metric `train_seconds`)."]
    if spec.get("runs"):
        lines += ["", f"## +ELMo with and without fine-tuning (test split, seeds {spec['runs']['seeds']})", "",
                  "| task | metric | +ELMo, fine-tuned biLM | +ELMo, base biLM | difference | Welch p |",
                  "|---|---|---|---|---|---|"]
        for r in rows:
            diff = "–" if r["difference"] is None else f"{r['difference']:+.2f}"
            p = "–" if r["welch_p"] is None else f"{r['welch_p']:.3f}"
            lines.append(f"| {r['task']} | {r['metric']} | {_cell(r['finetuned'])} | {_cell(r['base'])} "
                         f"| {diff} | {p} |")
        lines += ["", f"Specs `{spec['finetuned']}` and `{spec['base']}` differ only in the biLM; mean ± sample "
                  "std over seeds, per-seed scores in brackets; Welch's two-sided t-test over the per-seed scores."]
    return "\n".join(lines) + "\n"


def build(params: dict[str, Any]) -> Output:
    spec = params["tables"].get("finetuning") or {}
    runs, _ = load_runs(RUNS_DIRS["main"], RUNS_DIRS["analysis"])
    rows = finetuning_rows(load_finetune_metrics("results/metrics/finetune"), runs, spec)
    return {"finetuning.md": render_finetuning_markdown(rows, params["profile"], spec),
            "finetuning.json": {"profile": params["profile"], "rows": rows}}
