"""Table 1 from released ELMo weights, with no pretraining stage, in DVC and Snakemake alike: the
smoke profile with `--released` on the released-format fixture of the data mirror
(elmo_test_fixtures: bilm-tf's options.json and a dump_weights HDF5 file)."""

import json
import re
import sys

import yaml

from tests.e2e.pipeline import MIRROR, ROOT, run, smoke_copy

TRAINING = ("vocab", "pretrain_bilm", "perplexity", "finetune")


def test_released_weights_rebuild_table1_without_pretraining(tmp_path):
    repo = smoke_copy(tmp_path)
    fixture = MIRROR / "elmo_test_fixtures" / "lm_weights.hdf5"
    run([sys.executable, "-m", "workflow.profile", "smoke", "--released", str(fixture), "--mirror", str(MIRROR)], repo)
    params = yaml.safe_load((repo / "params.yaml").read_text(encoding="utf-8"))
    params["probes"]["wordnet"] = str(ROOT / params["probes"]["wordnet"])     # as smoke_copy does
    (repo / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False), encoding="utf-8")

    jobs = run(["snakemake", "-n", "--forceall", "all"], repo)
    snake = set(re.findall(r"^rule ([\w@-]+):", jobs, re.M)) - {"all"}

    run(["dvc", "repro"], repo)
    stages = set(yaml.safe_load((repo / "dvc.lock").read_text(encoding="utf-8"))["stages"])
    assert not {name for name in stages if name.split("@")[0] in TRAINING}, stages
    assert not (repo / "models" / "bilm").exists()
    assert {name for name in stages if name.startswith("features@")}
    assert snake == stages                                 # the same jobs as DVC's, none of them pretraining

    table = json.loads((repo / "results/tables/table1.json").read_text(encoding="utf-8"))
    assert table["released_bilm"] == str(fixture) and table["perplexity"] is None
    for row in table["rows"]:
        if row["baseline"] is not None:                    # every task of the smoke profile ran
            assert row["elmo"] is not None and row["elmo"]["mean"] >= 0, row["task"]
    assert sum(row["elmo"] is not None for row in table["rows"]) == len(params["tables"]["table1"]["runs"]["tasks"])
    text = (repo / "results/tables/table1.md").read_text(encoding="utf-8")
    assert f"The released biLM at `{fixture}`" in text
    # the runs read the released biLM's layers: its 2 LSTM layers + the char layer
    spec = json.loads((repo / "results/runs/ner-elmo-s0/spec.json").read_text(encoding="utf-8"))
    assert spec["elmo"]["bilm"] == "base"
    mix = json.loads((repo / "results/runs/ner-elmo-s0/scalar_mix.json").read_text(encoding="utf-8"))
    assert len(mix["input"]["s"]) == 3
