"""The registry is the single source of truth: dvc.yaml and params.yaml are its renders."""

import importlib
from pathlib import Path

import yaml

from workflow import profile, render
from workflow.registry import STAGES

ROOT = Path(__file__).resolve().parents[2]


def test_dvc_yaml_is_the_render_of_the_registry():
    assert (ROOT / "dvc.yaml").read_text(encoding="utf-8") == render.render_dvc()


def test_committed_params_are_the_tiny_profile():
    committed = yaml.safe_load((ROOT / "params.yaml").read_text(encoding="utf-8"))
    assert committed == profile.render("tiny")


def test_every_stage_reads_exactly_its_declared_sections():
    for stage in STAGES:
        module = importlib.import_module(f"stages.{stage.module}")
        assert module.SECTIONS == stage.params, stage.name
        assert (ROOT / "stages" / f"{stage.module}.py").is_file()


def test_code_dependencies_exist():
    for stage in STAGES:
        for dep in stage.all_deps:
            if dep.startswith(("stages/", "src/")):
                assert (ROOT / dep).exists(), f"{stage.name}: {dep}"


def test_dag_is_connected_one_way():
    produced = {out: s.name for s in STAGES for out in [*s.outs, *s.committed, *s.metrics]}
    order = [s.name for s in STAGES]
    for stage in STAGES:
        for dep in stage.all_deps:
            producer = next((name for out, name in produced.items()
                             if dep == out or dep.startswith(out + "/")), None)
            if producer:
                assert order.index(producer) < order.index(stage.name), (stage.name, dep)


def test_profiles_override_only_known_keys():
    base = profile.render("tiny")

    def keys(tree, prefix=""):
        return {prefix + k for k in tree} | {x for k, v in tree.items() if isinstance(v, dict)
                                              for x in keys(v, prefix + k + ".")}

    for name in profile.available():
        assert keys(profile.render(name)) == keys(base), name
