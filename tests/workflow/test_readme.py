"""The README quotes only numbers the committed results and measurement records hold
(workflow/readme.py), and its links resolve."""

import re

import pytest

from workflow import readme
from workflow.readme import BLOCK, ROOT, ReadmeError, render, stale_blocks

# A measured-looking number: a decimal, or a count with a unit of time, size or share.
MEASURED = re.compile(r"\d+\.\d+|\d[\d,]*\s?(?:min|minutes|s|sec|seconds|h|hours|GB|GiB|MB|MiB|KiB|%)(?![\w-])")


def _prose(text: str) -> str:
    """``text`` without generated blocks, fenced code, inline code, paper sections and versions."""
    text = BLOCK.sub("", text)
    text = re.sub(r"§\s?\d+(?:\.\d+)*|WordNet 3\.0", "", text)
    text = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)
    return re.sub(r"`[^`\n]*`", "", text)


def test_every_generated_block_is_the_render_of_the_committed_records():
    assert stale_blocks() == []


def test_the_readme_prose_quotes_no_number_outside_a_generated_block():
    found = MEASURED.findall(_prose((ROOT / "README.md").read_text(encoding="utf-8")))
    assert found == [], f"numbers in README prose (move them into a generated block): {found}"


def test_the_prose_check_finds_a_hand_written_number():
    assert MEASURED.findall(_prose("The main job takes 99.9 min, setup 115 s; tests 22 min (48%).")) == \
        ["99.9", "115 s", "22 min", "48%"]
    assert MEASURED.findall(_prose("`torch==2.13.0` and\n```\nx = 1.5\n```\nsix tasks, NAACL 2018, §5.3, WordNet 3.0")) == []


def test_the_readme_has_the_blocks_its_sections_promise():
    names = [m.group("name") for m in BLOCK.finditer((ROOT / "README.md").read_text(encoding="utf-8"))]
    assert names == ["requirements", "table1"]


def test_table1_block_quotes_table1_json(tmp_path, monkeypatch):
    tables = tmp_path / "tables"
    tables.mkdir()
    paper = {"paper_baseline": "90.15", "paper_elmo": "92.22", "paper_elmo_std": "0.10", "paper_metric": "span F1",
             "split": "test", "task": "NER"}
    cell = {"mean": 85.514, "std": 0.4921, "never_learned": [], "runs": ["a", "b", "c"]}
    row = {**paper, "floor": 57.19, "baseline": {**cell, "mean": 83.87, "std": 0.29}, "elmo": cell,
           "welch_p_elmo_vs_baseline": 0.0131}
    perplexity = {"heldout_tokens": 49993.0, "perplexity": 246.34, "unigram_perplexity": 1084.63}
    (tables / "table1.json").write_text(readme.json.dumps({"rows": [row], "perplexity": perplexity, "profile": "tiny"}))
    monkeypatch.setattr(readme, "TABLES", tables)
    assert "| NER (span F1, test) | 90.15 → 92.22 ± 0.10 | 57.19 | 83.87 ± 0.29 | 85.51 ± 0.49 | — | 0.013 | — | 3 |" \
        in readme.table1()
    control = {**row, "control": {**cell, "mean": 85.0, "std": 0.1, "never_learned": [2]},
               "welch_p_elmo_vs_control": 0.2}
    (tables / "table1_controls.json").write_text(readme.json.dumps({"rows": [control]}))
    assert "| 85.51 ± 0.49 | 85.00 ± 0.10 (1‡) | 0.013 | 0.2 | 3 |" in readme.table1()
    stale = {**control, "elmo": {**cell, "mean": 80.0}}                  # controls of other +ELMo runs
    (tables / "table1_controls.json").write_text(readme.json.dumps({"rows": [stale]}))
    assert "| out of date |" in readme.table1() and "analysis job has not run" in readme.table1()


def test_an_unknown_block_is_named_with_its_line():
    with pytest.raises(ReadmeError, match=r"doc.md:3: unknown generated block 'nope'"):
        render("a\nb\n<!-- generated: nope -->\nx\n<!-- end generated -->\n", "doc.md")


@pytest.mark.parametrize("document", ["README.md", *sorted(p.relative_to(ROOT).as_posix()
                                                           for p in (ROOT / "docs").glob("*.md"))])
def test_relative_links_resolve(document):
    path = ROOT / document
    targets = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", path.read_text(encoding="utf-8"))
    missing = [t for t in targets if "://" not in t and not (path.parent / t).exists()]
    assert missing == []
