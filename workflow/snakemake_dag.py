"""The Snakemake side of the registry: the concrete stages of a rendered params file (each
family once per run, as DVC's ``foreach`` names them) and their deps as Snakemake inputs.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

from .registry import STAGES, active, concrete
from .stage import Stage

def resolve(path: str, params: dict) -> str:
    """Substitute DVC-style ``${section.key}`` references with values from the params."""
    def lookup(match: re.Match) -> str:
        value: Any = params
        for key in match.group(1).split("."):
            value = value[key]
        return str(value)
    return re.sub(r"\$\{([\w.]+)\}", lookup, path)


def expand(params: dict) -> list[Stage]:
    """The concrete stages for Snakemake: each family once per run in ``params`` (named
    ``<family>@<run id>``, as DVC names its ``foreach`` stages), the other stages with their run
    folders resolved (:func:`concrete`)."""
    stages = []
    for stage in STAGES:
        if not active(stage, params):
            continue
        if stage.foreach is None:
            stages.append(concrete(stage, params))
            continue
        section: Any = params
        for key in stage.foreach.split("."):
            section = section.get(key, {}) if isinstance(section, dict) else {}
        for run, item in section.items():
            def sub(text: str, run: str = run, item: Any = item) -> str:
                return _ITEM.sub(lambda m: str(_at(item, m.group(1))), text.replace("${key}", run))
            stages.append(concrete(replace(
                stage, name=f"{stage.name}@{run}", foreach=None, args=sub(stage.args),
                deps=[sub(d) for d in stage.deps],
                params=[sub(p) for p in stage.params], outs=[sub(o) for o in stage.outs],
                committed=[sub(o) for o in stage.committed], metrics=[sub(o) for o in stage.metrics],
                plots=[sub(o) for o in stage.plots], persist=[sub(o) for o in stage.persist],
                declaration_of=stage.declaration_of and sub(stage.declaration_of)), params))
    return stages


_ITEM = re.compile(r"\$\{item\.([\w.]+)\}")


def _at(item: Any, path: str) -> Any:
    """The value at a dotted ``path`` of a foreach item (DVC's ``${item.a.b}``)."""
    for key in path.split("."):
        item = item[key]
    return item


def is_directory(out: str) -> bool:
    """Outputs are files when their name has a suffix (``metrics.json``), else directories."""
    return "." not in out.rsplit("/", 1)[-1]


class Outputs:
    """Every output of a list of concrete stages, indexed for :func:`snakemake_inputs`: which stage
    writes a path, and which outputs lie inside a directory (built once: a profile can have
    hundreds of stages)."""

    def __init__(self, concrete: list[Stage]):
        self.writer: dict[str, str] = {}               # output -> the stage that writes it
        self.inside: dict[str, list[str]] = {}         # directory -> the outputs under it
        for stage in concrete:
            for out in stage.all_outs:
                self.writer.setdefault(out, stage.name)
                parts = out.split("/")
                for n in range(1, len(parts)):
                    self.inside.setdefault("/".join(parts[:n]), []).append(out)

    def enclosing(self, path: str) -> str | None:
        """The output directory ``path`` lies inside, if any (the nearest)."""
        parts = path.split("/")
        for n in range(len(parts) - 1, 0, -1):
            if "/".join(parts[:n]) in self.writer:
                return "/".join(parts[:n])
        return None


def snakemake_inputs(stage: Stage, concrete: list[Stage], params: dict, outputs: Outputs | None = None) -> list[str]:
    """The stage's deps as Snakemake inputs: ``${...}`` references resolved from the params; a
    file inside another stage's output directory replaced by that directory, and a directory that
    holds other stages' outputs (``results/runs``) by those outputs (Snakemake matches outputs
    exactly). ``outputs``: :class:`Outputs` of ``concrete`` (built here when not given)."""
    outputs = outputs or Outputs(concrete)
    inputs: list[str] = []
    for dep in stage.all_deps:
        dep = resolve(dep, params)
        inside = [out for out in outputs.inside.get(dep, []) if outputs.writer[out] != stage.name]
        if not inside:
            around = outputs.enclosing(dep)
            inside = [around if around is not None and outputs.writer[around] != stage.name else dep]
        inputs += [c for c in inside if c not in inputs]
    return inputs
