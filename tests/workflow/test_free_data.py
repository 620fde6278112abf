"""The jobs on the freely downloadable data alone (`workflow.profile NAME --free-data`): what is
left out is derived from the fetcher's manual (licensed) files, no stage reads it, and nothing is
left out silently."""

from pathlib import Path

import pytest
import yaml

from elmo_repro.data.eval_text import SPLIT_FILES, SPLITS
from elmo_repro.io import InputError
from elmo_repro.schema import validate_params
from elmo_repro.views.table1 import render_markdown
from stages.check_params import mirror_problem, missing_inputs
from workflow import profile
from workflow.free_data import leave_out, licensed_left_out
from elmo_repro.experiments.specs import JOB_FILES
from workflow.snakemake_dag import expand
from workflow.render import render_dvc

LICENSED_FOLDERS = ("srl_conll2005/train/words", "srl_conll2005/devel/words")


@pytest.fixture(scope="module")
def free():
    return profile.with_runs(leave_out(profile.render("tiny"), licensed_left_out()))


def test_every_split_names_its_mirror_path():
    assert list(SPLIT_FILES) == list(SPLITS)


def test_the_licensed_words_leave_out_srl_and_the_section_24_split():
    left = licensed_left_out()
    assert list(left) == ["srl", "conll2005_dev"]
    assert "srl_conll2005/train/words" in left["srl"] and "LDC" in left["srl"]
    assert "srl_conll2005/devel/words" in left["conll2005_dev"]


def test_the_free_profile_lists_no_left_out_task_or_split_and_validates(free):
    validate_params(free)
    assert free["data"]["left_out"].keys() == {"srl", "conll2005_dev"}
    assert "conll2005_dev" not in free["contamination"]["splits"]
    assert "conll2005_test_wsj" in free["contamination"]["splits"]        # fetched freely: still checked
    for name, spec in free["tables"].items():
        assert "srl" not in (spec.get("runs") or {}).get("tasks", []), name
    assert not any(rid.startswith("srl-") for job in free["runs"].values() for fam in job.values() for rid in fam)
    assert "srl" not in free["finetune_tasks"]["main"]
    assert free["tables"]["table1"]["runs"]["tasks"] == ["ner", "sst5", "snli", "squad", "coref"]


def test_no_stage_reads_left_out_data_in_dvc_or_snakemake(free):
    for job in JOB_FILES:
        text = render_dvc(job, free)
        assert "prepare_srl" not in text and "floor_srl" not in text and "train_srl" not in text
        assert "data/srl" not in text
        for folder in LICENSED_FOLDERS:
            assert folder not in text, (job, folder)
    names = [stage.name for stage in expand(free)]
    assert not [name for name in names if "srl" in name]
    contamination = next(stage for stage in expand(free) if stage.name == "check_contamination")
    assert "${data.mirror}/srl_conll2005/test.wsj/words" in contamination.deps
    # the full profile still reads them all
    full = render_dvc("main", profile.render("tiny"))
    assert all(folder in full for folder in LICENSED_FOLDERS) and "prepare_srl" in full


def test_a_left_out_task_listed_by_a_table_is_refused_with_its_key_path(free):
    broken = {**free, "tables": {**free["tables"], "table1": {
        **free["tables"]["table1"], "runs": {**free["tables"]["table1"]["runs"], "tasks": ["ner", "srl"]}}}}
    with pytest.raises(InputError, match=r"tables\.table1\.runs\.tasks\[1\].*'srl' is left out"):
        validate_params(profile.with_runs(broken))
    broken = {**free, "contamination": {**free["contamination"],
                                        "splits": [*free["contamination"]["splits"], "conll2005_dev"]}}
    with pytest.raises(InputError, match=r"contamination\.splits\[\d+\].*'conll2005_dev' is left out"):
        validate_params(broken)
    with pytest.raises(InputError, match="left_out: nosuch is neither a task"):
        validate_params({**free, "data": {**free["data"], "left_out": {"nosuch": "why"}}})
    with pytest.raises(ValueError, match="cannot leave out nosuch"):
        leave_out(free, {"nosuch": "why"})


def _mirror_without_licensed_words(root: Path) -> Path:
    """A mirror holding only CoNLL-2005's folders, with the words folders empty (as a fetch leaves them)."""
    mirror = root / "mirror"
    for folder in ("train", "devel", "test.wsj", "test.brown"):
        for part in ("words", "props"):
            (mirror / "srl_conll2005" / folder / part).mkdir(parents=True)
    return mirror


def test_the_params_check_names_the_absent_licensed_files_and_the_option(tmp_path, free):
    mirror = _mirror_without_licensed_words(tmp_path)
    full = {**profile.render("tiny"), "data": {"mirror": str(mirror)}}
    for job, name in JOB_FILES.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(render_dvc(job, full), encoding="utf-8")
    lines = [line for line in missing_inputs(full, tmp_path) if "srl_conll2005" in line]
    assert any("prepare_srl reads ${data.mirror}/srl_conll2005/train/words" in line
               and "lacks 20 of its files (train.02.words.gz ... train.21.words.gz)" in line for line in lines)
    assert any("srl_conll2005/devel/words" in line and "devel.24.words.gz" in line for line in lines)
    assert all("LDC" in line and "workflow.profile tiny --free-data" in line for line in lines)

    free = {**free, "data": {**free["data"], "mirror": str(mirror)}}
    for job, name in JOB_FILES.items():
        (tmp_path / name).write_text(render_dvc(job, free), encoding="utf-8")
    assert not [line for line in missing_inputs(free, tmp_path) if "srl_conll2005" in line]


def test_table1_says_what_was_left_out(free):
    spec = free["tables"]["table1"]
    perplexity = {"heldout_tokens": 10, "perplexity": 1.0, "forward_perplexity": 1.0, "backward_perplexity": 1.0,
                  "unigram_perplexity": 2.0, "vocab_size": 5, "oov_rate": 0.0}
    text = render_markdown([], perplexity, "39.7", "tiny", spec, controls=False, left_out=free["data"]["left_out"])
    assert "Left out of this profile (task `srl`, `data.left_out`; `workflow.profile --free-data`): needs" in text
    assert "contamination split `conll2005_dev`" in text


def test_the_profile_command_writes_the_free_profile(tmp_path, capsys):
    out = tmp_path / "params.yaml"
    assert profile.main(["tiny", "--free-data", "--mirror", "/data/mirror", "--output", str(out), "--allow-missing"]) == 0
    written = yaml.safe_load(out.read_text(encoding="utf-8"))
    assert written["data"]["mirror"] == "/data/mirror" and "srl" in written["data"]["left_out"]
    assert "left out: srl: needs srl_conll2005/devel/words, srl_conll2005/train/words" in capsys.readouterr().err


def test_a_missing_mirror_is_one_line_saying_how_to_get_one(tmp_path):
    params = profile.render("tiny")
    params["data"]["mirror"] = str(tmp_path / "nothing")
    [line] = mirror_problem(params)
    assert line.startswith(f"data.mirror: the data mirror {tmp_path / 'nothing'} does not exist: fetch one with")
    params["data"]["mirror"] = str(tmp_path)
    assert mirror_problem(params) == []
