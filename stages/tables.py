"""Stage tables: the paper's Table 1 with our numbers, a view over the runs.

Reads results/runs/*/{spec,metrics}.json (every run and each task's floor),
results/metrics/perplexity.json and the paper's numbers (paper/table1.csv, paper/perplexity.txt);
writes results/tables/table1.{md,csv,json}. Our run ids in the JSON find each number's MLflow run
(tag ``run_id``).
"""

import pandas as pd

from elmo_repro.io import atomic_open, read_json, read_text, write_json
from elmo_repro.params import load_params
from elmo_repro.tables import flat_rows, load_runs, read_paper_table, render_markdown, table1_rows
from elmo_repro.tracking import stage_run
from stages import stage_args

SECTIONS = ["tables"]


def main(argv: list[str] | None = None) -> None:
    stage_args(__doc__, argv)
    params = load_params()
    spec = params["tables"]["table1"]
    with stage_run("tables", params, SECTIONS) as run:
        runs, floors = load_runs("results/runs")
        rows = table1_rows(read_paper_table("paper/table1.csv"), runs, floors, spec)
        perplexity = read_json("results/metrics/perplexity.json")
        paper_perplexity = read_text("paper/perplexity.txt").strip()
        with atomic_open("results/tables/table1.md") as handle:
            handle.write(render_markdown(rows, perplexity, paper_perplexity, params["profile"], spec))
        with atomic_open("results/tables/table1.csv") as handle:
            pd.DataFrame(flat_rows(rows)).to_csv(handle, index=False, float_format="%.4f")
        write_json("results/tables/table1.json", {"profile": params["profile"], "rows": rows,
                                                  "perplexity": perplexity})
        for name in ("table1.md", "table1.csv", "table1.json"):
            run.log_artifact(f"results/tables/{name}")


if __name__ == "__main__":
    main()
