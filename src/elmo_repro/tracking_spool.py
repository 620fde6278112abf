"""MLflow runs of pipeline stages written to a spool and logged by the launcher.

Importing MLflow and opening its store costs a stage process about 5 s (measured: ``import
mlflow`` 2.6 s, the SQLite store 1.7 s, the run's start and params ~1 s), more than many stages'
own work. Under the launcher (``python -m workflow.launch``) a stage therefore writes its run to a
spool instead: one JSON-lines file per stage execution in ``$ELMO_MLFLOW_SPOOL`` (start with name,
tags and params; metrics with their step and time; tags; artifacts, copied at the time they are
logged; end with the status), appended and flushed record by record. The launcher drains the spool
while DVC or Snakemake runs (:class:`SpoolDrain`, every second) into real MLflow runs: each a
child of the pipeline run, with the stage's own start and end times, metrics with their steps and
timestamps, params, tags and artifacts. Nothing MLflow records is lost, and a run shows in the UI
a second after its stage logs it. A stage process that died without its end record is closed as
FAILED at the launcher's last drain; a spool left by a killed launcher is drained by the next one.
"""

from __future__ import annotations

import json
import os
import shutil
import threading
import time
import uuid
from pathlib import Path
from typing import Any

SPOOL_ENV = "ELMO_MLFLOW_SPOOL"
SPOOL_ROOT = ".mlflow-spool"          # under the repository root: <root>/.mlflow-spool/<parent run id>/
_BATCH = 100                          # MLflow's log_batch limit for params and tags per call


def now_ms() -> int:
    return int(time.time() * 1000)


class SpoolRun:
    """The writer side: the handle a stage logs to (the same calls as ``tracking.StageRun``)."""

    def __init__(self, spool: str | Path, name: str, tags: dict[str, str], params: dict[str, Any]):
        self.dir = Path(spool)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.run_id = f"{time.strftime('%Y%m%dT%H%M%S')}-{uuid.uuid4().hex[:12]}"   # the spool record's id
        self.path = self.dir / f"{self.run_id}.jsonl"
        self._write({"type": "start", "name": name, "tags": tags,
                     "params": {k: str(v) for k, v in params.items()}, "time": now_ms()})

    def _write(self, record: dict[str, Any]) -> None:
        # one line per record, flushed: the drainer only reads lines that end in a newline
        with open(self.path, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(record) + "\n")

    def log_metrics(self, metrics: dict[str, float], step: int | None = None) -> None:
        self._write({"type": "metrics", "metrics": {k: float(v) for k, v in metrics.items()},
                     "step": step or 0, "time": now_ms()})

    def set_tags(self, tags: dict[str, str]) -> None:
        self._write({"type": "tags", "tags": {k: str(v) for k, v in tags.items()}})

    def log_artifact(self, path: str | Path) -> None:
        """Copy ``path`` now (the stage may rewrite it later) and record the copy."""
        copies = self.dir / f"{self.run_id}.artifacts" / uuid.uuid4().hex[:8]
        copies.mkdir(parents=True)
        copy = copies / Path(path).name
        shutil.copy2(path, copy)
        self._write({"type": "artifact", "path": str(copy)})

    def end(self, status: str) -> None:
        self._write({"type": "end", "status": status, "time": now_ms()})


