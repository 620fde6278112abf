"""Stage floor_<task>: the task's trivial baseline, ``python -m stages.floor --task TASK``.

The floor is what a model that ignores context scores (NER: every token's most frequent training
tag); it is computed from the training split alone and scored on dev and test by the task's own
metric, so a learned baseline that does not clearly beat it is broken. Writes
``results/runs/<task>-floor/metrics.json`` (flat, like a run's) and ``predictions.json``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from elmo_repro.console import log
from elmo_repro.io import write_json
from elmo_repro.params import load_params
from elmo_repro.tasks.base import get_task
from elmo_repro.tracking import stage_run
from stages import stage_args

RUNS_DIR = Path("results/runs")


def floor_metrics(task) -> tuple[dict[str, float], dict[str, list]]:
    """The floor's dev_*/test_* metrics and its predictions, fitted on the full training split."""
    train = task.read("train")
    metrics, predictions = {}, {}
    for split in ("dev", "test"):
        examples = task.read(split)
        predictions[split] = task.floor(train, examples)
        metrics.update({f"{split}_{k}": v for k, v in task.score(examples, predictions[split]).items()})
    return metrics, predictions


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--task", required=True)
    known, rest = parser.parse_known_args(argv)
    stage_args(__doc__, rest)
    params = load_params()
    task = get_task(known.task)
    with stage_run(f"floor_{task.name}", params, []) as run:
        run.set_tags({"run_id": f"{task.name}-floor", "task": task.name})
        metrics, predictions = floor_metrics(task)
        out = RUNS_DIR / f"{task.name}-floor"
        write_json(out / "metrics.json", metrics)
        write_json(out / "predictions.json", predictions)
        run.log_metrics(metrics)
        log(f"[floor_{task.name}] dev {task.metric} {metrics[f'dev_{task.metric}']:.2f}, "
            f"test {task.metric} {metrics[f'test_{task.metric}']:.2f}")


if __name__ == "__main__":
    main()
