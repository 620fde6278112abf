"""The report page (views/report.py): verdicts worked by hand, findings from hand-made tables, and
the page's content and offline-ness; :mod:`tests.browser` opens it in headless Chromium."""

import io
import json

import matplotlib
import pytest

from elmo_repro.io import InputError
from elmo_repro.views import report
from tests.browser import dump_dom

matplotlib.use("Agg")


def comparison(difference, decision, p_holm=0.01, detectable=0.8, seeds=3, mc=0.001, **extra):
    return {"difference": difference, "decision": decision, "p_holm": p_holm, "p_holm_mc_se": mc,
            "detectable": detectable, "seeds": seeds, **extra}


def test_verdicts():
    # ours +1.0, significant, the paper's +0.5: held
    assert report.verdict(comparison(1.0, "significant"), 0.5) == ("held", "held")
    # the other way, significant: reversed
    assert report.verdict(comparison(-1.0, "significant"), 0.5) == ("reversed", "reversed")
    # not significant, and the paper's 0.5 is below the 0.8 we could detect
    assert report.verdict(comparison(0.4, "not significant", 0.3), 0.5)[1] == \
        "not resolved: the paper's 0.50 is below the 0.80 our seeds and split could detect"
    # not significant although the paper's 2.0 was detectable
    assert report.verdict(comparison(0.4, "not significant", 0.3), 2.0)[1] == "not resolved: no significant difference here"
    assert report.verdict(comparison(1.0, "significant"), None) == ("unresolved", "no paper number to compare")
    # a Holm p within two Monte-Carlo SEs of 0.05 is no verdict; nor is one seed
    assert report.verdict(comparison(1.0, "not resolved", 0.0497, mc=0.002), 0.5) == \
        ("unresolved", "not resolved: Holm p 0.0497 is within two Monte-Carlo SEs (0.0020) of 0.05")
    assert report.verdict(comparison(1.0, "significant", seeds=1), 0.5)[1].startswith("not resolved: one seed")


def _tables() -> dict:
    table1 = {"profile": "t", "rows": [{"task": "NER", "paper_increase_absolute": "2.06 / 21%",
                                         "baseline": {"runs": ["ner-baseline-s0"]}, "elmo": {"runs": ["ner-elmo-s0"]},
                                         "control": None}],
              "bootstrap": [comparison(1.98, "significant", 0.001, 0.9, task="ner", comparison="+ELMo vs baseline",
                                       split="test"),
                            comparison(0.1, "not significant", 0.5, 0.9, task="ner", comparison="+ELMo vs char layer",
                                       split="test")]}
    cell = lambda paper, run: {"paper": paper, "dev": {"runs": [run]}, "test": {"runs": [run]}}  # noqa: E731
    table2 = {"rows": [{"task": "srl", "cells": {"elmo_last": cell("84.1", "srl-elmo_last-s0"),
                                                  "elmo": cell("84.8", "srl-elmo-s0")}}],
              "comparisons": {"dev": [comparison(-2.0, "significant", 0.02, 1.0, task="srl", other="elmo_last",
                                                 treatment="elmo")], "test": []}}
    rows = [{"task": "SRL", "setting": s, "train_examples": n, "fraction": f, "dev": d, "never_learned": never}
            for s, n, f, d, never in (("baseline", 90, 0.01, 10.0, 0), ("+ELMo", 90, 0.01, 20.0, 0),
                                      ("baseline", 9000, 1.0, 50.0, 0), ("+ELMo", 9000, 1.0, 52.0, 0))]
    figure1 = {"rows": rows, "comparisons": {"dev": [
        comparison(8.0, "significant", 0.004, 3.0, task="srl", comparison="gain at 1% − gain at 100%",
                   fractions=[0.01, 1.0], standard_error=1.5)], "test": []}}
    figure2 = [{"task": "srl", "mix": "input", "layer": k, "weight": w} for k, w in enumerate((0.2, 0.5, 0.3))]
    return {"table1_controls": table1, "table2": table2, "figure1": figure1, "figure2": figure2}


def test_findings_from_the_tables():
    tables = _tables()
    found = report.findings(tables)
    assert [(f["source"], f["verdict"]) for f in found] == [
        ("Table 1", "held"), ("Table 2", "reversed"), ("Figure 1", "held"), ("Figure 2", "descriptive")]
    assert found[0]["claim"] == "NER: +ELMo beats the baseline (paper +2.06)"
    assert found[1]["claim"] == "SRL: elmo − elmo_last = +0.70 (paper, dev)"
    assert found[2]["ours"] == "gain at 1% − gain at 100%: +8.00 on dev (SE 1.50), Holm p 0.004"
    assert found[3]["ours"] == "s = 0.20 / 0.50 / 0.30" and found[3]["text"].startswith("held")
    # a point of the contrast holding a run that never learned: no verdict
    tables["figure1"]["rows"][0]["never_learned"] = 2
    assert report.findings(tables)[2]["text"] == "not resolved: runs at 90 examples never learned"


def _png() -> bytes:
    from matplotlib import pyplot as plt
    fig, ax = plt.subplots(figsize=(1, 1))
    ax.plot([0, 1], [0, 1])
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    plt.close(fig)
    return buffer.getvalue()


def write_tables(folder):
    """Every file the report reads: each section's Markdown (a table whose text names the section),
    the run tables' JSON, the figures' CSV and PNG."""
    folder.mkdir(parents=True, exist_ok=True)
    for stem, _ in report.SECTIONS:
        (folder / f"{stem}.md").write_text(f"# {stem}\n\n| Cell | Value |\n|---|---|\n| {stem}-cell | 1.23 |\n")
    tables = _tables()
    for stem in ("table1_controls", "table2", "figure1"):
        (folder / f"{stem}.json").write_text(json.dumps(tables[stem]))
    for stem in report.FIGURES:
        rows = tables[stem]["rows"] if stem == "figure1" else tables[stem]
        (folder / f"{stem}.csv").write_text(",".join(rows[0]) + "\n" + "".join(",".join(map(str, r.values())) + "\n" for r in rows))
        (folder / f"{stem}.png").write_bytes(_png())


def test_page_holds_every_section_its_runs_and_nothing_remote(tmp_path):
    write_tables(tmp_path)
    page = report.build({"profile": "tiny"}, tmp_path, commit=lambda: "abc123")
    for stem, title in report.SECTIONS:
        assert f'id="{stem}"' in page and f"{stem}-cell" in page
    assert "<code>abc123</code>" in page and "profile <code>tiny</code>" in page
    assert page.count('src="data:image/png;base64,') == 2
    assert "NER elmo: <code>ner-elmo-s0</code>" in page and "SRL elmo_last: <code>srl-elmo_last-s0</code>" in page
    assert "http://" not in page and "https://" not in page and "<link" not in page   # readable offline


def test_a_missing_table_is_named(tmp_path):
    write_tables(tmp_path)
    (tmp_path / "table3.md").unlink()
    with pytest.raises(InputError, match="table3.md: missing: build the table first"):
        report.build({"profile": "tiny"}, tmp_path)


def test_the_page_in_a_real_browser(tmp_path):
    """Headless Chromium renders every table's text and decodes both figures."""
    write_tables(tmp_path / "tables")
    page = tmp_path / "index.html"
    page.write_text(report.build({"profile": "tiny"}, tmp_path / "tables", commit=lambda: "abc123"), encoding="utf-8")
    dom = dump_dom(page)
    for stem, _ in report.SECTIONS:
        assert f"<td>{stem}-cell</td>" in dom
    assert dom.count('data-loaded="true"') == 2 and 'data-loaded="false"' not in dom
