"""The report page: every table and figure of both jobs on one self-contained HTML page
(``results/report/index.html``, stage ``report`` of the analysis job; generated, never edited).

It reads only what the table stages wrote under ``results/tables`` (each view's Markdown, JSON and
PNG), so it is a view of views: no number on the page is computed here except the verdicts of
:func:`findings`, which compare each of the paper's findings with ours using the tables' own
bootstrap comparisons. The page holds, in order: the profile and git commit it was built from;
the findings; every table as its view wrote it (the paper's numbers beside ours, significance
marks), each run table followed by the runs of each of its cells (run names, and the MLflow tag to
find each: ``run_id``; MLflow's own run ids die with the store, so the page never prints them); the
figures as inline PNGs. It loads nothing from the network, so it reads the same offline.
"""

from __future__ import annotations

import base64
import csv
import html
import json
import re
import subprocess
from pathlib import Path
from typing import Any, Callable

from ..experiments.bilm_source import released_bilm
from ..experiments.tasks import TASKS
from ..io import InputError
from .labels import LABELS

TABLES = Path("results/tables")
ALPHA = 0.05
# (file stem, section title): the page's sections in order; a figure section also shows <stem>.png
SECTIONS = (
    ("table1_controls", "Table 1 — six tasks, baseline and +ELMo, with the char-layer control"),
    ("finetuning", "Domain fine-tuning of the biLM (§3.4)"),
    ("table2", "Table 2 — how the biLM layers are combined (§5.1)"),
    ("table3", "Table 3 — where ELMo enters the task model (§5.2)"),
    ("table7", "Table 7 — which representation the task model reads"),
    ("figure1", "Figure 1 — sample efficiency (§5.4)"),
    ("figure2", "Figure 2 — learned layer weights (§5.5)"),
    ("table4", "Table 4 — nearest neighbours (§5.3)"),
    ("table5", "Table 5 — word sense disambiguation (§5.3)"),
    ("table6", "Table 6 — POS tagging (§5.3)"),
    ("cove", "CoVe: the MT-LSTM compared in Tables 5 and 6"),
)
FIGURES = ("figure1", "figure2")
ABLATIONS = ("table2", "table3", "table7")
# Every file the page reads: each section's Markdown, the run tables' JSON, the figures' CSV and PNG
# (the report stage's dependencies in workflow/registry.py)
INPUTS = ([f"{stem}.md" for stem, _ in SECTIONS] + [f"{stem}.json" for stem in ("table1_controls", *ABLATIONS, "figure1")]
          + [f"{stem}.{ext}" for stem in FIGURES for ext in ("csv", "png")])
# Marks each <img> data-loaded="true" once decoded (false on an error): the report's browser test reads it.
IMAGE_CHECK = ("for (const img of document.images) {"
               " const mark = () => { img.dataset.loaded = String(img.complete && img.naturalWidth > 0); };"
               " if (img.complete) mark(); else { img.addEventListener('load', mark);"
               " img.addEventListener('error', mark); } }")
STYLE = """body{font-family:system-ui,sans-serif;max-width:80rem;margin:2rem auto;padding:0 1rem;line-height:1.4}
table{border-collapse:collapse;margin:.5rem 0 1rem;font-size:.9rem}th,td{border:1px solid #ccc;padding:.2rem .4rem;vertical-align:top}
th{background:#f3f3f3}code{background:#f6f6f6;padding:0 .2rem}.held{color:#075}.reversed{color:#a00}
.unresolved{color:#555}.runs{font-size:.8rem;color:#444}img{max-width:100%}section{margin-bottom:2rem}"""


