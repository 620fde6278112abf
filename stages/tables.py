"""Stage tables: the paper's Table 1 with our numbers.

Reads results/metrics/{ner,perplexity}.json; writes results/tables/table1.{md,csv,json}; the JSON
carries the MLflow run ids behind every number.
"""

import pandas as pd

from elmo_repro.io import atomic_open, read_json, write_json
from elmo_repro.params import load_params
from elmo_repro.tables import render_markdown, table1_rows
from elmo_repro.tracking import stage_run
from stages import stage_args

SECTIONS = ["tables"]


def main(argv: list[str] | None = None) -> None:
    stage_args(__doc__, argv)
    params = load_params()
    with stage_run("tables", params, SECTIONS) as run:
        rows = table1_rows([read_json("results/metrics/ner.json")])
        perplexity = read_json("results/metrics/perplexity.json")
        with atomic_open("results/tables/table1.md") as handle:
            handle.write(render_markdown(rows, perplexity, params["profile"]))
        flat = [{k: v for k, v in row.items() if k != "mlflow_run_ids"} for row in rows]
        with atomic_open("results/tables/table1.csv") as handle:
            pd.DataFrame(flat).to_csv(handle, index=False, float_format="%.4f")
        write_json("results/tables/table1.json", {"profile": params["profile"], "rows": rows,
                                                  "perplexity": perplexity})
        for name in ("table1.md", "table1.csv", "table1.json"):
            run.log_artifact(f"results/tables/{name}")


if __name__ == "__main__":
    main()
