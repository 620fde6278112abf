"""Table 1 as a view over runs: the paper's six rows beside ours (floor, baseline, +ELMo and the
char-layer control, each mean ± sample std over seeds), then the biLM's held-out perplexity.

A table reads ``results/runs/<run id>/{spec,metrics}.json`` and the paper's numbers
(``paper/table1.csv``); it never trains, and aggregation over seeds happens only here.

* Relative increase = error reduction (+ELMo − baseline) / (100 − baseline), as the paper's Table 1.
* Whether a difference is more than seed noise: Welch's two-sided t-test over the per-seed test
  scores (scipy ``ttest_ind(equal_var=False)``; needs two seeds or more a side): +ELMo against the
  baseline, and +ELMo against the char-layer control (is the gain from context?).
* A run whose best dev epoch is its last was still improving when training stopped: its score is
  marked † (more epochs might change the comparison).
* A run whose training loss never fell clearly below the prior's (the loss of predicting the
  training label frequencies whatever the input, ``prior_train_loss`` of the task's floor; "clearly":
  by ``CLEARLY_BELOW``) learned nothing from its input: its seed is marked ‡ and the cell counts
  such runs. It stays in the mean (nothing is dropped silently), so a ‡ says the spread measures
  optimisation luck, not the representation.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path
from statistics import mean, stdev
from typing import Any

import pandas as pd
from scipy.stats import ttest_ind

from .experiments.specs import NO_ELMO
from .experiments.tasks import TASKS
from .io import InputError, read_json, read_text

STILL_LEARNING = "†"
NEVER_LEARNED = "‡"
CLEARLY_BELOW = 0.05     # a run learned when its lowest epoch training loss is 5% below the prior's


@dataclass(frozen=True)
class Run:
    """One finished run as the tables see it."""

    id: str
    spec: dict[str, Any]
    metrics: dict[str, float]
    train_loss: tuple[float, ...] = ()          # per epoch, from the run's history.csv

    @property
    def still_learning(self) -> bool:
        return self.metrics.get("best_epoch") == self.metrics.get("epochs")

    def never_learned(self, prior_loss: float | None) -> bool:
        """True when every epoch's training loss stayed above (1 - CLEARLY_BELOW) x ``prior_loss``
        (False without a prior or a history)."""
        return prior_loss is not None and bool(self.train_loss) and \
            min(self.train_loss) > (1.0 - CLEARLY_BELOW) * prior_loss


def read_train_loss(path: Path) -> tuple[float, ...]:
    """The ``train_loss`` column of a run's ``history.csv`` (empty when the file is absent).

    Raises:
        InputError: a history without a ``train_loss`` column or with a non-numeric value.
    """
    if not path.is_file():
        return ()
    rows = list(csv.DictReader(read_text(path).splitlines()))
    try:
        return tuple(float(row["train_loss"]) for row in rows)
    except (KeyError, TypeError, ValueError):
        raise InputError(path, "expected a numeric train_loss column") from None


def load_runs(*runs_dirs: str | Path) -> tuple[list[Run], dict[str, dict[str, float]]]:
    """Every run under the ``runs_dirs`` (folders with ``spec.json`` and ``metrics.json``; a
    missing directory holds none) and every task's floor (``<task>-floor/metrics.json``), by task.

    Raises:
        InputError: a run folder without its metrics (an interrupted or foreign folder).
    """
    runs, floors = [], {}
    folders = [folder for runs_dir in map(Path, runs_dirs) if runs_dir.is_dir() for folder in runs_dir.iterdir()]
    for folder in sorted(folders, key=lambda f: f.name):
        if folder.name.endswith("-floor"):
            floors[folder.name.removesuffix("-floor")] = read_json(folder / "metrics.json")
        elif (folder / "spec.json").is_file():
            if not (folder / "metrics.json").is_file():
                raise InputError(folder / "metrics.json", "run has a spec but no metrics")
            runs.append(Run(folder.name, read_json(folder / "spec.json"), read_json(folder / "metrics.json"),
                            read_train_loss(folder / "history.csv")))
    return runs, floors


def read_paper_table(path: str | Path) -> list[dict[str, str]]:
    """The paper's rows from a CSV (strings, as printed)."""
    return list(csv.DictReader(read_text(path).splitlines()))


