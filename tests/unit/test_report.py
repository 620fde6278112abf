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


def test_verdicts():
    # ours +1.0 with Holm p 0.01, the paper's +0.5: held
    assert report.verdict(1.0, 0.01, 0.5, 0.8) == ("held", "held")
    # the other way, significant: reversed
    assert report.verdict(-1.0, 0.01, 0.5, 0.8) == ("reversed", "reversed")
    # not significant, and the paper's 0.5 is below the 0.8 we could detect
    assert report.verdict(0.4, 0.3, 0.5, 0.8)[1] == "not resolved: the paper's 0.50 is below the 0.80 our seeds and split could detect"
    # not significant although the paper's 2.0 was detectable
    assert report.verdict(0.4, 0.3, 2.0, 0.8)[1] == "not resolved: no significant difference here"
    assert report.verdict(1.0, 0.01, None, 0.8) == ("unresolved", "no paper number to compare")


def _tables() -> dict:
    table1 = {"profile": "t", "rows": [{"task": "NER", "paper_increase_absolute": "2.06 / 21%",
                                         "baseline": {"runs": ["ner-baseline-s0"]}, "elmo": {"runs": ["ner-elmo-s0"]},
                                         "control": None}],
              "bootstrap": [{"task": "ner", "comparison": "+ELMo vs baseline", "difference": 1.98, "p_holm": 0.001,
                             "detectable": 0.9, "split": "test"},
                            {"task": "ner", "comparison": "+ELMo vs char layer", "difference": 0.1, "p_holm": 0.5,
                             "detectable": 0.9, "split": "test"}]}
    cell = lambda paper, run: {"paper": paper, "dev": {"runs": [run]}, "test": {"runs": [run]}}  # noqa: E731
    table2 = {"rows": [{"task": "srl", "cells": {"elmo_last": cell("84.1", "srl-elmo_last-s0"),
                                                  "elmo": cell("84.8", "srl-elmo-s0")}}],
              "comparisons": {"dev": [{"task": "srl", "other": "elmo_last", "treatment": "elmo", "difference": -2.0,
                                       "p_holm": 0.02, "detectable": 1.0}], "test": []}}
    figure1 = [{"task": "SRL", "setting": s, "train_examples": n, "dev": d}
               for s, n, d in (("baseline", 90, 10.0), ("+ELMo", 90, 20.0), ("baseline", 9000, 50.0), ("+ELMo", 9000, 52.0))]
    figure2 = [{"task": "srl", "mix": "input", "layer": k, "weight": w} for k, w in enumerate((0.2, 0.5, 0.3))]
    return {"table1_controls": table1, "table2": table2, "figure1": figure1, "figure2": figure2}


def test_findings_from_the_tables():
    found = report.findings(_tables())
    assert [(f["source"], f["verdict"]) for f in found] == [
        ("Table 1", "held"), ("Table 2", "reversed"), ("Figure 1", "descriptive"), ("Figure 2", "descriptive")]
    assert found[0]["claim"] == "NER: +ELMo beats the baseline (paper +2.06)"
    assert found[1]["claim"] == "SRL: elmo − elmo_last = +0.70 (paper, dev)"
    assert found[2]["ours"] == "dev gain +10.00 at 90 examples, +2.00 at 9,000" and found[2]["text"].startswith("held")
    assert found[3]["ours"] == "s = 0.20 / 0.50 / 0.30" and found[3]["text"].startswith("held")


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
    for stem in ("table1_controls", "table2"):
        (folder / f"{stem}.json").write_text(json.dumps(tables[stem]))
    for stem in report.FIGURES:
        rows = tables[stem]
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
