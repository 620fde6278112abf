"""Stage family train_<task>[_elmo]: one run of the matrix, ``python -m stages.train_run --run ID``.

The run (task, ELMo spec, seed, training fraction) is ``runs.<job>.<family>.<ID>`` in params.yaml,
rendered from the table specs by ``python -m workflow.profile``. Reads the task's prepared data,
the static word vectors ``tasks.<task>.vectors`` and, with ELMo, the task's cached biLM layers (read
lazily); trains through the one trainer (``elmo_repro.training.trainer``) and writes
``results/runs/<ID>/`` (a main-job run) or ``results/analysis/runs/<ID>/`` (an analysis-job run):

* ``metrics.json``   dev and test values of the task's metrics (best dev epoch), flat
* ``history.csv``    per epoch: training loss and dev metric (a DVC plot)
* ``scalar_mix.json`` softmax-normalised s and γ of every ScalarMix ({} without ELMo)
* ``spec.json``      the run spec (what the tables group by)
* ``predictions.json`` dev and test predictions (labels only, never text)
* ``units.csv``      dev and test statistics per evaluation unit (``elmo_repro.tasks.units``), git-tracked:
                     what every significance test reads, so a clone re-derives each p-value
* ``model.pt``       the selected weights

``--device`` and ``--precision`` (from the profile's ``compute`` section; ``elmo_repro.device``) say
where it trains. The MLflow run (tag ``run_id`` = ID) holds the per-epoch metrics and the timings; nothing random
(an MLflow id, a duration) is written to the DVC-tracked outputs.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

from elmo_repro.console import log
from elmo_repro.device import add_device_options, device_args
from elmo_repro.elmo.layer_source import cached_example_layers
from elmo_repro.experiments.specs import RUNS_DIRS, RunSpec, find_run as find_in_runs
from elmo_repro.io import InputError, atomic_open, atomic_path, write_json
from elmo_repro.params import load_params
from elmo_repro.tasks.base import SPLITS, get_task
from elmo_repro.tasks.units import write_run_units
from elmo_repro.tracking import stage_run
from elmo_repro.training.trainer import train_run
from elmo_repro.vectors import load_text_vectors
from stages import stage_args, stage_parser

def find_run(params: dict, run_id: str) -> tuple[str, str, RunSpec]:
    """The job, family and spec of ``run_id`` in ``params["runs"]``.

    Raises:
        InputError: no such run (the known ids are not listed: there may be hundreds).
    """
    found = find_in_runs(params["runs"], run_id)
    if found is None:
        raise InputError("params.yaml", f"runs: no run {run_id!r} (re-render with `python -m workflow.profile`)")
    return found


def write_run(out: Path, spec: RunSpec, result, data: dict[str, list[dict]]) -> None:
    """Write a run's outputs atomically, each file on its own (see the module doc); ``data``: the
    examples of each split, for the unit statistics of its dev and test predictions."""
    import torch

    write_json(out / "spec.json", spec.model_dump(mode="json"))
    write_json(out / "metrics.json", result.metrics)
    write_json(out / "scalar_mix.json", result.mixes)
    write_json(out / "predictions.json", result.predictions)
    write_run_units(out, spec.task, data, result.predictions)
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=list(result.history[0]), lineterminator="\n")
    writer.writeheader()
    writer.writerows({k: (f"{v:.6f}" if isinstance(v, float) else v) for k, v in row.items()}
                     for row in result.history)
    with atomic_open(out / "history.csv") as handle:
        handle.write(buffer.getvalue())
    # Through a handle: given a path, torch names the zip records after the temporary file, and
    # equal weights would hash differently on every run (as bilm.checkpoint.save_reproducibly).
    with atomic_path(out / "model.pt") as tmp, open(tmp, "wb") as handle:
        torch.save(result.state_dict, handle)


def main(argv: list[str] | None = None) -> None:
    parser = stage_parser(__doc__)
    parser.add_argument("--run", required=True, help="run id, a key of runs.<family> in params.yaml")
    known = stage_args(add_device_options(parser), argv)
    device, precision = device_args(known, parser)
    params = load_params()
    job, family, spec = find_run(params, known.run)
    task = get_task(spec.task)
    sections = [f"runs.{job}.{family}.{spec.id}", f"tasks.{spec.task}"]
    with stage_run(f"{family}@{spec.id}", params, sections) as run:
        run.set_tags({"run_id": spec.id, "task": spec.task, "elmo": spec.elmo_name, "seed": str(spec.seed),
                      "train_fraction": str(spec.train_fraction)})
        data = {split: task.read(split) for split in SPLITS}
        layers = None
        if spec.elmo is not None:
            # the layers of the run's biLM: the pretrained one or the task's fine-tuned one
            layers = {split: cached_example_layers(Path(spec.features_path), split, data[split], task.fields)
                      for split in SPLITS}
        result = train_run(task, spec, params["tasks"][spec.task], data, load_text_vectors(params["tasks"][spec.task]["vectors"]), layers,
                           log_metrics=lambda m, step: run.log_metrics(m, step=step), device=device,
                           precision=precision)
        write_run(Path(RUNS_DIRS[job]) / spec.id, spec, result, data)
        run.log_metrics({**{k: v for k, v in result.metrics.items()},
                         "train_seconds": sum(result.seconds)})
        metric = task.metric
        log(f"[{spec.id}] dev {metric} {result.metrics[f'dev_{metric}']:.2f}, test {metric} "
            f"{result.metrics[f'test_{metric}']:.2f} (best epoch {result.metrics['best_epoch']}/"
            f"{result.metrics['epochs']}, {sum(result.seconds):.0f} s)")


if __name__ == "__main__":
    main()
