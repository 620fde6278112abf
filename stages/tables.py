"""Stage tables: the paper's Table 1 with our numbers, and the fine-tuning table, views over the runs.

Reads results/runs/*/{spec,metrics}.json (every run and each task's floor),
results/metrics/perplexity.json, results/metrics/finetune/<task>.json and the paper's numbers
(paper/table1.csv, paper/perplexity.txt); writes results/tables/table1.{md,csv,json} and
results/tables/finetuning.{md,json}. Our run ids in the JSON find each number's MLflow run
(tag ``run_id``).
"""

import pandas as pd

from elmo_repro.finetuning_table import finetuning_rows, load_finetune_metrics, render_finetuning_markdown
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
        names = ["table1.md", "table1.csv", "table1.json"]
        finetuning = params["tables"].get("finetuning")
        if finetuning is not None:
            ft_rows = finetuning_rows(load_finetune_metrics("results/metrics/finetune"), runs, finetuning)
            with atomic_open("results/tables/finetuning.md") as handle:
                handle.write(render_finetuning_markdown(ft_rows, params["profile"], finetuning))
            write_json("results/tables/finetuning.json", {"profile": params["profile"], "rows": ft_rows})
            names += ["finetuning.md", "finetuning.json"]
        for name in names:
            run.log_artifact(f"results/tables/{name}")


if __name__ == "__main__":
    main()
