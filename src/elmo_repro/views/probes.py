"""Tables 4, 5 and 6 of the paper (§5.3) and the CoVe translation score: views over the probe
stages' results (``results/probes/``) and ``results/cove/bleu.json``, with the paper's numbers
(``paper/table5.csv``, ``paper/table6.csv``) beside ours.

* Table 5 (WSD): F1 per test set, over all test sets, and on the instances whose gold sense was seen
  in training; layer 1 against layer 2 of each source by McNemar's exact test on the instances
  (scipy ``binomtest``): the rows are deterministic, so the instances are the sample.
* Table 6 (POS): test accuracy, mean ± sample std over the probe seeds; layer 1 against layer 2 by
  Welch's t-test over the seeds (:func:`.runs.welch_p`).
* Table 4: the static and contextual nearest neighbours of each query word.
"""

from __future__ import annotations

import csv
from pathlib import Path
from statistics import mean, stdev
from typing import Any

from scipy.stats import binomtest

from ..data.wsd import PAPER_POOL_LEAVES_OUT
from ..io import InputError, read_json
from .runs import STILL_LEARNING, welch_p

SOURCES = ("bilm", "cove")


def _paper(path: str | Path, metric: str) -> dict[tuple[str, int | None], str]:
    with open(path, encoding="utf-8", newline="") as handle:
        return {(r["source"], int(r["layer"]) if r["layer"] else None): r[metric]
                for r in csv.DictReader(handle) if r["source"] != "other"}


def _order(row: dict[str, Any]) -> tuple:
    source = row["source"]
    rank = SOURCES.index(source) if source in SOURCES else len(SOURCES)
    return rank, row["layer"] if row["layer"] is not None else -1


def load_wsd_rows(directory: str | Path) -> list[dict[str, Any]]:
    """Every ``results/probes/wsd/<source>/*.json``: the sources' layers, then the first-sense row."""
    rows = [read_json(p) for p in sorted(Path(directory).glob("*/*.json"))]
    return sorted(rows, key=_order)


def mcnemar_p(a: dict[str, str], b: dict[str, str]) -> float | None:
    """Two-sided exact McNemar p of two rows' per-instance correctness (``correct`` bit strings per
    test set); None when the rows never disagree."""
    if a.keys() != b.keys() or any(len(a[k]) != len(b[k]) for k in a):
        raise ValueError("the two rows were scored on different instances")
    only_a = sum(x == "1" and y == "0" for k in a for x, y in zip(a[k], b[k]))
    only_b = sum(x == "0" and y == "1" for k in a for x, y in zip(a[k], b[k]))
    if only_a + only_b == 0:
        return None
    return float(binomtest(min(only_a, only_b), only_a + only_b, 0.5).pvalue)


def _layer_pairs(rows: list[dict[str, Any]]) -> dict[str, tuple[dict, dict]]:
    """Per source its layer-1 and layer-2 rows, when both exist."""
    pairs = {}
    for source in SOURCES:
        by_layer = {r["layer"]: r for r in rows if r["source"] == source}
        if 1 in by_layer and 2 in by_layer:
            pairs[source] = (by_layer[1], by_layer[2])
    return pairs


def table5(rows: list[dict[str, Any]], paper_csv: str | Path) -> dict[str, Any]:
    """Table 5's rows with the paper's F1 and the layer-1-vs-2 McNemar tests."""
    paper = _paper(paper_csv, "f1")
    out = [{**{k: r[k] for k in ("row", "source", "layer", "train", "test", "metrics")},
            "paper_f1": paper.get((r["source"], r["layer"]))} for r in rows]
    tests = {source: {"layer1_all_f1": one["metrics"]["all_f1"], "layer2_all_f1": two["metrics"]["all_f1"],
                      "mcnemar_p": mcnemar_p(one["correct"], two["correct"])}
             for source, (one, two) in _layer_pairs(rows).items()}
    return {"rows": out, "layer1_vs_layer2": tests}


