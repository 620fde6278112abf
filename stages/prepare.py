"""Stage prepare_<task>: a task's examples from the data mirror, ``python -m stages.prepare --task TASK``.

Calls the task's ``prepare(cfg, mirror, out_dir) -> stats`` (``elmo_repro.tasks.<task>.prepare``),
with ``cfg`` its ``tasks.<task>.data`` params section (empty where it has none) and ``out_dir`` its
declared ``data_dir``; writes the counts to the declared metrics file (where there is one, kept in
git) and logs them as MLflow metrics.
"""

from __future__ import annotations

import importlib
from pathlib import Path

from elmo_repro.console import log
from elmo_repro.experiments.tasks import declaration
from elmo_repro.io import write_json
from elmo_repro.params import load_params
from elmo_repro.tracking import stage_run
from stages import stage_args, stage_parser


def main(argv: list[str] | None = None) -> None:
    parser = stage_parser(__doc__)
    parser.add_argument("--task", required=True)
    known = stage_args(parser, argv)
    params = load_params()
    info = declaration(known.task)
    module = importlib.import_module(f"elmo_repro.tasks.{info.name}.prepare")
    with stage_run(info.prepare.stage, params, list(info.prepare.params)) as run:
        stats = module.prepare(params["tasks"][info.name].get("data", {}), Path(params["data"]["mirror"]),
                               Path(info.data_dir))
        for path in info.prepare.metrics:
            write_json(Path(path), stats)
        run.log_metrics({key: value for key, value in stats.items() if isinstance(value, (int, float))})
        log(f"[{info.prepare.stage}] {module.summary(stats)}")


if __name__ == "__main__":
    main()
