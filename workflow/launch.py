"""Run the pipeline under one parent MLflow run: ``python -m workflow.launch dvc repro`` or
``python -m workflow.launch snakemake --cores 2``.

DVC and Snakemake start every stage as its own process. This launcher

1. creates the tracking store and the ``elmo-repro`` experiment once, before any stage runs (so
   concurrent Snakemake jobs never race to create the SQLite schema),
2. creates a parent run ``pipeline: <command> (<profile>)`` tagged with the runner, profile and git commit,
3. runs the given dvc or snakemake command with ``ELMO_PARENT_RUN_ID`` set, so each stage run
   becomes its child (``elmo_repro.tracking.stage_run``), and the venv's ``bin`` first on PATH;
   the stages spool their runs (``ELMO_MLFLOW_SPOOL``) and a thread here logs them to MLflow as
   they arrive (``elmo_repro.tracking_spool``: no stage process pays MLflow's ~5 s start-up),
4. ends the parent run FINISHED or FAILED by the runner's exit status, with the table attached
   (not for ``dvc exp``/``dvc queue``: an experiment's tables are in its own commit, not here).

It runs from the repository root whatever the current directory (``setup.sh`` puts the root on
the venv's import path, so ``python -m workflow.launch`` is found from a subdirectory too), so the
runner's paths are the README's, relative to the root.

For ``dvc exp ...`` and ``dvc queue ...`` it first makes a relative data mirror reachable from
DVC's temporary experiment copies (``workflow.experiments``).

The tracking URI comes from ``MLFLOW_TRACKING_URI`` (e.g. an ``mlflow server`` for cluster jobs)
and defaults to the repository's ``mlflow.db``. Plain ``dvc repro`` works without the launcher;
its stage runs are then top-level runs.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

from elmo_repro import tracking
from elmo_repro.console import log
from elmo_repro.tracking_spool import SPOOL_ENV, SpoolDrain, leftover_spools, spool_dir
from elmo_repro.params import load_params

from .experiments import ensure_mirror_links

RUNNERS = ("dvc", "snakemake")
ROOT = Path(__file__).resolve().parents[1]
TABLES = Path("results/tables")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m workflow.launch", description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("runner", choices=RUNNERS, help="the workflow tool to run")
    parser.add_argument("args", nargs=argparse.REMAINDER,
                        help="its arguments, e.g. `repro` for dvc or `--cores 2` for snakemake")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if Path.cwd().resolve() != ROOT:
        log(f"[pipeline] running from the repository root {ROOT}")
        os.chdir(ROOT)
    params = load_params()
    experiment = args.runner == "dvc" and bool(args.args) and args.args[0] in ("exp", "queue")
    if experiment:
        try:
            ensure_mirror_links(params["data"]["mirror"], Path.cwd())
        except (ValueError, FileExistsError) as err:
            log(f"[pipeline] {err}")
            return 2
    client, experiment_id = tracking.open_store()
    root = tracking.repository_root()
    for old_parent, old_spool in leftover_spools(root):    # stage runs a killed launcher never logged
        SpoolDrain(client, experiment_id, old_spool, old_parent).stop()
    command = [args.runner, *args.args]
    tags = {**tracking.run_tags(params), "runner": args.runner, "command": " ".join(command)}
    # Named for what ran, so the collapsed row in the runs table says it (its children: the stages).
    name = f"pipeline: {' '.join(command)} ({params.get('profile', '?')})"
    parent = client.create_run(experiment_id, run_name=name, tags=tags)
    run_id = parent.info.run_id
    log(f"[pipeline] MLflow parent run {run_id} ({tracking.tracking_uri()}); running {' '.join(command)}")

    spool = spool_dir(root, run_id)
    drain = SpoolDrain(client, experiment_id, spool, run_id).start()
    env = {**os.environ, tracking.PARENT_ENV: run_id, SPOOL_ENV: str(spool),
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
           "DVC_NO_ANALYTICS": "1"}
    env.pop("MLFLOW_RUN_ID", None)  # a stage must never resume the parent itself
    start = time.monotonic()
    try:
        returncode = subprocess.run(command, env=env).returncode
    except KeyboardInterrupt:
        drain.stop()
        client.set_terminated(run_id, status="KILLED")
        raise
    except OSError as error:  # runner not installed
        log(f"[pipeline] cannot start {args.runner}: {error}")
        returncode = 127
    drain.stop()
    client.log_metric(run_id, "duration_s", time.monotonic() - start)
    if returncode == 0 and not experiment:
        for name in ("table1.md", "table1.json"):
            if (TABLES / name).is_file():
                client.log_artifact(run_id, str(TABLES / name))
    client.set_terminated(run_id, status="FINISHED" if returncode == 0 else "FAILED")
    log(f"[pipeline] {args.runner} exited with {returncode}; parent run {run_id}")
    return returncode


if __name__ == "__main__":
    sys.exit(main())