def verdict(c: dict[str, Any], paper_difference: float | None) -> tuple[str, str]:
    """(class, text) of one comparison ``c`` (a table's row: ``difference``, ``decision``,
    ``p_holm``, ``p_holm_mc_se``, ``detectable``, ``seeds``): ``held`` when ours goes the paper's way
    and is significant (Holm p below α by more than two Monte-Carlo SEs), ``reversed`` when it goes
    the other way and is significant, else ``unresolved``, saying why: one seed (seed noise not
    estimated), a Holm p within Monte-Carlo error of α, or a paper difference below what our seeds
    and split could detect at the comparison's Holm level."""
    from ..significance import NOT_RESOLVED, SIGNIFICANT   # numpy and scipy: not for workflow/registry.py

    if paper_difference is None:
        return ("unresolved", "no paper number to compare")
    if c["seeds"] < 2:
        return ("unresolved", "not resolved: one seed, so seed noise is not part of the test")
    difference, decision = c["difference"], c["decision"]
    if decision == SIGNIFICANT and paper_difference != 0 and (difference > 0) == (paper_difference > 0):
        return ("held", "held")
    if decision == SIGNIFICANT:
        return ("reversed", "reversed" if paper_difference != 0 else "the paper shows none; ours is significant")
    if decision == NOT_RESOLVED:
        return ("unresolved", f"not resolved: Holm p {c['p_holm']:.4f} is within two Monte-Carlo SEs "
                              f"({c['p_holm_mc_se']:.4f}) of {ALPHA}")
    if abs(paper_difference) < c["detectable"]:
        return ("unresolved", f"not resolved: the paper's {abs(paper_difference):.2f} is below the "
                              f"{c['detectable']:.2f} our seeds and split could detect")
    return ("unresolved", "not resolved: no significant difference here")


def _number(text: Any) -> float | None:
    """The paper's number as printed (``'88.7 ± 0.17'``, ``'4.7 / 24.9%'``: the first figure)."""
    match = re.match(r"\s*(-?\d+(?:\.\d+)?)", str(text or ""))
    return float(match.group(1)) if match else None


def findings(tables: dict[str, dict[str, Any]], labels: dict[str, dict[str, str]] | None = None) -> list[dict[str, Any]]:
    """Each of the paper's findings that a built table tests, with our evidence and verdict.

    Args:
        tables: view name -> the view's JSON (``table1_controls``, ``table2``, ``table3``,
            ``table7``, ``figure1``) or rows of its CSV as dicts (``figure2``); absent views are skipped.
        labels: per ablation table, ELMo spec -> its column's label (default: the spec names).

    Returns:
        Dicts with ``source``, ``claim``, ``ours`` (text), ``verdict`` (held / reversed /
        unresolved / descriptive) and ``text``.
    """
    out: list[dict[str, Any]] = []
    table1 = tables.get("table1_controls")
    if table1:
        paper = {row["task"]: row for row in table1["rows"]}
        for c in table1.get("bootstrap", []):
            if c["comparison"] != "+ELMo vs baseline":
                continue
            title = TASKS[c["task"]].title
            paper_diff = _number(paper[title]["paper_increase_absolute"]) if title in paper else None
            kind, text = verdict(c, paper_diff)
            out.append({"source": "Table 1", "claim": f"{title}: +ELMo beats the baseline (paper +{paper_diff})",
                        "ours": f"{c['difference']:+.2f} on the {c['split']} split, Holm p {c['p_holm']:.3g}",
                        "verdict": kind, "text": text})
    for name in ABLATIONS:
        table = tables.get(name)
        if not table:
            continue
        cells = {row["task"]: row["cells"] for row in table["rows"]}
        for c in table["comparisons"]["dev"]:
            row = cells[c["task"]]
            a, b = _number(row[c["treatment"]]["paper"]), _number(row[c["other"]]["paper"])
            paper_diff = None if a is None or b is None else round(a - b, 4)
            kind, text = verdict(c, paper_diff)
            label = (labels or {}).get(name, {})
            claim = f"{TASKS[c['task']].title}: {label.get(c['treatment'], c['treatment'])} − {label.get(c['other'], c['other'])}"
            out.append({"source": name.replace("table", "Table "),
                        "claim": claim + ("" if paper_diff is None else f" = {paper_diff:+.2f} (paper, dev)"),
                        "ours": f"{c['difference']:+.2f} on dev, Holm p {c['p_holm']:.3g}", "verdict": kind,
                        "text": text})
    out += _figure1(tables.get("figure1") or {}) + _figure2(tables.get("figure2") or [])
    return out


