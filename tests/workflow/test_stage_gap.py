"""benchmarks.stage_gap: a job built in several pipeline runs is one record (times summed)."""

import pytest

from benchmarks.stage_gap import merge


def _record(parent, command, rows, wall, commit="abc"):
    in_stages = sum(r["seconds"] for r in rows)
    return {"pipeline": f"pipeline: {command}", "parent_run_id": parent, "command": command, "git_commit": commit,
            "git_dirty": "false", "profile": "tiny", "started_utc": "2026-12-07 01:00", "stages": len(rows),
            "wall_s": wall, "in_stages_s": in_stages, "outside_stages_s": wall - in_stages, "rows": rows}


def test_merge_sums_the_runs_of_one_job():
    a = _record("p1", "dvc repro analysis/dvc.yaml:table7", [{"stage": "x", "seconds": 10.0, "gap_before": 2.0}], 14.0)
    b = _record("p2", "dvc repro analysis/dvc.yaml:table3", [{"stage": "y", "seconds": 20.0, "gap_before": 3.0},
                                                              {"stage": "z", "seconds": 5.0, "gap_before": 1.0}], 30.0)
    merged = merge([a, b])
    assert merged["wall_s"] == 44.0 and merged["in_stages_s"] == 35.0 and merged["outside_stages_s"] == 9.0
    assert [r["stage"] for r in merged["rows"]] == ["x", "y", "z"] and merged["stages"] == 3
    assert merged["gap_mean_s"] == 3.0 and merged["gap_median_s"] == 2.0
    assert merged["command"] == "dvc repro analysis/dvc.yaml:table7 && dvc repro analysis/dvc.yaml:table3"
    assert merged["parent_run_id"] == ["p1", "p2"] and "2 invocations" in merged["note"]
    assert merge([a]) is a


def test_merge_refuses_runs_of_different_code():
    a = _record("p1", "c", [], 1.0, commit="abc")
    b = _record("p2", "c", [], 1.0, commit="def")
    with pytest.raises(ValueError, match="differ in git_commit"):
        merge([a, b])


def test_a_stage_rebuilt_later_counts_once_and_current_runs_may_span_commits():
    a = _record("p1", "c1", [{"stage": "x", "seconds": 10.0, "gap_before": 2.0},
                             {"stage": "v", "seconds": 1.0, "gap_before": 1.0}], 16.0, commit="abc")
    b = _record("p2", "c2", [{"stage": "v", "seconds": 2.0, "gap_before": 3.0}], 6.0, commit="def")
    merged = merge([a, b], current=True)
    assert [r["stage"] for r in merged["rows"]] == ["x", "v"] and merged["rows"][1]["seconds"] == 2.0
    assert merged["wall_s"] == 20.0 and merged["in_stages_s"] == 12.0     # 16 + 6 less v's first run (1 + 1)
    assert merged["git_commit"] == "def" and merged["git_commits"] == ["abc", "def"]
    assert "1 earlier runs of stages rebuilt later" in merged["note"] and "on commits abc, def" in merged["note"]
    with pytest.raises(ValueError, match="differ in git_commit"):
        merge([a, b])