class SpoolDrain:
    """The reader side (the launcher's): turns spooled stage runs into MLflow runs.

    Args:
        client: an ``MlflowClient`` on the tracking store.
        experiment_id: the experiment the runs go to.
        spool: the directory the stages write (one ``<id>.jsonl`` per stage run).
        parent_run_id: the pipeline run each stage run becomes a child of.
    """

    def __init__(self, client, experiment_id: str, spool: str | Path, parent_run_id: str):
        self.client, self.experiment_id = client, experiment_id
        self.spool, self.parent = Path(spool), parent_run_id
        self._offsets: dict[Path, int] = {}
        self._runs: dict[Path, str] = {}              # spool file -> MLflow run id
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.logged: list[str] = []                   # MLflow run ids, in the order they ended

    def drain(self, final: bool = False) -> None:
        """Log every complete record not logged yet; with ``final``, also close the runs whose
        stage never wrote its end (a killed or crashed stage process) as FAILED."""
        for path in sorted(self.spool.glob("*.jsonl")):
            self._drain_file(path)
            if final and path.exists():
                run_id = self._runs.get(path)
                if run_id is not None:
                    self.client.set_terminated(run_id, status="FAILED", end_time=now_ms())
                self._forget(path)

    def _drain_file(self, path: Path) -> None:
        with open(path, encoding="utf-8") as handle:
            handle.seek(self._offsets.get(path, 0))
            text = handle.read()
        complete = text[:text.rfind("\n") + 1]        # a line still being written waits for the next drain
        self._offsets[path] = self._offsets.get(path, 0) + len(complete.encode("utf-8"))
        for line in complete.splitlines():
            self._apply(path, json.loads(line))

    def _apply(self, path: Path, record: dict[str, Any]) -> None:
        from mlflow.entities import Metric, Param, RunTag

        kind = record["type"]
        if kind == "start":
            tags = {**record["tags"], "mlflow.parentRunId": self.parent}
            run = self.client.create_run(self.experiment_id, start_time=record["time"], tags=tags,
                                         run_name=record["name"])
            self._runs[path] = run.info.run_id
            params = [Param(k, v) for k, v in record["params"].items()]
            for i in range(0, len(params), _BATCH):
                self.client.log_batch(run.info.run_id, params=params[i:i + _BATCH])
            return
        run_id = self._runs[path]
        if kind == "metrics":
            metrics = [Metric(k, v, record["time"], record["step"]) for k, v in record["metrics"].items()]
            for i in range(0, len(metrics), _BATCH):
                self.client.log_batch(run_id, metrics=metrics[i:i + _BATCH])
        elif kind == "tags":
            tags = [RunTag(k, v) for k, v in record["tags"].items()]
            for i in range(0, len(tags), _BATCH):
                self.client.log_batch(run_id, tags=tags[i:i + _BATCH])
        elif kind == "artifact":
            self.client.log_artifact(run_id, record["path"])
        elif kind == "end":
            self.client.set_terminated(run_id, status=record["status"], end_time=record["time"])
            self.logged.append(run_id)
            self._forget(path)
        else:
            raise ValueError(f"{path}: unknown spool record type {kind!r}")

    def _forget(self, path: Path) -> None:
        path.unlink(missing_ok=True)
        shutil.rmtree(path.with_suffix(".artifacts"), ignore_errors=True)
        self._offsets.pop(path, None)
        self._runs.pop(path, None)

    def _loop(self, interval: float) -> None:
        while not self._stop.wait(interval):
            self.drain()

    def start(self, interval: float = 1.0) -> "SpoolDrain":
        """Drain every ``interval`` seconds in a background thread until :meth:`stop`."""
        self._thread = threading.Thread(target=self._loop, args=(interval,), daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop the thread and drain what is left (closing unfinished runs as FAILED)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self.drain(final=True)
        if self.spool.is_dir() and not any(self.spool.iterdir()):
            self.spool.rmdir()


def spool_dir(root: Path, parent_run_id: str) -> Path:
    """Where the stages of pipeline run ``parent_run_id`` spool their runs."""
    return root / SPOOL_ROOT / parent_run_id


def leftover_spools(root: Path) -> list[tuple[str, Path]]:
    """``(parent run id, spool dir)`` of spools a killed launcher left behind."""
    base = root / SPOOL_ROOT
    return [(d.name, d) for d in sorted(base.iterdir()) if d.is_dir()] if base.is_dir() else []


def active_spool() -> str | None:
    """The spool directory this stage process writes to, or None (log to MLflow directly)."""
    return os.environ.get(SPOOL_ENV) or None
