"""Stage tables: the paper's Table 1 with our numbers, the fine-tuning table, Tables 4, 5 and 6
(what the layers encode, §5.3) and the CoVe translation score: views over the runs and the probes.

Reads results/runs/*/{spec,metrics}.json (every run and each task's floor),
results/metrics/perplexity.json, results/metrics/finetune/<task>.json and the paper's numbers
(paper/table1.csv, paper/perplexity.txt); writes results/tables/table1.{md,csv,json} and
results/tables/finetuning.{md,json}. Our run ids in the JSON find each number's MLflow run
(tag ``run_id``). From results/probes/ (stages probe_wsd, wsd_first_sense, probe_pos,
pos_most_frequent_tag, neighbours), results/cove/bleu.json, results/metrics/multi30k_data.json and
paper/table{5,6}.csv: results/tables/table{4,5,6}.md, table{5,6}.json and cove.md.
"""

import pandas as pd

from elmo_repro.finetuning_table import finetuning_rows, load_finetune_metrics, render_finetuning_markdown
from elmo_repro.io import atomic_open, read_json, read_text, write_json
from elmo_repro.params import load_params
from elmo_repro.probe_tables import (load_pos_rows, load_wsd_rows, render_cove, render_table4, render_table5,
                                     render_table6, table5, table6)
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
        profile = params["profile"]
        wsd = table5(load_wsd_rows("results/probes/wsd"), "paper/table5.csv")
        pos = table6(load_pos_rows("results/probes/pos"), "paper/table6.csv")
        views = {"table5.md": render_table5(wsd, profile), "table6.md": render_table6(pos, profile),
                 "table4.md": render_table4(read_json("results/probes/neighbours.json"), profile),
                 "cove.md": render_cove(read_json("results/cove/bleu.json"),
                                        read_json("results/metrics/multi30k_data.json"), profile)}
        for name, text in views.items():
            with atomic_open(f"results/tables/{name}") as handle:
                handle.write(text)
        write_json("results/tables/table5.json", {"profile": profile, **wsd})
        write_json("results/tables/table6.json", {"profile": profile, **pos})
        names += [*views, "table5.json", "table6.json"]
        for name in names:
            run.log_artifact(f"results/tables/{name}")


if __name__ == "__main__":
    main()
