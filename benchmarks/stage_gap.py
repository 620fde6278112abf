"""Where a pipeline execution's wall time went: each stage's own time and the gaps between stages.

Reads one pipeline run of the MLflow store (the launcher's parent run, ``pipeline: ...``; the
latest unless ``--parent`` names one) and its child stage runs. A stage run starts when the stage
process has imported its code and opens its run (``tracking.stage_run``) and ends when its work is
done, so the time between one stage's end and the next stage's start is what the pipeline spends
outside any stage's work: the runner's bookkeeping (DVC's status, output hashing, lock writes; or
Snakemake's), the next process's interpreter start and imports, and MLflow's start-up where a stage
logs directly. Prints the per-stage table (seconds, pipeline order, the stage process's peak
resident memory where it logged one) and the gap statistics.

A job built in several invocations (the analysis job one table target at a time: `dvc repro
analysis/dvc.yaml:table7`, then `:table3`, ...) is measured by naming every pipeline run
(``--parent A --parent B ...``): the stages of all of them in order, the wall times summed (a
stage rebuilt in a later run counts once). Runs of different commits need ``--current FILE ...``:
every stage of those pipeline files must be current now (``dvc status``).

Usage (from the repository root, after `python -m workflow.launch dvc repro ...`):
    .venv/bin/python -m benchmarks.stage_gap [--parent RUN_ID ...] [--tracking-uri sqlite:///mlflow.db] [--json OUT]
"""

from __future__ import annotations

import argparse
import datetime
import json
import statistics
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))


def pipeline_runs(client, experiment_id: str, parent: str | None):
    """The parent run (the latest pipeline run by default) and its children by start time."""
    if parent is None:
        recent = client.search_runs([experiment_id], order_by=["attributes.start_time DESC"], max_results=5000)
        pipelines = [r for r in recent if "runner" in r.data.tags]
        if not pipelines:
            raise SystemExit("no pipeline run in the store: run `python -m workflow.launch dvc repro` first")
        run = pipelines[0]
    else:
        run = client.get_run(parent)
    children = client.search_runs([experiment_id], filter_string=f"tags.mlflow.parentRunId = '{run.info.run_id}'",
                                  max_results=5000)
    return run, sorted(children, key=lambda c: c.info.start_time)


def gaps(parent, children) -> dict:
    """Per stage: its own seconds and the gap before it (from the previous stage's end, or from the
    pipeline's start for the first); totals; the mean gap per stage."""
    rows, previous_end = [], parent.info.start_time
    for child in children:
        own = (child.info.end_time - child.info.start_time) / 1000
        peak = child.data.metrics.get("peak_rss_mib")
        rows.append({"stage": child.info.run_name, "seconds": round(own, 1),
                     "gap_before": round((child.info.start_time - previous_end) / 1000, 2),
                     "peak_rss_mib": None if peak is None else round(peak), "status": child.info.status})
        previous_end = child.info.end_time
    end = parent.info.end_time or previous_end
    wall = (end - parent.info.start_time) / 1000
    in_stages = sum(r["seconds"] for r in rows)
    between = [r["gap_before"] for r in rows]
    tags = parent.data.tags
    started = datetime.datetime.fromtimestamp(parent.info.start_time / 1000, datetime.timezone.utc)
    return {"pipeline": parent.info.run_name, "parent_run_id": parent.info.run_id,
            "command": tags.get("command"), "git_commit": tags.get("git_commit"),
            "git_dirty": tags.get("git_dirty"), "profile": tags.get("profile"),
            "started_utc": started.strftime("%Y-%m-%d %H:%M"), "stages": len(rows),
            "wall_s": round(wall, 1), "in_stages_s": round(in_stages, 1),
            "outside_stages_s": round(wall - in_stages, 1),
            "gap_mean_s": round((wall - in_stages) / max(len(rows), 1), 2),
            "gap_median_s": round(statistics.median(between), 2) if between else None,
            "rows": rows}


