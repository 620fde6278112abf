"""Table 1 as a view over runs: the paper's rows beside ours (floor, baseline, +ELMo and the
char-layer control, each mean ± sample std over seeds, Welch's p), a row per declared task the
paper does not have, then the biLM's held-out perplexity. The main job's table reads its runs only:
the char-layer control column is "—" there and filled in ``table1_controls`` (analysis job).

* Relative increase = error reduction (+ELMo − baseline) / (100 − baseline), as the paper's Table 1.
* † and ‡ mark runs still learning and runs that never learned (:class:`.runs.Run`).
"""

from __future__ import annotations

import io
from typing import Any

import pandas as pd

from ..experiments.bilm_source import released_bilm
from ..experiments.specs import NO_ELMO, RUNS_DIRS
from ..experiments.tasks import TASKS
from ..io import read_json, read_text
from . import Output
from .query import table_runs
from .runs import (CLEARLY_BELOW, NEVER_LEARNED, STILL_LEARNING, Run, compare, group, load_runs,
                   read_paper_table, relative_error_reduction)


GROUPS = (("baseline", "baseline"), ("elmo", "+ELMo"), ("control", "char layer"))   # a row's run groups, labelled


def table1_rows(paper: list[dict[str, str]], runs: list[Run], floors: dict[str, dict[str, float]],
                spec: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per paper row, in the paper's order, then one per declared task the paper does not
    have (its paper cells empty); our values are None where no run exists.

    Args:
        paper: rows of ``paper/table1.csv``.
        runs, floors: from :func:`load_runs`.
        spec: ``tables.table1`` (``runs.seeds``, ``elmo``, ``control``).
    """
    seeds = spec["runs"]["seeds"]
    rows = []
    columns = list(paper[0]) if paper else ["task", "name"]
    published = {p["task"] for p in paper}
    unpublished = [{**dict.fromkeys(columns, ""), "task": task, "name": info.title}
                   for task, info in TASKS.items() if task not in published]
    for p in [*paper, *unpublished]:            # a declared task without a paper row: its paper cells "—"
        task = p["task"]
        metric = TASKS[task].metric if task in TASKS else None
        base = elmo = control = None
        if metric is not None:
            prior = floors.get(task, {}).get("prior_train_loss")
            base = group(runs, task, NO_ELMO, seeds, metric, prior)
            elmo = group(runs, task, spec["elmo"], seeds, metric, prior)
            control = group(runs, task, spec.get("control"), seeds, metric, prior)
        row: dict[str, Any] = {"task": p["name"], "split": "test", **{f"paper_{k}": v for k, v in p.items()
                                                                       if k not in ("task", "name")}}
        row["floor"] = floors[task][f"test_{metric}"] if metric and task in floors else None
        row.update(baseline=base, elmo=elmo, control=control)
        if metric is not None and TASKS[task].secondary:    # e.g. SQuAD's exact match beside its F1
            names = {"baseline": NO_ELMO, "elmo": spec["elmo"], "control": spec.get("control")}
            row["secondary"] = []
            for key_name, label in TASKS[task].secondary:
                groups = {key: group(runs, task, name, seeds, key_name, None) for key, name in names.items()}
                row["secondary"].append({"metric": key_name, "label": label,
                                         "floor": floors.get(task, {}).get(f"test_{key_name}"),
                                         "welch_p_elmo_vs_baseline": compare(groups["elmo"], groups["baseline"]),
                                         **{key: g for key, g in groups.items() if g is not None}})
        both = base is not None and elmo is not None
        row["increase_absolute"] = elmo["mean"] - base["mean"] if both else None
        row["increase_relative"] = relative_error_reduction(base["mean"], elmo["mean"]) if both else None
        row["welch_p_elmo_vs_baseline"] = compare(elmo, base)
        row["welch_p_elmo_vs_control"] = compare(elmo, control)
        rows.append(row)
    return rows


def _cell(group: dict[str, Any] | None) -> str:
    if group is None:
        return "—"
    mark = STILL_LEARNING if group["still_learning"] else ""
    never = len(group.get("never_learned", []))
    return f"{group['mean']:.2f} ± {group['std']:.2f}{mark}" + (f" ({never}{NEVER_LEARNED})" if never else "")


def _p(value: float | None) -> str:
    return "—" if value is None else f"{value:.3g}"


def render_markdown(rows: list[dict[str, Any]], perplexity: dict[str, Any] | None, paper_perplexity: str,
                    profile: str, spec: dict[str, Any], controls: bool = True,
                    left_out: dict[str, str] | None = None, released: str | None = None) -> str:
    """Markdown in the layout of the paper's Table 1, then per-seed scores, the perplexity line
    and caveats. ``controls`` False: the view of the main job, whose runs hold no control (its
    column says where it is filled). ``left_out``: ``data.left_out`` (tasks and evaluation splits
    the profile leaves out for want of licensed data), listed under the table. ``released``: the
    released biLM the runs read (``bilm_source.path``); then ``perplexity`` is None (no softmax)."""
    frame = pd.DataFrame([{
        "Task": r["task"],
        "Previous SOTA (paper)": f"{r['paper_previous_sota_system']} {r['paper_previous_sota']}"
        + (f" ± {r['paper_previous_sota_std']}" if r["paper_previous_sota_std"] else "") if r["paper_elmo"] else "—",
        "Paper baseline": r["paper_baseline"] or "—",
        "Paper +ELMo": r["paper_elmo"] + (f" ± {r['paper_elmo_std']}" if r["paper_elmo_std"] else "") or "—",
        "Paper increase (abs / rel)": f"{r['paper_increase_absolute']} / {r['paper_increase_relative']}"
        if r["paper_elmo"] else "—",
        "Our floor": "—" if r["floor"] is None else f"{r['floor']:.2f}",
        "Our baseline": _cell(r["baseline"]),
        "Our +ELMo": _cell(r["elmo"]),
        "Our char layer": _cell(r["control"]),
        "Our increase (abs / rel)": "—" if r["increase_absolute"] is None
        else f"{r['increase_absolute']:.2f} / {r['increase_relative']:.1f}%",
        "p (+ELMo vs baseline)": _p(r["welch_p_elmo_vs_baseline"]),
        "p (+ELMo vs char layer)": _p(r["welch_p_elmo_vs_control"]),
        "Seeds": len(r["elmo"]["per_seed"]) if r["elmo"] else "—",
    } for r in rows])
    per_seed = []
    for r in rows:
        parts = [f"{label} " + ", ".join(f"s{seed} {score:.2f}" + (STILL_LEARNING if seed in g["still_learning"] else "")
                                          + (NEVER_LEARNED if seed in g.get("never_learned", []) else "")
                                          for seed, score in g["per_seed"].items())
                 for label, g in ((label, r[key]) for key, label in GROUPS)
                 if g is not None]
        if parts:
            per_seed.append(f"- {r['task']} test per seed: " + "; ".join(parts))
        for second in r.get("secondary") or []:
            if not any(key in second for key, _ in GROUPS):
                continue
            floor = "" if second["floor"] is None else f"floor {second['floor']:.2f}; "
            p = second["welch_p_elmo_vs_baseline"]
            per_seed.append(f"- {r['task']} test {second['label']}: {floor}" + "; ".join(
                f"{label} {second[key]['mean']:.2f} ± {second[key]['std']:.2f}"
                for key, label in GROUPS if key in second) + ("" if p is None else f"; p (+ELMo vs baseline) {_p(p)}"))
    for name, why in (left_out or {}).items():
        kind = "task" if name in TASKS else "contamination split"
        per_seed.append(f"- Left out of this profile ({kind} `{name}`, `data.left_out`; `workflow.profile "
                        f"--free-data`): {why}" + ("; its row shows —" if name in TASKS else ""))
    return "\n".join([*_table1_head(frame, per_seed, profile, spec, controls),
                      *(_perplexity_lines(perplexity, paper_perplexity) if released is None
                        else _released_lines(released))])


def _released_lines(released: str) -> list[str]:
    return ["## The biLM", "",
            f"The released biLM at `{released}` (`bilm_source.path`), read as released: no pretraining "
            "here, no held-out perplexity and no domain fine-tuning (§3.4), because the released files "
            "hold no softmax. Every +ELMo and char-layer run reads its layers.", ""]


def floor_captions() -> str:
    """The declared tasks' floors, "<name>: <what it predicts>" joined by "; ", consecutive tasks
    with the same floor named together ("SST-5 and SNLI: the training set's majority class")."""
    merged: list[tuple[list[str], str]] = []
    for task in TASKS.values():
        name, _, what = task.floor_caption.partition(": ")
        if merged and merged[-1][1] == what:
            merged[-1][0].append(name)
        else:
            merged.append(([name], what))
    return "; ".join(f"{' and '.join(names)}: {what}" for names, what in merged)


def _table1_head(frame: pd.DataFrame, per_seed: list[str], profile: str, spec: dict[str, Any],
                 controls: bool) -> list[str]:
    return [
        f"# Table 1{' with its char-layer control' if controls else ''} (profile `{profile}`)",
        "",
        "Test-set results; model selection on dev: " + "; ".join(t.caption for t in TASKS.values())
        + ". Ours: mean ± sample std over seeds "
        f"({', '.join(map(str, spec['runs']['seeds']))}); — = not run yet. Floor: the task's trivial "
        f"baseline scored by the same metric ({floor_captions()}). Char layer: "
        "+ELMo with only the biLM's context-free layer 0 (a control: what ELMo adds without context)"
        + ("; its runs belong to the analysis job (`dvc repro analysis/dvc.yaml`), which writes this table "
           "with the control column and its p-value filled as `results/tables/table1_controls.md`. "
           if not controls else ". ") +
        "Relative increase = error reduction (+ELMo − baseline) / (100 − baseline). p: two-sided Welch "
        "t-test over seeds (p < 0.05: the difference exceeds seed noise). "
        f"{STILL_LEARNING} = best dev epoch was the last one (still improving when training stopped). "
        f"({{n}}{NEVER_LEARNED}) = n of the cell's runs never learned: their training loss never fell "
        f"{100 * CLEARLY_BELOW:.0f}% below the loss of predicting the training label frequencies (SST-5, "
        "SNLI; kept in the mean, marked per seed below).",
        "",
        frame.to_markdown(index=False, disable_numparse=True),   # as printed: 88.0 stays 88.0
        "",
        *per_seed,
        "",
    ]


def _perplexity_lines(perplexity: dict[str, Any], paper_perplexity: str) -> list[str]:
    ppl = perplexity
    return [
        "## biLM held-out perplexity",
        "",
        f"exp of the mean of the forward and backward NLLs, i.e. the geometric mean of the two "
        f"perplexities (full softmax, all targets incl. `</S>`/`<S>` and "
        f"`<UNK>`) on {int(ppl['heldout_tokens']):,} tokens of 1B Word heldout sections 12–13 never seen "
        f"in training: **{ppl['perplexity']:.1f}** (forward {ppl['forward_perplexity']:.1f}, backward "
        f"{ppl['backward_perplexity']:.1f}); unigram model on the same targets: "
        f"**{ppl['unigram_perplexity']:.1f}**. Vocabulary {int(ppl['vocab_size']):,} words, held-out OOV "
        f"rate {100 * ppl['oov_rate']:.2f}%.",
        "",
        f"Not comparable to the paper's {paper_perplexity} (after pretraining, before fine-tuning: 1B Word "
        "test shard, a 793k-word vocabulary, a 4096/512 biLM trained for 10 epochs on 800M tokens): this "
        "profile trains a much smaller "
        "biLM on a few million tokens with a different vocabulary.",
        "",
    ]


def flat_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One flat record per row for the CSV: the paper's values, our floor, means, stds, increases
    and p-values (None where no run exists)."""
    flat = []
    for r in rows:
        record = {k: v for k, v in r.items() if k not in ("baseline", "elmo", "control", "secondary")}
        # the first other metric (SQuAD's EM, SRL's Brown F1, coreference's MUC F1); table1.json has all
        second = (r.get("secondary") or [{}])[0]
        record["secondary_metric"] = second.get("metric")
        record["secondary_floor"] = second.get("floor")
        for name, _ in GROUPS:
            record[f"{name}_mean"] = None if r[name] is None else r[name]["mean"]
            record[f"{name}_std"] = None if r[name] is None else r[name]["std"]
            record[f"{name}_secondary_mean"] = second[name]["mean"] if name in second else None
            record[f"{name}_secondary_std"] = second[name]["std"] if name in second else None
        record["secondary_welch_p_elmo_vs_baseline"] = second.get("welch_p_elmo_vs_baseline")
        flat.append(record)
    return flat


def table1_files(params: dict[str, Any], runs_dirs: list[str], name: str, controls: bool) -> Output:
    """``<name>.{md,csv,json}`` of Table 1 over the runs under ``runs_dirs`` that the profile's
    table specs list (``tables.table1``, with ``controls`` also ``tables.table1_controls``) and the
    floors of its tasks: a folder of another profile's run (a committed one, a task the profile
    leaves out) is never read."""
    spec = params["tables"]["table1"]
    tables = ["table1", *(["table1_controls"] if controls and params["tables"].get("table1_controls") else [])]
    listed = {run.id for table in tables for run in table_runs(params, table)}
    runs, floors = load_runs(*runs_dirs)
    runs = [run for run in runs if run.id in listed]
    floors = {task: floor for task, floor in floors.items() if task in spec["runs"]["tasks"]}
    rows = table1_rows(read_paper_table("paper/table1.csv"), runs, floors, spec)
    released = released_bilm(params)     # released weights: no softmax, so no perplexity stage
    perplexity = None if released else read_json("results/metrics/perplexity.json")
    text = render_markdown(rows, perplexity, read_text("paper/perplexity.txt").strip(), params["profile"], spec,
                           controls=controls, left_out=params["data"].get("left_out"), released=released)
    csv = io.StringIO()
    pd.DataFrame(flat_rows(rows)).to_csv(csv, index=False, float_format="%.4f")
    return {f"{name}.md": text, f"{name}.csv": csv.getvalue(),
            f"{name}.json": {"profile": params["profile"], "rows": rows, "perplexity": perplexity,
                            **({"released_bilm": released} if released else {})}}


def build(params: dict[str, Any]) -> Output:
    return table1_files(params, [RUNS_DIRS["main"]], "table1", controls=False)