def render_table5(table: dict[str, Any], profile: str) -> str:
    rows = table["rows"]
    if not rows:
        raise InputError("results/probes/wsd", "no WSD probe results")
    sets, train = rows[0]["test"], rows[0]["train"]
    layer = next((r["metrics"] for r in rows if r["layer"] is not None), rows[0]["metrics"])
    seen, nearest = layer["seen_instances"], layer["nearest_answers"]
    pooled = [name for name in sets if name not in PAPER_POOL_LEAVES_OUT]
    has_pool = "paper_pool_f1" in rows[0]["metrics"]
    lines = [f"# Table 5: word sense disambiguation, 1-nearest-neighbour per layer (profile `{profile}`)", "",
             f"Sense vectors from {' + '.join(train)}; tested on {', '.join(sets)}. F1 (%) as Raganato et al.'s "
             "scorer; *all* is the union of our test sets"
             + (f"; *as paper's ALL* pools them as the paper's ALL does, without "
                f"{', '.join(PAPER_POOL_LEAVES_OUT)} ({' + '.join(pooled)})" if has_pool else "")
             + f". A test word whose lemma and part of speech have training senses takes the nearest sense "
             f"mean ({nearest:,} instances, of which {nearest - seen:,} have no gold sense among those "
             f"trained); the others take the WordNet 3.0 first sense. *seen* is the {seen:,} instances one of "
             "whose gold senses occurs in training. Deterministic (no training, no seeds), so no † applies. "
             "The paper trains on SemCor and pools SensEval-2, SensEval-3, SemEval-2013 and SemEval-2015 "
             "(SemEval-2007 left out), so its column is a reference, not the same test.", "",
             "| row | " + " | ".join(sets) + " | all |" + (" as paper's ALL |" if has_pool else "")
             + " seen | answered by 1-NN / first sense / none | paper (ALL of 4 sets) |",
             "|---|" + "---|" * (len(sets) + 4 + has_pool)]
    for r in rows:
        m = r["metrics"]
        cells = [f"{m[f'{name}_f1']:.1f}" for name in sets] + [f"{m['all_f1']:.1f}"]
        if has_pool:
            cells.append(f"{m['paper_pool_f1']:.1f}")
        lines.append(f"| {r['row']} | " + " | ".join(cells) + f" | {m['seen_f1']:.1f} | "
                     f"{m['nearest_answers']} / {m['first_sense_answers']} / {m['unanswered_answers']} | "
                     f"{r['paper_f1'] or '–'} |")
    lines += ["", "Layer 1 against layer 2 (the paper: layer 2 is better for WSD), McNemar's exact test on the "
              "test instances:", ""]
    for source, t in table["layer1_vs_layer2"].items():
        p = "–" if t["mcnemar_p"] is None else f"{t['mcnemar_p']:.3g}"
        lines.append(f"- {source}: layer 1 {t['layer1_all_f1']:.1f}, layer 2 {t['layer2_all_f1']:.1f} F1 (all); "
                     f"p = {p}")
    return "\n".join(lines) + "\n"


def load_pos_rows(directory: str | Path) -> list[dict[str, Any]]:
    """``results/probes/pos/<source>/<run>.json`` grouped into one row per (source, layer)."""
    groups: dict[tuple[str, Any], list[dict]] = {}
    for path in sorted(Path(directory).glob("*/*.json")):
        run = read_json(path)
        groups.setdefault((run["source"], run["layer"]), []).append(run)
    rows = []
    for (source, layer), runs in groups.items():
        runs.sort(key=lambda r: -1 if r["seed"] is None else r["seed"])
        test = [r["metrics"]["test_accuracy"] for r in runs]
        dev = [r["metrics"]["dev_accuracy"] for r in runs]
        rows.append({"row": runs[0]["row"], "source": source, "layer": layer,
                     "seeds": [r["seed"] for r in runs if r["seed"] is not None],
                     "per_seed": test, "mean": mean(test), "std": stdev(test) if len(test) > 1 else 0.0,
                     # a trained probe that stopped at max_epochs while dev accuracy still improved
                     "still_learning": [not r["metrics"].get("converged", True) for r in runs],
                     "best_epochs": [r["metrics"].get("best_epoch") for r in runs],
                     "dev_mean": mean(dev), "tokens": runs[0]["tokens"]})
    return sorted(rows, key=_order)


def table6(rows: list[dict[str, Any]], paper_csv: str | Path) -> dict[str, Any]:
    """Table 6's rows with the paper's accuracy and the layer-1-vs-2 Welch tests."""
    paper = _paper(paper_csv, "accuracy")
    out = [{**r, "paper_accuracy": paper.get((r["source"], r["layer"]))} for r in rows]
    tests = {source: {"layer1": one["mean"], "layer2": two["mean"],
                      "welch_p": welch_p(one["per_seed"], two["per_seed"])}
             for source, (one, two) in _layer_pairs(rows).items()}
    return {"rows": out, "layer1_vs_layer2": tests}


