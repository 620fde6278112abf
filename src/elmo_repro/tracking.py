"""MLflow tracking for pipeline stages.

Every stage execution is one MLflow run in experiment ``elmo-repro`` with its params sections
flattened, its metrics, its small outputs as artifacts, and tags: git commit and dirty flag,
stage, params-section hash, profile, torch version and thread count. Runs nest under a parent
run when ``ELMO_PARENT_RUN_ID`` is set (a launcher creates one per pipeline execution); the
tracking URI comes from ``MLFLOW_TRACKING_URI`` and defaults to ``sqlite:///mlflow.db`` in the
repository root, with artifacts in ``./mlruns`` (both ignored by git; ``mlflow ui`` shows them); a
stage running in DVC's temporary copy for an experiment (``dvc exp run --temp``, ``dvc queue``)
logs to the store of the repository it copies, not to one that vanishes with the copy.
A run is named after its stage, so the runs table tells what ran: ``prepare_lm``,
``train_ner_elmo@ner-elmo-s0`` (task, ELMo spec, seed), ``floor_sst5``; the experiment is tagged as
a model-development experiment so that MLflow 3's UI opens it on its runs.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path
from typing import Any, Iterator

from .console import log

try:
    import fcntl
except ImportError:  # not POSIX: no file lock (and no parallel local jobs to guard against)
    fcntl = None
from .params import lookup, section_hash
from .tracking_spool import SpoolRun, active_spool

EXPERIMENT = "elmo-repro"
PARENT_ENV = "ELMO_PARENT_RUN_ID"
# MLflow 3's UI opens an experiment by its kind: without this tag it guesses (often "GenAI apps",
# whose overview shows traces and token usage); "custom_model_development" opens the runs table.
KIND_TAG, KIND = "mlflow.experimentKind", "custom_model_development"
os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")


# Where DVC runs experiments in copies of the workspace (dvc.repo.experiments, DVC 3): queued ones
# (`dvc queue start`) in <repository>/.dvc/tmp/exps/<tmp dir>, `dvc exp run --temp` in
# <repository>/.dvc/tmp/exps/standalone/<tmp dir>.
EXPERIMENT_COPIES = (Path(".dvc", "tmp", "exps"), Path(".dvc", "tmp", "exps", "standalone"))


def repository_root(cwd: Path | None = None) -> Path:
    """The repository whose store a stage logs to: the working directory, or, when it is one of
    DVC's temporary copies for an experiment (:data:`EXPERIMENT_COPIES`), the repository it
    copies, so that the runs of ``dvc exp run --temp`` and ``dvc queue`` outlive the copy."""
    cwd = (cwd or Path.cwd()).resolve()
    for parent in EXPERIMENT_COPIES:
        depth = len(parent.parts)
        if len(cwd.parents) > depth and cwd.parent == cwd.parents[depth] / parent:
            return cwd.parents[depth]
    return cwd


def tracking_uri() -> str:
    """The MLflow tracking URI: ``$MLFLOW_TRACKING_URI``, else the repository's SQLite store
    (``<root>/mlflow.db``, :func:`repository_root`, also from a DVC experiment's temporary copy)."""
    return os.environ.get("MLFLOW_TRACKING_URI") or f"sqlite:///{repository_root() / 'mlflow.db'}"


def _git(*args: str) -> str:
    try:
        return subprocess.run(["git", *args], capture_output=True, text=True, encoding="utf-8",
                              errors="replace", check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return ""


def flatten(tree: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """``{"a": {"b": 1}}`` -> ``{"a.b": 1}``; lists become their string form."""
    flat: dict[str, Any] = {}
    for key, value in tree.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            flat.update(flatten(value, name + "."))
        else:
            flat[name] = value
    return flat


def _is_local(uri: str) -> bool:
    return uri.startswith(("sqlite:", "file:")) or "://" not in uri


@contextlib.contextmanager
def _flock(path: Path) -> Iterator[None]:
    with open(path, "a", encoding="utf-8") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)  # released when the file closes
        yield


def _ensure_experiment(mlflow) -> str:
    """The experiment id, creating the store and the experiment if needed. The first access to a
    local SQLite store is serialised across processes (a file lock beside it): creating its schema
    is not safe when two stage processes (parallel Snakemake jobs) do it at once. The launcher
    creates the store before any job; the lock covers runs without it."""
    uri = tracking_uri()
    local_sqlite = uri.startswith("sqlite:///") and fcntl is not None
    with _flock(Path(uri[len("sqlite:///"):]).with_suffix(".lock")) if local_sqlite else contextlib.nullcontext():
        return _get_or_create_experiment(mlflow)


def _get_or_create_experiment(mlflow) -> str:
    experiment = mlflow.get_experiment_by_name(EXPERIMENT)
    if experiment is not None:
        if experiment.tags.get(KIND_TAG) != KIND:      # a store made before the tag existed
            mlflow.MlflowClient(tracking_uri()).set_experiment_tag(experiment.experiment_id, KIND_TAG, KIND)
        return experiment.experiment_id
    # a local store keeps artifacts in ./mlruns; a server decides for itself (it may proxy them)
    artifacts = (repository_root() / "mlruns").as_uri() if _is_local(tracking_uri()) else None
    try:
        return mlflow.create_experiment(EXPERIMENT, artifact_location=artifacts, tags={KIND_TAG: KIND})
    except Exception:  # created concurrently by another stage process
        return mlflow.get_experiment_by_name(EXPERIMENT).experiment_id


def open_store():
    """Create the tracking store (SQLite schema or server connection) and the experiment.

    Returns ``(MlflowClient, experiment_id)``. The launcher calls this once before any stage runs,
    so parallel stage processes never race to create the SQLite schema.
    """
    import mlflow
    from mlflow.tracking import MlflowClient

    mlflow.set_tracking_uri(tracking_uri())
    experiment_id = _ensure_experiment(mlflow)  # first: a client would touch the store unlocked
    return MlflowClient(tracking_uri()), experiment_id


def _threads() -> str:
    """torch's intra-op threads when the stage uses torch (pinned by ``stages.stage_args``), else
    the pinned count it would get (``OMP_NUM_THREADS``): a tag must not import torch (2.6 s)."""
    torch = sys.modules.get("torch")
    return str(torch.get_num_threads()) if torch is not None else os.environ.get("OMP_NUM_THREADS", "")


def run_tags(params: dict[str, Any], sections: list[str] | None = None) -> dict[str, str]:
    """Tags every run carries: profile, git commit and dirty flag, params hash, torch, SLURM job."""
    tags = {
        "profile": str(params.get("profile", "")),
        "git_commit": _git("rev-parse", "HEAD"),
        "git_dirty": str(bool(_git("status", "--porcelain", "--untracked-files=no"))).lower(),
        "torch_version": metadata.version("torch"),
        "threads": _threads(),
    }
    if sections is not None:
        tags["params_hash"] = section_hash(params, sections)
    if os.environ.get("SLURM_JOB_ID"):
        tags["slurm_job_id"] = os.environ["SLURM_JOB_ID"]
    return tags


class StageRun:
    """Handle on the active stage run: metrics, tags and artifacts."""

    def __init__(self, mlflow, run):
        self._mlflow, self.run = mlflow, run
        self.run_id: str = run.info.run_id

    def log_metrics(self, metrics: dict[str, float], step: int | None = None) -> None:
        self._mlflow.log_metrics({k: float(v) for k, v in metrics.items()}, step=step)

    def set_tags(self, tags: dict[str, str]) -> None:
        self._mlflow.set_tags(tags)

    def log_artifact(self, path: str | Path) -> None:
        self._mlflow.log_artifact(str(path))


def peak_rss_mib() -> float:
    """The peak resident memory (MiB) of this process or of any child it waited for, so far
    (``getrusage``'s ``ru_maxrss``: KiB on Linux)."""
    import resource

    return max(resource.getrusage(who).ru_maxrss for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)) / 1024


@contextlib.contextmanager
def stage_run(stage: str, params: dict[str, Any], sections: list[str]) -> Iterator[StageRun | SpoolRun]:
    """Open the MLflow run of one stage execution and log its duration (``duration_s``) and the
    stage process's peak resident memory (``peak_rss_mib``) on exit.

    Under the launcher (``$ELMO_MLFLOW_SPOOL`` set) the run is written to the spool and the
    launcher logs it to MLflow (:mod:`elmo_repro.tracking_spool`); otherwise it is logged directly.
    A stage that raises ends its run FAILED.

    Args:
        stage: stage name as in the registry (``workflow/registry.py``).
        params: the whole ``params.yaml`` dict.
        sections: the params sections this stage declares; they are logged flattened.
    """
    tags = {"stage": stage, **run_tags(params, sections)}
    logged = flatten({name: lookup(params, name) for name in sections})
    start = time.monotonic()
    log(f"[{stage}] start (profile {tags['profile']}, {tags['threads'] or '?'} threads)")
    spool = active_spool()
    if spool is not None:
        handle = SpoolRun(spool, stage, tags, logged)
        try:
            yield handle
        except BaseException:
            handle.end("FAILED")
            raise
        duration = time.monotonic() - start
        handle.log_metrics({"duration_s": duration, "peak_rss_mib": peak_rss_mib()})
        handle.end("FINISHED")
        log(f"[{stage}] done in {duration:.1f} s (MLflow run spooled as {handle.run_id})")
        return
    import mlflow

    mlflow.set_tracking_uri(tracking_uri())
    experiment_id = _ensure_experiment(mlflow)
    parent = os.environ.get(PARENT_ENV)
    if parent:
        tags["mlflow.parentRunId"] = parent
    with mlflow.start_run(experiment_id=experiment_id, run_name=stage, tags=tags) as run:
        mlflow.log_params(logged)
        handle = StageRun(mlflow, run)
        yield handle
        duration = time.monotonic() - start
        mlflow.log_metrics({"duration_s": duration, "peak_rss_mib": peak_rss_mib()})
    log(f"[{stage}] done in {duration:.1f} s (MLflow run {handle.run_id})")
