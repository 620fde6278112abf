"""Stage ``report`` (analysis job): the report page ``results/report/index.html`` from the tables
under ``results/tables`` (:mod:`elmo_repro.views.report`), written atomically and logged to the
stage's MLflow run."""

from __future__ import annotations

from pathlib import Path

from elmo_repro.io import atomic_open
from elmo_repro.params import load_params
from elmo_repro.tracking import stage_run
from elmo_repro.views import report
from stages import stage_args

PAGE = Path("results/report/index.html")
SECTIONS = ["profile", "bilm_source"]                  # the params it reads (the registry's, checked by a test)


def main(argv: list[str] | None = None) -> None:
    stage_args(__doc__, argv)
    params = load_params()
    with stage_run("report", params, SECTIONS) as run:
        page = report.build(params)
        with atomic_open(PAGE, "w") as handle:
            handle.write(page)
        run.log_artifact(str(PAGE))


if __name__ == "__main__":
    main()