def relative_error_reduction(baseline: float, improved: float) -> float:
    """Percent of the baseline's error (100 − score) removed: 100·(improved − baseline)/(100 − baseline)."""
    return 100.0 * (improved - baseline) / (100.0 - baseline)


def welch_p(improved: list[float], baseline: list[float]) -> float | None:
    """Two-sided p-value of Welch's t-test between two sets of per-seed scores; None with fewer
    than two scores on a side or when both sides have no spread."""
    if min(len(improved), len(baseline)) < 2 or (len(set(improved)) == 1 and len(set(baseline)) == 1):
        return None
    return float(ttest_ind(improved, baseline, equal_var=False).pvalue)


def _group(runs: list[Run], task: str, elmo_name: str | None, seeds: list[int], metric: str,
           prior_loss: float | None = None) -> dict[str, Any] | None:
    """Mean, sample std (0 for one seed) and per-seed test scores of a task's runs with one ELMo
    spec on the full training set, the seeds still learning (†) and those that never learned (‡,
    against ``prior_loss``); None when none of the table's seeds has run."""
    if elmo_name is None:
        return None
    chosen = sorted((r for r in runs if r.spec["task"] == task and r.spec["elmo_name"] == elmo_name
                     and r.spec["train_fraction"] == 1.0 and r.spec["seed"] in seeds),
                    key=lambda r: r.spec["seed"])
    if not chosen:
        return None
    scores = [r.metrics[f"test_{metric}"] for r in chosen]
    return {"mean": mean(scores), "std": stdev(scores) if len(scores) > 1 else 0.0,
            # None where the dev split has no such score (SRL's Brown test set has no dev part)
            "dev_mean": mean(r.metrics[f"dev_{metric}"] for r in chosen)
            if all(f"dev_{metric}" in r.metrics for r in chosen) else None,
            "per_seed": {r.spec["seed"]: s for r, s in zip(chosen, scores)},
            "still_learning": [r.spec["seed"] for r in chosen if r.still_learning],
            "never_learned": [r.spec["seed"] for r in chosen if r.never_learned(prior_loss)],
            "runs": [r.id for r in chosen]}


def _compare(improved: dict[str, Any] | None, other: dict[str, Any] | None) -> float | None:
    """:func:`welch_p` of two groups' per-seed scores; None when either group has no run."""
    if improved is None or other is None:
        return None
    return welch_p(list(improved["per_seed"].values()), list(other["per_seed"].values()))


# A task's other metrics, reported beside the table (the paper: one per task): (metrics key, label).
SECONDARY = {"squad": (("em", "exact match"),), "srl": (("brown_f1", "Brown test F1 (out of domain)"),),
             "coref": (("muc_f1", "MUC F1"), ("b3_f1", "B³ F1"), ("ceafe_f1", "CEAFφ4 F1"),
                       ("singletons_avg_f1", "average F1 with singletons in the key"))}
GROUPS = (("baseline", "baseline"), ("elmo", "+ELMo"), ("control", "char layer"))   # a row's run groups, labelled