def _figure1(figure: dict[str, Any]) -> list[dict[str, Any]]:
    """§5.4: ELMo's gain is larger with less training data, tested per task on dev (the contrast
    "gain at the smallest size − gain on the full set" of ``figure1.json``); not resolved where a
    point of it holds a run that never learned."""
    out = []
    rows = figure.get("rows", [])
    for c in figure.get("comparisons", {}).get("dev", []):
        if len(c["fractions"]) != 2:
            continue
        title = TASKS[c["task"]].title
        stalled = sorted({int(r["train_examples"]) for r in rows if r["task"] == title and r["fraction"] in c["fractions"]
                          and int(r.get("never_learned", 0)) > 0})
        kind, text = verdict(c, 1.0)       # the paper: a positive contrast (a larger gain with less data)
        if stalled:
            kind, text = "unresolved", ("not resolved: runs at " + ", ".join(f"{n:,}" for n in stalled)
                                        + " examples never learned")
        out.append({"source": "Figure 1", "claim": f"{title}: ELMo's gain is larger with less training data",
                    "ours": f"{c['comparison']}: {c['difference']:+.2f} on dev (SE {c['standard_error']:.2f}), "
                            f"Holm p {c['p_holm']:.3g}", "verdict": kind, "text": text})
    return out


def _figure2(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """§5.5: at the input, the task model favours the first LSTM layer (descriptive)."""
    out = []
    for task in sorted({r["task"] for r in rows if r["mix"] == "input"}):
        weights = {int(r["layer"]): float(r["weight"]) for r in rows if r["task"] == task and r["mix"] == "input"}
        top = max(weights, key=weights.get)
        out.append({"source": "Figure 2", "claim": f"{TASKS[task].title}: the input mix favours the first LSTM layer",
                    "ours": "s = " + " / ".join(f"{weights[k]:.2f}" for k in sorted(weights)),
                    "verdict": "descriptive", "text": ("held" if top == 1 else f"not held (layer {top} is largest)")
                    + " (seed means; no test)"})
    return out


def cell_runs(name: str, table: dict[str, Any]) -> list[tuple[str, list[str]]]:
    """(cell label, run names) of every cell of a run table's JSON, in table order."""
    out = []
    if name == "table1_controls":
        for row in table["rows"]:
            for key in ("baseline", "elmo", "control"):
                if row.get(key):
                    out.append((f"{row['task']} {key}", list(row[key]["runs"])))
    elif name in ABLATIONS:
        for row in table["rows"]:
            for spec, cell in row["cells"].items():
                if cell.get("dev"):
                    out.append((f"{TASKS[row['task']].title} {spec}", list(cell["dev"]["runs"])))
    return out


def git_commit(root: Path = Path(".")) -> str:
    """HEAD of the checkout the page is built in (``unknown`` outside git), ``+dirty`` with edits."""
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root,
                               capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown (not a git checkout)"
    return head + ("+dirty" if dirty else "")


def _read_csv(path: Path) -> list[dict[str, str]]:
    return list(csv.DictReader(path.read_text(encoding="utf-8").splitlines()))


def not_built(params: dict[str, Any]) -> dict[str, str]:
    """The sections the profile has no stage for, with why: the fine-tuning table when the runs
    read a released biLM (``bilm_source.path``), whose files hold no softmax."""
    released = released_bilm(params)
    return {"finetuning": f"the runs read the released biLM {released} (bilm_source.path), which holds no "
                          "softmax: no perplexity and no domain fine-tuning"} if released else {}


def build(params: dict[str, Any], tables_dir: Path = TABLES, commit: Callable[[], str] = git_commit) -> str:
    """The page's HTML.

    Raises:
        InputError: a section's Markdown (or a figure's PNG) is missing from ``tables_dir``.
    """
    from markdown_it import MarkdownIt   # here: the registry imports this module for its files

    markdown = MarkdownIt("commonmark", {"html": False}).enable("table")
    data: dict[str, Any] = {}
    for name in ("table1_controls", *ABLATIONS, "figure1"):
        if (tables_dir / f"{name}.json").is_file():
            data[name] = json.loads((tables_dir / f"{name}.json").read_text(encoding="utf-8"))
    if (tables_dir / "figure2.csv").is_file():
        data["figure2"] = _read_csv(tables_dir / "figure2.csv")
    e = html.escape
    body = [f"<h1>ELMo reproduced: the report (profile <code>{e(str(params['profile']))}</code>)</h1>",
            f"<p>Built from git commit <code>{e(commit())}</code> by <code>dvc repro analysis/dvc.yaml</code> "
            "from the tables under <code>results/tables</code>. Each run named below is an MLflow run "
            "with the tag <code>run_id</code> set to its name (<code>mlflow ui</code>, then search "
            "<code>tags.run_id = '&lt;name&gt;'</code>).</p>",
            "<nav><ul>" + "".join(f'<li><a href="#{stem}">{e(title)}</a></li>' for stem, title in SECTIONS) + "</ul></nav>",
            '<section id="findings"><h2>The paper\'s findings, here</h2>',
            "<p>Verdicts from the tables' tests over training seeds and test units (Holm-corrected within each "
            "table; Tables 2, 3 and 7 and Figure 1 on the selection split, as the paper's dev numbers; Table 1 "
            "on the test split). Held: ours goes the paper's way and its Holm p is below 0.05 by more than two "
            "Monte-Carlo SEs; reversed: the same, the other way; not resolved: neither (the reason is given). "
            "Figure 2's findings are descriptive (seed means, no test).</p>",
            "<table><thead><tr><th>Source</th><th>The paper's finding</th><th>Ours</th><th>Verdict</th></tr></thead><tbody>"]
    labels = {name: {spec: LABELS.get(column, column) for spec, column in params["tables"][name].get("columns", {}).items()}
              for name in ABLATIONS if name in params.get("tables", {})}
    for f in findings(data, labels):
        body.append(f"<tr><td>{e(f['source'])}</td><td>{e(f['claim'])}</td><td>{e(f['ours'])}</td>"
                    f'<td class="{e(f["verdict"])}">{e(f["text"])}</td></tr>')
    body.append("</tbody></table></section>")
    for stem, title in SECTIONS:
        path = tables_dir / f"{stem}.md"
        why_not = not_built(params).get(stem)
        if why_not:
            body.append(f'<section id="{stem}"><h2>{e(title)}</h2><p>Not built in this profile: {e(why_not)}</p></section>')
            continue
        if not path.is_file():
            raise InputError(path, "missing: build the table first (its stage in analysis/dvc.yaml)")
        body.append(f'<section id="{stem}"><h2>{e(title)}</h2>')
        if stem in FIGURES:
            png = tables_dir / f"{stem}.png"
            if not png.is_file():
                raise InputError(png, "missing: build the figure first")
            encoded = base64.b64encode(png.read_bytes()).decode("ascii")
            body.append(f'<img alt="{e(title)}" src="data:image/png;base64,{encoded}">')
        text = re.sub(r"^(#+) ", lambda m: "#" * min(len(m.group(1)) + 2, 6) + " ", path.read_text(encoding="utf-8"), flags=re.M)
        body.append(markdown.render(text))
        runs = cell_runs(stem, data.get(stem, {})) if stem in data else []
        if runs:
            body.append('<details class="runs"><summary>The runs of each cell</summary><ul>'
                        + "".join(f"<li>{e(label)}: " + ", ".join(f"<code>{e(r)}</code>" for r in ids) + "</li>"
                                  for label, ids in runs) + "</ul></details>")
        body.append("</section>")
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>ELMo reproduced — report ({e(str(params['profile']))})</title><style>{STYLE}</style></head>"
            "<body>\n" + "\n".join(body) + f"\n<script>{IMAGE_CHECK}</script>\n</body></html>\n")