def render_table6(table: dict[str, Any], profile: str) -> str:
    rows = table["rows"]
    if not rows:
        raise InputError("results/probes/pos", "no POS probe results")
    tokens = rows[0]["tokens"]
    lines = [f"# Table 6: part-of-speech tagging, a linear probe per layer (profile `{profile}`)", "",
             f"Test accuracy (%) on the treebank's test documents ({tokens['test']:,} tokens; trained on "
             f"{tokens['train']:,}, the epoch chosen on {tokens['dev']:,} dev tokens), mean ± sample std over "
             "the probe seeds (per seed in brackets, with the epoch kept). Each probe trains until its dev "
             "accuracy stops improving; † marks a seed that reached the epoch limit still improving. The "
             "paper's probe reads the full PTB (sections 0–18 / 22–24), so its column is a reference, not "
             "the same test.", "",
             "| row | test accuracy | dev accuracy | paper |", "|---|---|---|---|"]
    for r in rows:
        per = ", ".join(f"{v:.2f}{STILL_LEARNING if late else ''} (epoch {e})"
                        for v, late, e in zip(r["per_seed"], r["still_learning"], r["best_epochs"]))
        cell = f"{r['mean']:.2f} ± {r['std']:.2f} [{per}]" if r["seeds"] else f"{r['mean']:.2f} (deterministic)"
        lines.append(f"| {r['row']} | {cell} | {r['dev_mean']:.2f} | {r['paper_accuracy'] or '–'} |")
    lines += ["", "Layer 1 against layer 2 (the paper: layer 1 is better for POS), Welch's t-test over the seeds:", ""]
    for source, t in table["layer1_vs_layer2"].items():
        p = "–" if t["welch_p"] is None else f"{t['welch_p']:.3g}"
        lines.append(f"- {source}: layer 1 {t['layer1']:.2f}, layer 2 {t['layer2']:.2f}; p = {p}")
    return "\n".join(lines) + "\n"


def render_table4(neighbours: dict[str, Any], profile: str) -> str:
    lines = [f"# Table 4: nearest neighbours (profile `{profile}`)", "",
             f"Static: the nearest words by the static vectors ({neighbours['static_vectors']}; the paper: GloVe). "
             f"Contextual: for the first sentences holding the word in {neighbours['corpus']} (the biLM's own "
             f"decontaminated training text), the nearest other sentences by the biLM's layer "
             f"{neighbours['layer']} vector of the word (cosine).", ""]
    for row in neighbours["rows"]:
        static = ", ".join(f"{n['word']} ({n['cosine']:.2f})" for n in row["static"])
        lines += [f"## {row['query']}", "", f"Static: {static}", "",
                  f"Contextual ({row['occurrences']} occurrences in {row['sentences']} sentences):", ""]
        for example in row["contextual"]:
            lines.append(f"- **{example['sentence']}** (line {example['line']})")
            for n in example["nearest"]:
                lines.append(f"  - {n['cosine']:.2f}: {n['sentence']} (line {n['line']})")
        lines.append("")
    return "\n".join(lines)


def render_cove(bleu: dict[str, Any], published: dict[str, Any], data: dict[str, Any], profile: str) -> str:
    """``cove.md``: ``bleu`` (``results/cove/bleu.json``, sacrebleu's default), ``published``
    (``results/metrics/cove_published_bleu.json``, tokenized and lower-cased), the Multi30k counts."""
    history = "; ".join(f"{h['epoch']}: {h['val_bleu']:.2f}" for h in bleu["history"])
    return "\n".join([
        f"# CoVe: the English→German translation model (profile `{profile}`)", "",
        "McCann et al. (2017)'s MT-LSTM and attentional decoder, trained on Multi30k (their smallest MT "
        "setting), not the released CoVe (WMT 2017, 7M pairs). Its encoder's two layers are the CoVe rows "
        "of Tables 5 and 6.", "",
        "| test 2016 BLEU (sacreBLEU default: cased, detokenized) | test 2016 BLEU (tokenized, lower-cased: "
        "compare with published scores) | val BLEU (greedy, selection) | epoch kept | training pairs "
        "| dropped (SNLI / other evaluation sentences) |",
        "|---|---|---|---|---|---|",
        f"| **{bleu['test_bleu']:.2f}** | **{published['test_bleu']:.2f}** | "
        f"{max(h['val_bleu'] for h in bleu['history']):.2f} | "
        f"{max(bleu['history'], key=lambda h: h['val_bleu'])['epoch']} | {data['train_pairs']:,} | "
        f"{data['dropped_snli_pairs']:,} / {data['dropped_eval_pairs']:,} |", "",
        "Two conventions: sacreBLEU's default (cased, its own 13a tokenization of detokenized output) is "
        "the reproducible figure; published Multi30k En→De scores (McCann et al. among them) are "
        "multi-bleu.perl on Moses-tokenized, lower-cased text, which the second reproduces (output and "
        "references Moses-tokenized by sacremoses, then sacreBLEU with no tokenization, lower-cased). "
        "Compare the second with published numbers.", "",
        f"sacreBLEU default: `{bleu['score']}`; signature `{bleu['signature']}`", "",
        f"Tokenized, lower-cased: `{published['score']}`; signature `{published['signature']}`", "",
        f"Val BLEU per epoch (sacreBLEU default): {history}.", ""])