def table1_rows(paper: list[dict[str, str]], runs: list[Run], floors: dict[str, dict[str, float]],
                spec: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per paper row, in the paper's order; our values are None where no run exists.

    Args:
        paper: rows of ``paper/table1.csv``.
        runs, floors: from :func:`load_runs`.
        spec: ``tables.table1`` (``runs.seeds``, ``elmo``, ``control``).
    """
    seeds = spec["runs"]["seeds"]
    rows = []
    for p in paper:
        task = p["task"]
        metric = TASKS[task].metric if task in TASKS else None
        base = elmo = control = None
        if metric is not None:
            prior = floors.get(task, {}).get("prior_train_loss")
            base = _group(runs, task, NO_ELMO, seeds, metric, prior)
            elmo = _group(runs, task, spec["elmo"], seeds, metric, prior)
            control = _group(runs, task, spec.get("control"), seeds, metric, prior)
        row: dict[str, Any] = {"task": p["name"], "split": "test", **{f"paper_{k}": v for k, v in p.items()
                                                                       if k not in ("task", "name")}}
        row["floor"] = floors[task][f"test_{metric}"] if metric and task in floors else None
        row.update(baseline=base, elmo=elmo, control=control)
        if metric is not None and task in SECONDARY:          # e.g. SQuAD's exact match beside its F1
            names = {"baseline": NO_ELMO, "elmo": spec["elmo"], "control": spec.get("control")}
            row["secondary"] = []
            for key_name, label in SECONDARY[task]:
                groups = {key: _group(runs, task, name, seeds, key_name, None) for key, name in names.items()}
                row["secondary"].append({"metric": key_name, "label": label,
                                         "floor": floors.get(task, {}).get(f"test_{key_name}"),
                                         "welch_p_elmo_vs_baseline": _compare(groups["elmo"], groups["baseline"]),
                                         **{key: g for key, g in groups.items() if g is not None}})
        both = base is not None and elmo is not None
        row["increase_absolute"] = elmo["mean"] - base["mean"] if both else None
        row["increase_relative"] = relative_error_reduction(base["mean"], elmo["mean"]) if both else None
        row["welch_p_elmo_vs_baseline"] = _compare(elmo, base)
        row["welch_p_elmo_vs_control"] = _compare(elmo, control)
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
        + (f" ± {r['paper_previous_sota_std']}" if r["paper_previous_sota_std"] else ""),
        "Paper baseline": r["paper_baseline"],
        "Paper +ELMo": r["paper_elmo"] + (f" ± {r['paper_elmo_std']}" if r["paper_elmo_std"] else ""),
        "Paper increase (abs / rel)": f"{r['paper_increase_absolute']} / {r['paper_increase_relative']}",
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


def _table1_head(frame: pd.DataFrame, per_seed: list[str], profile: str, spec: dict[str, Any],
                 controls: bool) -> list[str]:
    return [
        f"# Table 1{' with its char-layer control' if controls else ''} (profile `{profile}`)",
        "",
        "Test-set results; model selection on dev: CoNLL-2003 NER entity span F1 on eng.testb, selected "
        "on eng.testa; SST-5 sentence accuracy on test, selected on dev; SNLI accuracy on test, selected "
        "on a slice of SNLI dev (the profile's `tasks.snli.data`; without the training split, the tiny "
        "profile trains on the rest of SNLI dev); SQuAD v1.1 F1 as the official script, on the report "
        "part, selected on the selection part (the profile's `tasks.squad.data`: the tiny profile splits "
        "the official dev file by article: 16 articles reported, 4 for selection, the other 28 for "
        "training; the paper reports the hidden test set); SRL span F1 as the official CoNLL-2005 "
        "scorer (srl-eval.pl) on CoNLL-2005 WSJ section 23, selected on WSJ 24, trained on WSJ 02-21 "
        "(the profile's `tasks.srl.data` caps the training sentences), the Brown test set beside it "
        "(the paper's SRL numbers are on CoNLL-2012 OntoNotes, a licensed corpus not in the mirror: "
        "the same task on another corpus, so set the increase, not the level, beside the paper's); "
        "coreference average F1 of MUC, B³ and CEAFφ4 (the CoNLL scorer v8.01's semantics) on LitBank "
        "fiction, 20 test documents, selected on 10, trained on the other 70 (a fixed split by document, "
        "`results/metrics/coref_data.json`), singletons removed from the key as OntoNotes has none (the "
        "scores with them beside; the paper's numbers are on CoNLL-2012 OntoNotes). Ours: mean ± sample std over seeds "
        f"({', '.join(map(str, spec['runs']['seeds']))}); — = not run yet. Floor: the task's trivial "
        "baseline scored by the same metric (NER: each token's most frequent training tag; SST-5 and "
        "SNLI: the training set's majority class; SQuAD: Rajpurkar et al.'s sliding window over "
        "in-sentence spans; SRL: each token's most frequent training tag at its position relative to "
        "the predicate; coreference: names clustered by identical string, first-person pronouns "
        "together, he/she to the nearest name before them). Char layer: "
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
