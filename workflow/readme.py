"""Fill the generated blocks of README.md and docs/*.md from the committed results and measurements.

A number the README quotes comes from a file the pipeline or a benchmark wrote, never from a hand
edit: each such number lives in a block

    <!-- generated: NAME -->
    ...
    <!-- end generated -->

whose body is :data:`BLOCKS` ``[NAME]`` rendered from ``results/tables/*.json`` (the tables the jobs
commit) and ``benchmarks/results/jobs/*.json`` (the measured wall times: ``benchmarks/stage_gap.py
--json`` for a job, ``benchmarks/suite_time.py`` for the tests). ``tests/workflow/test_readme.py``
fails when a block is stale and when the README's prose (outside blocks and code) quotes a
measured-looking number.

    python -m workflow.readme          # rewrite the blocks in place
    python -m workflow.readme --check  # exit 1 naming each stale block; writes nothing
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Callable

from elmo_repro.experiments.tasks import TASKS
from elmo_repro.io import atomic_open

ROOT = Path(__file__).resolve().parent.parent
DOCUMENTS = ("README.md", "docs/pipeline.md", "docs/results.md", "docs/measurements.md", "docs/scaling.md")
JOBS = ROOT / "benchmarks" / "results" / "jobs"
TABLES = ROOT / "results" / "tables"

BLOCK = re.compile(r"(<!-- generated: (?P<name>[a-z0-9_]+) -->\n)(?P<body>.*?)(<!-- end generated -->)", re.S)


class ReadmeError(ValueError):
    """A document names an unknown block, or a record a block reads is missing or malformed."""


def _read(path: Path) -> dict:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ReadmeError(f"{path.relative_to(ROOT)}: missing (the block that quotes it cannot be rendered)") from None
    except json.JSONDecodeError as err:
        raise ReadmeError(f"{path.relative_to(ROOT)}:{err.lineno}: not valid JSON ({err.msg})") from None


def _minutes(seconds: float) -> str:
    return f"{seconds / 60:.1f} min"


def _cell(cell: dict | None) -> str:
    """``mean ± std`` of a table cell (the views' aggregate), ``(n‡)`` when runs never learned."""
    if not cell:
        return "—"
    text = f"{cell['mean']:.2f} ± {cell['std']:.2f}"
    if cell.get("never_learned"):
        text += f" ({len(cell['never_learned'])}‡)"
    return text


def _p(value: float | None) -> str:
    return "—" if value is None else f"{value:.2g}"


# ---------------------------------------------------------------------------------------------
# Blocks
# ---------------------------------------------------------------------------------------------

def table1() -> str:
    """Table 1 beside the paper: the main job's ``table1.json``, with the char-layer control
    column from the analysis job's ``table1_controls.json`` when that file belongs to the same
    main-job runs (else the column says it is out of date)."""
    main = _read(TABLES / "table1.json")
    controls_path = TABLES / "table1_controls.json"
    controls = {r["task"]: r for r in _read(controls_path)["rows"]} if controls_path.is_file() else {}
    lines = ["| task (metric, split) | paper: baseline → +ELMo | our floor | our baseline | our +ELMo "
             "| our char-layer control | p (+ELMo vs baseline) | p (+ELMo vs control) | seeds |",
             "|---|---|---|---|---|---|---|---|---|"]
    stale = False
    built = {t.title for t in TASKS.values()}            # declared tasks, whether or not they have run
    for row in main["rows"]:
        paper_elmo = row["paper_elmo"] + (f" ± {row['paper_elmo_std']}" if row["paper_elmo_std"] else "")
        head = f"| {row['task']} ({row['paper_metric']}, {row['split']}) | {row['paper_baseline']} → {paper_elmo} "
        if row["elmo"] is None:
            # a declared task whose runs the committed results predate, or one not built at all
            lines.append(head + ("| built, not yet run (`dvc repro`) | | | | | | |" if row["task"] in built
                                 else "| not built yet | | | | | | |"))
            continue
        control, p_control = "—", "—"
        other = controls.get(row["task"])
        if other is not None:
            if other["baseline"] == row["baseline"] and other["elmo"] == row["elmo"]:
                control, p_control = _cell(other["control"]), _p(other["welch_p_elmo_vs_control"])
            else:
                control, stale = "out of date", True
        lines.append(head + f"| {row['floor']:.2f} | {_cell(row['baseline'])} | {_cell(row['elmo'])} | {control} "
                            f"| {_p(row['welch_p_elmo_vs_baseline'])} | {p_control} | {len(row['elmo']['runs'])} |")
    ppl = main["perplexity"]
    lines += ["", f"biLM held-out perplexity ({main['profile']} profile, 1B Word heldout sections 12–13, "
                  f"{int(ppl['heldout_tokens']):,} tokens): {ppl['perplexity']:.1f} (unigram {ppl['unigram_perplexity']:.1f}); "
                  "not comparable to the paper's 39.7 (see the table's caption)."]
    if stale:
        lines.append("\nThe char-layer column is out of date: the analysis job has not run since the main job's runs changed.")
    return "\n".join(lines) + "\n"


def _families(rows: list[dict]) -> dict[str, float]:
    """Seconds per kind of stage: pretraining, domain fine-tuning, features, task runs, the rest."""
    kinds = {"biLM pretraining": 0.0, "domain fine-tuning": 0.0, "feature extraction": 0.0,
             "task runs": 0.0, "CoVe": 0.0, "probes": 0.0, "everything else": 0.0}
    for row in rows:
        stage = row["stage"]
        kind = ("biLM pretraining" if stage == "pretrain_bilm" else
                "domain fine-tuning" if stage.startswith("finetune@") else
                "feature extraction" if stage.startswith("features@") else
                "task runs" if stage.startswith("train_") and stage != "train_cove" else
                "CoVe" if "cove" in stage or "multi30k" in stage else
                "probes" if stage.startswith(("probe_", "wsd_", "pos_", "neighbours")) else
                "everything else")
        kinds[kind] += row["seconds"]
    return {kind: seconds for kind, seconds in kinds.items() if seconds >= 3}   # not the instant tables


def _job_line(record: dict) -> str:
    parts = ", ".join(f"{kind} {_minutes(s)}" for kind, s in _families(record["rows"]).items())
    command = f"`{record['command']}`"
    if " && " in record["command"]:   # built one target at a time (the note says in how many runs)
        command = f"`{record['command'].split(' && ')[0].rsplit(':', 1)[0]}:<target>` target by target"
    # one number: the last full measurement; its history (record["note"]) is docs/measurements.md's
    return (f"**{_minutes(record['wall_s'])}** ({command}, {record['started_utc'][:10]}, commit "
            f"{record['git_commit'][:7]}; {record['stages']} stages: {parts})")


def requirements() -> str:
    """What a fresh machine needs and how long each command took there."""
    # a regex, not tomllib: the supported Python 3.10 has no tomllib
    python = re.search(r'^requires-python = "([^"]+)"', (ROOT / "pyproject.toml").read_text(encoding="utf-8"), re.M).group(1)
    setup = _read(JOBS / "setup.json")
    tests = _read(JOBS / "tests.json")
    main = _read(JOBS / "main_job.json")
    analysis_path = JOBS / "analysis_job.json"
    analysis = _job_line(_read(analysis_path)) if analysis_path.is_file() else "not measured yet"
    from elmo_repro import fetch

    sizes = {name: (src.bytes if src.bytes is not None else sum(size for size, _ in src.pins.values()))
             for name, src in fetch.MANIFEST.items() if fetch.data_set(name) in fetch.DEFAULT}
    lm1b = sum(size for name, size in sizes.items() if fetch.data_set(name) == "lm1b")
    test_parts = ", ".join(f"{name} {s:.0f} s" for name, s in tests["groups"].items())
    return "\n".join([
        "| | |",
        "|---|---|",
        f"| Python | {python} (tested with {setup['python']}), Linux |",
        f"| machine | measured on {setup['machine']}; no GPU needed for the default (tiny) profile |",
        f"| data | `python -m elmo_repro.fetch` downloads about {sum(sizes.values()) / 1e9:.2f} GB, "
        f"{lm1b / 1e9:.2f} GB of it the 1B Word tarball (the tiny profile reads two of its held-out "
        f"shards; the paper profile all of it); not needed on this project's machines |",
        f"| disk | {setup['disk']} |",
        f"| set-up (`bash setup.sh`) | {setup['seconds']:.0f} s ({setup['measured']}) |",
        f"| main job (`dvc repro`, from a fresh clone) | {_job_line(main)} |",
        f"| analysis job (`dvc repro analysis/dvc.yaml`) | {analysis} |",
        f"| tests (`pytest`) | **{_minutes(tests['wall_s'])}** ({tests['measured'][:10]}, commit "
        f"{tests['git_commit'][:7]}{', ' + tests['machine'] if tests.get('machine') else ''}: {test_parts}) |",
    ]) + "\n"


def _stage_table(record: dict) -> str:
    """The measurement's header (command, date, commit, wall time, time between stages, and its
    history since: ``note``), then every stage with its own time and the gap before it."""
    head = (f"`{record['command']}`, {record['started_utc'][:10]}, commit {record['git_commit'][:7]}: "
            f"{_minutes(record['wall_s'])} wall, {record['outside_stages_s']:.0f} s of it between stages"
            + (f". Since then: {record['note']}" if record.get("note") else "") + ".")
    lines = [head, "", "| stage | seconds | gap before (s) | peak memory (MiB) |", "|---|---|---|---|"]
    lines += [f"| `{r['stage']}` | {r['seconds']:,.1f} | {r['gap_before']:.1f} | {r.get('peak_rss_mib') or '-'} |"
              for r in record["rows"]]
    return "\n".join(lines) + "\n"


def main_job_stages() -> str:
    """Every stage of the measured main job with its own time and the gap before it."""
    return _stage_table(_read(JOBS / "main_job.json"))


def analysis_job_stages() -> str:
    """Every stage of the measured analysis job with its own time and the gap before it."""
    path = JOBS / "analysis_job.json"
    return _stage_table(_read(path)) if path.is_file() else "Not measured yet.\n"


def resources() -> str:
    """Each stage (family)'s cluster resources in the tiny and the paper profile (their ``compute``
    sections through ``workflow.resources.stage_resources``; Snakemake's SLURM profile submits with them), and
    the launcher where a profile sets one."""
    from . import profile
    from .registry import concrete, job_stages  # the registry imports the task declarations: only when needed

    profiles = {name: profile.render(name) for name in ("tiny", "paper")}

    def cell(res: dict) -> str:
        return f"{res.get('gpu', 0)} / {res['mem_mb'] / 1000:g} GB / {res['runtime']} min"

    rows: dict[str, list] = {}
    for job in ("main", "analysis"):
        for stage in job_stages(job):
            name = stage.name + ("@*" if stage.foreach else "")
            made = {p: concrete(stage, params) for p, params in profiles.items()}
            row = rows.setdefault(name, [[], stage.threads, *(cell(made[p].resources) for p in profiles),
                                         made["paper"].launcher])
            row[0].append(job)
    lines = ["| stage | job | threads | tiny: GPUs / memory / time | paper: GPUs / memory / time | paper: launcher |",
             "|---|---|---|---|---|---|"]
    lines += [f"| `{name}` | {' and '.join(jobs)} | {threads} | {tiny} | {paper} | `{launcher}` |"
              for name, (jobs, threads, tiny, paper, launcher) in rows.items()]
    return "\n".join(lines) + "\n"


def dag() -> str:
    """Both jobs' DAG as a Mermaid flowchart (GitHub renders it), from ``dvc dag --mermaid`` with
    each ``foreach`` family collapsed to one node (``train_ner_elmo@*``); stages only the analysis job
    has are shaded. Raises :class:`ReadmeError` when ``dvc dag`` fails."""
    import subprocess

    done = subprocess.run([sys.executable, "-m", "dvc", "dag", "--mermaid"], cwd=ROOT,
                          capture_output=True, text=True)
    if done.returncode:
        raise ReadmeError(f"dvc dag --mermaid failed: {done.stderr.strip()}")
    names, edges = {}, set()
    for line in done.stdout.splitlines():
        node = re.fullmatch(r'\s*(node\d+)\["(.+)"\]', line)
        edge = re.fullmatch(r"\s*(node\d+)-->(node\d+)", line)
        if node:
            names[node.group(1)] = node.group(2)
        elif edge:
            edges.add(edge.groups())
    label = {key: re.sub(r"@.*", "@*", name.split(":", 1)[-1]) for key, name in names.items()}
    in_main = {label[key] for key, name in names.items() if not name.startswith("analysis/")}
    analysis = set(label.values()) - in_main         # families with runs in both jobs count as main
    ids = {name: f"s{i}" for i, name in enumerate(sorted(set(label.values())))}
    lines = ["```mermaid", "flowchart TD"]
    lines += [f'    {ids[name]}["{name}"]' + (":::analysis" if name in analysis else "") for name in ids]
    lines += sorted({f"    {ids[label[a]]} --> {ids[label[b]]}" for a, b in edges if label[a] != label[b]})
    lines += ["    classDef analysis fill:#eee,stroke:#999", "```"]
    return "\n".join(lines) + "\n"


def _include(name: str) -> Callable[[], str]:
    def render() -> str:
        text = (TABLES / name).read_text(encoding="utf-8")
        return re.sub(r"^(#+) ", lambda m: "#" * (len(m.group(1)) + 2) + " ", text, flags=re.M)  # nest headings
    render.__doc__ = f"``results/tables/{name}`` as the view wrote it."
    return render


BLOCKS: dict[str, Callable[[], str]] = {
    "table1": table1, "requirements": requirements, "resources": resources, "dag": dag,
    "main_job_stages": main_job_stages, "analysis_job_stages": analysis_job_stages,
    **{f"include_{name.split('.')[0]}": _include(name)
       for name in ("table1_controls.md", "finetuning.md", "table2.md", "table3.md", "table7.md", "table4.md", "table5.md",
                    "table6.md", "cove.md", "figure1.md", "figure2.md")},
}


def render(text: str, source: str) -> str:
    """``text`` with every generated block's body re-rendered; :class:`ReadmeError` names
    ``source`` and the line of an unknown block."""
    def body(match: re.Match) -> str:
        name = match.group("name")
        if name not in BLOCKS:
            line = text.count("\n", 0, match.start()) + 1
            raise ReadmeError(f"{source}:{line}: unknown generated block {name!r}; known: {', '.join(BLOCKS)}")
        return match.group(1) + BLOCKS[name]() + match.group(4)
    return BLOCK.sub(body, text)


def stale_blocks() -> list[str]:
    """``FILE: NAME`` of every block whose committed body differs from its render."""
    stale = []
    for document in DOCUMENTS:
        path = ROOT / document
        if not path.is_file():
            continue
        text = path.read_text(encoding="utf-8")
        fresh = {m.group("name"): m.group("body") for m in BLOCK.finditer(render(text, document))}
        stale += [f"{document}: {m.group('name')}" for m in BLOCK.finditer(text)
                  if fresh[m.group("name")] != m.group("body")]
    return stale


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m workflow.readme", description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 naming each stale block; write nothing")
    args = parser.parse_args(argv)
    try:
        if args.check:
            stale = stale_blocks()
            for entry in stale:
                print(f"stale generated block: {entry} (run `python -m workflow.readme`)", file=sys.stderr)
            return 1 if stale else 0
        for document in DOCUMENTS:
            path = ROOT / document
            if path.is_file():
                text = path.read_text(encoding="utf-8")
                new = render(text, document)
                if new != text:
                    with atomic_open(path) as handle:
                        handle.write(new)
                    print(f"updated {document}")
    except ReadmeError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
