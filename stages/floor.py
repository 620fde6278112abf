"""Stage floor_<task>: the task's trivial baseline, ``python -m stages.floor --task TASK``.

The floor is what a model that ignores context scores (NER: every token's most frequent training
tag); it is computed from the training split alone and scored on dev and test by the task's own
metric, so a learned baseline that does not clearly beat it is broken. It also records the
training loss of the best input-free predictor (``prior_train_loss``, classification tasks: ``elmo_repro.tasks.prior``). Writes
``results/runs/<task>-floor/metrics.json`` (flat, like a run's), ``predictions.json`` and
``units.csv`` (its dev and test unit statistics, as a run's: the tables test runs against it).
"""

from __future__ import annotations

from pathlib import Path

from elmo_repro.console import log
from elmo_repro.io import write_json
from elmo_repro.params import load_params
from elmo_repro.tasks.base import get_task
from elmo_repro.tasks.classification import ClassificationTask
from elmo_repro.tasks.prior import prior_loss
from elmo_repro.tasks.units import write_run_units
from elmo_repro.tracking import stage_run
from stages import stage_args, stage_parser

RUNS_DIR = Path("results/runs")


def floor_metrics(task, data_dir: Path | None = None) -> tuple[dict[str, float], dict[str, list], dict[str, list]]:
    """The floor's dev_*/test_* metrics, its predictions and the examples they are of (dev and
    test), fitted on the full training split,
    and, for a classification task, ``prior_train_loss`` (:mod:`elmo_repro.tasks.prior`: what the
    tables compare each run's training loss with). ``data_dir``: the task's prepared splits
    (default: the pipeline's)."""
    train = task.read("train", data_dir)
    # a classifier's loss of knowing nothing (elmo_repro.tasks.prior); NER's CRF has no such prior
    prior = prior_loss(e["label"] for e in train) if isinstance(task, ClassificationTask) else None
    metrics, predictions = ({} if prior is None else {"prior_train_loss": prior}), {}
    examples = {split: task.read(split, data_dir) for split in ("dev", "test")}
    for split, split_examples in examples.items():
        predictions[split] = task.floor(train, split_examples)
        metrics.update({f"{split}_{k}": v for k, v in task.score(split_examples, predictions[split]).items()})
    return metrics, predictions, examples


def main(argv: list[str] | None = None) -> None:
    parser = stage_parser(__doc__)
    parser.add_argument("--task", required=True)
    known = stage_args(parser, argv)
    params = load_params()
    task = get_task(known.task)
    with stage_run(f"floor_{task.name}", params, []) as run:
        run.set_tags({"run_id": f"{task.name}-floor", "task": task.name})
        metrics, predictions, examples = floor_metrics(task)
        out = RUNS_DIR / f"{task.name}-floor"
        write_json(out / "metrics.json", metrics)
        write_json(out / "predictions.json", predictions)
        write_run_units(out, task.name, examples, predictions)
        run.log_metrics(metrics)
        log(f"[floor_{task.name}] dev {task.metric} {metrics[f'dev_{task.metric}']:.2f}, "
            f"test {task.metric} {metrics[f'test_{task.metric}']:.2f}")


if __name__ == "__main__":
    main()