def merge(results: list[dict], current: bool = False) -> dict:
    """One record of a job built in several pipeline runs (each a :func:`gaps` record, in order):
    rows concatenated, times summed; the commands joined. A stage that ran in more than one of
    them (an output made stale in between and rebuilt) counts once, its last run: its earlier
    runs' seconds and gaps leave the wall time, so the record is what one build of the job takes.

    ``current``: the runs may come from different commits, because the caller has checked that
    every stage of the job is current at the last one (``dvc status`` clean: each stage's code and
    params are the last commit's); the record names every commit. Without it, runs of different
    commits are refused.

    Raises:
        ValueError: the runs differ in profile, or (without ``current``) in commit.
    """
    if len(results) == 1:
        return results[0]
    for key in ("profile",) if current else ("git_commit", "profile"):
        if len({r[key] for r in results}) != 1:
            raise ValueError(f"the pipeline runs differ in {key}: {sorted({str(r[key]) for r in results})}")
    rows = [row for r in results for row in r["rows"]]
    last = {row["stage"]: n for n, row in enumerate(rows)}
    dropped = [row for n, row in enumerate(rows) if last[row["stage"]] != n]
    rows = [row for n, row in enumerate(rows) if last[row["stage"]] == n]
    wall = sum(r["wall_s"] for r in results) - sum(row["seconds"] + row["gap_before"] for row in dropped)
    in_stages = sum(row["seconds"] for row in rows)
    between = [row["gap_before"] for row in rows]
    commits = list(dict.fromkeys(r["git_commit"] for r in results))
    note = f"built in {len(results)} invocations, one after another; wall = their sum"
    if dropped:
        note += f" less {len(dropped)} earlier runs of stages rebuilt later"
    if len(commits) > 1:
        note += (f"; on commits {', '.join(c[:7] for c in commits)}, every stage current at the last "
                 "(dvc status clean)")
    return {"pipeline": f"{len(results)} pipeline runs: " + "; ".join(r["pipeline"] for r in results),
            "parent_run_id": [r["parent_run_id"] for r in results],
            "command": " && ".join(r["command"] or "?" for r in results),
            "git_commit": results[-1]["git_commit"], "git_commits": commits, "git_dirty": results[-1]["git_dirty"],
            "profile": results[0]["profile"], "started_utc": results[0]["started_utc"], "stages": len(rows),
            "wall_s": round(wall, 1), "in_stages_s": round(in_stages, 1), "outside_stages_s": round(wall - in_stages, 1),
            "gap_mean_s": round((wall - in_stages) / max(len(rows), 1), 2),
            "gap_median_s": round(statistics.median(between), 2) if between else None,
            "note": note, "rows": rows}


def stale_stages(pipeline_files: list[str]) -> dict:
    """``dvc status --json`` of the pipeline files, without the always-changed params check."""
    import subprocess

    done = subprocess.run(["dvc", "status", "--json", *pipeline_files], cwd=REPO, capture_output=True, text=True,
                          check=True)
    status = json.loads(done.stdout or "{}")
    return {stage: what for stage, what in status.items() if what != ["always changed"]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--parent", action="append",
                        help="a pipeline run id (default: the latest); repeat for a job built in several runs")
    parser.add_argument("--tracking-uri", default=f"sqlite:///{REPO / 'mlflow.db'}")
    parser.add_argument("--json", help="also write the result here")
    parser.add_argument("--current", metavar="PIPELINE_FILE", action="append",
                        help="accept runs of different commits when every stage of these pipeline files "
                             "(dvc.yaml, analysis/dvc.yaml) is current now (checked with dvc status)")
    args = parser.parse_args(argv)
    if args.current:
        stale = stale_stages(args.current)
        if stale:
            raise SystemExit(f"--current: stages not current: {', '.join(sorted(stale))}")
    from mlflow.tracking import MlflowClient

    client = MlflowClient(args.tracking_uri)
    experiment = client.get_experiment_by_name("elmo-repro")
    if experiment is None:
        raise SystemExit(f"no experiment elmo-repro in {args.tracking_uri}")
    result = merge([gaps(*pipeline_runs(client, experiment.experiment_id, parent))
                    for parent in (args.parent or [None])], current=bool(args.current))
    print(f"{result['pipeline']}: {result['wall_s']:.0f} s wall, {result['stages']} stages, "
          f"{result['in_stages_s']:.0f} s in stages, {result['outside_stages_s']:.0f} s between them "
          f"(mean {result['gap_mean_s']:.1f} s, median {result['gap_median_s']:.1f} s per stage)")
    print("| stage | seconds | gap before (s) | peak memory (MiB) |\n|---|---|---|---|")
    for row in result["rows"]:
        print(f"| `{row['stage']}` | {row['seconds']:,.1f} | {row['gap_before']:.1f} | {row['peak_rss_mib'] or '-'} |")
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
