"""Stage family of the tables: ``python -m stages.table --table NAME`` builds one view
(``elmo_repro.views.<NAME>``: Table 1 in the main job; Table 1 with its controls, the fine-tuning
table, Tables 4, 5, 6, CoVe's BLEU, Tables 2 and 3 and Figures 1 and 2 in the analysis job) and writes its files under
``results/tables/`` atomically, each logged to the stage's MLflow run. Run ids in the JSON find
each number's MLflow run (tag ``run_id``).
"""

from __future__ import annotations

import importlib
from pathlib import Path

from elmo_repro.io import atomic_open, write_json
from elmo_repro.params import load_params
from elmo_repro.tracking import stage_run
from stages import stage_args, stage_parser

TABLES = Path("results/tables")
VIEWS = ("table1", "table1_controls", "finetuning", "table2", "table3", "table7", "table4", "table5", "table6", "cove_table",
         "figure1", "figure2")


def main(argv: list[str] | None = None) -> None:
    parser = stage_parser(__doc__)
    parser.add_argument("--table", required=True, choices=VIEWS)
    known = stage_args(parser, argv)
    params = load_params()
    # imported by name: each table stage depends on its own view only (workflow/registry.py)
    view = importlib.import_module(f"elmo_repro.views.{known.table}")
    sections = ["profile"]
    if known.table in params["tables"]:        # a view of a table that requests runs has a spec
        sections.append(f"tables.{known.table}")
    with stage_run(known.table, params, sections) as run:
        for name, content in view.build(params).items():
            if isinstance(content, (str, bytes)):
                with atomic_open(TABLES / name, "wb" if isinstance(content, bytes) else "w") as handle:
                    handle.write(content)
            else:
                write_json(TABLES / name, content)
            run.log_artifact(str(TABLES / name))


if __name__ == "__main__":
    main()
