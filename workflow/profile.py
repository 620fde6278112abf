"""Switch profiles: ``python -m workflow.profile {tiny,smoke,paper}`` renders ``params.yaml``.

A profile is ``workflow/profiles/base.yaml`` deep-merged with ``workflow/profiles/<name>.yaml``,
plus the ``runs`` section: the union of the runs the tables list (``tables.*.runs``), each with its
ELMo spec written out (:func:`elmo_repro.experiments.rendering.render_runs`), which DVC's ``foreach``
stages and the Snakefile expand into one job per run. ``params.yaml`` is the only file DVC and the
stages read; the committed one is the ``tiny`` profile.

After editing ``tables`` or ``elmo_specs`` in ``params.yaml`` by hand, ``python -m workflow.profile
--refresh`` re-renders its ``runs`` (the stages refuse a stale one). Either way the pipeline files
are re-rendered too (``workflow.render``): the views depend on exactly their tables' run folders.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import yaml

from elmo_repro.experiments.rendering import render_runs
from elmo_repro.experiments.specs import render_elmo_features, render_finetune_tasks
from elmo_repro.params import load_params

PROFILES = Path(__file__).resolve().parent / "profiles"
HEADER = ("# Rendered by `python -m workflow.profile {name}` from workflow/profiles/.\n"
          "# Edit the profile files, or edit here for a one-off experiment.\n")


def available() -> list[str]:
    return sorted(p.stem for p in PROFILES.glob("*.yaml") if p.stem != "base")


def deep_merge(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    """Recursively merge ``override`` into a copy of ``base`` (dicts merge, other values replace)."""
    merged = dict(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = deep_merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def render(name: str) -> dict[str, Any]:
    """The full params of profile ``name``; raises ValueError for an unknown profile."""
    if name not in available():
        raise ValueError(f"unknown profile {name!r}; available: {', '.join(available())}")
    base = yaml.safe_load((PROFILES / "base.yaml").read_text(encoding="utf-8"))
    override = yaml.safe_load((PROFILES / f"{name}.yaml").read_text(encoding="utf-8")) or {}
    return with_runs({"profile": name, **deep_merge(base, override)})


RENDERED = ("runs", "elmo_features", "finetune_tasks")


def with_runs(params: dict[str, Any]) -> dict[str, Any]:
    """``params`` with its rendered sections, last: ``runs`` from ``tables`` and ``elmo_specs``, and
    from the runs the biLM layers they read (``elmo_features``) and the fine-tunings those need
    (``finetune_tasks``)."""
    rest = {k: v for k, v in params.items() if k not in RENDERED}
    runs = render_runs(params.get("tables", {}), params.get("elmo_specs", {}))
    base = params.get("bilm_source", {}).get("path", "models/bilm")
    return {**rest, "runs": runs, "elmo_features": render_elmo_features(runs, base),
            "finetune_tasks": render_finetune_tasks(runs)}


def dump(params: dict[str, Any], name: str) -> str:
    return HEADER.format(name=name) + yaml.safe_dump(params, sort_keys=False, width=100,
                                                     default_flow_style=None)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("name", nargs="?", choices=available())
    parser.add_argument("--refresh", action="store_true",
                        help="re-render the runs of the existing params.yaml (after editing tables/elmo_specs)")
    parser.add_argument("--output", default="params.yaml")
    parser.add_argument("--free-data", action="store_true",
                        help="leave out every task and evaluation split that reads a licensed file (the "
                             "words of CoNLL-2005's WSJ sections: SRL), for a mirror built by "
                             "`python -m elmo_repro.fetch` alone (workflow/free_data.py)")
    parser.add_argument("--released", metavar="PATH_OR_NAME",
                        help="read a released biLM instead of pretraining one: a directory with bilm-tf's "
                             "options.json and weights.hdf5, an .hdf5 file with options.json beside it, or the "
                             "name of one `python -m elmo_repro.fetch` lays out under <mirror>/elmo_released "
                             "(e.g. 2x4096_512_2048cnn_2xhighway); no pretraining, perplexity or fine-tuning")
    parser.add_argument("--mirror", metavar="DIR",
                        help="the data mirror to read (data.mirror; default: the profile's, ../shared/data), "
                             "e.g. the folder `python -m elmo_repro.fetch --dest DIR` filled")
    parser.add_argument("--allow-missing", action="store_true",
                        help="render even when --mirror or --released names a path that is not here "
                             "(params for another machine)")
    args = parser.parse_args(argv)
    if args.refresh == (args.name is not None):
        parser.error("give a profile name or --refresh")
    if (args.mirror is not None or args.free_data or args.released) and args.refresh:
        parser.error("--mirror, --free-data and --released go with a profile name (or edit params.yaml)")
    if args.refresh:
        params = with_runs(load_params(args.output, validate=False))
        name = str(params.get("profile", "custom"))
        Path(args.output).write_text(dump(params, name), encoding="utf-8")
        print(f"{args.output}: runs re-rendered ({sum(map(len, params['runs'].values()))} runs)",
              file=sys.stderr)
        return rerender_pipelines(args.output)
    params = render(args.name)
    if args.mirror is not None:
        if not Path(args.mirror).is_dir() and not args.allow_missing:
            print(f"error: data mirror {args.mirror} not found: fetch one with `python -m elmo_repro.fetch --dest "
                  f"{args.mirror}` (or pass --allow-missing to render params for another machine)", file=sys.stderr)
            return 2
        params["data"] = {**params.get("data", {}), "mirror": args.mirror}
    if args.free_data:
        from .free_data import leave_out, licensed_left_out
        params = with_runs(leave_out(params, licensed_left_out()))
    if args.released:
        params = with_runs(use_released(params, args.released))
        if not Path(params["bilm_source"]["path"]).exists() and not args.allow_missing:
            print(f"error: released biLM {params['bilm_source']['path']} not found: `python -m elmo_repro.fetch "
                  "--only elmo_released` fetches the original's (or pass --allow-missing to render params for "
                  "another machine)", file=sys.stderr)
            return 2
        print(f"released biLM {params['bilm_source']['path']}: no pretraining, perplexity or domain fine-tuning "
              "(the released files hold no softmax); every ELMo spec reads it as released (bilm: base)",
              file=sys.stderr)
    Path(args.output).write_text(dump(params, args.name), encoding="utf-8")
    print(f"{args.output} now holds the {args.name!r} profile"
          + (f", reading the data mirror {args.mirror}" if args.mirror else ""), file=sys.stderr)
    for name, why in params["data"].get("left_out", {}).items():
        print(f"left out: {name}: {why}", file=sys.stderr)
    return rerender_pipelines(args.output)


def use_released(params: dict[str, Any], released: str) -> dict[str, Any]:
    """``params`` reading the released biLM ``released`` (a path, or a name under
    ``<data.mirror>/elmo_released``): ``bilm_source.path`` and the probes' biLM name it, and every
    ELMo spec that read a fine-tuned biLM reads it as released (``bilm: base``), since released
    weights hold no softmax to fine-tune. A declared departure from the paper's Table 1 (§3.4)."""
    path = released if "/" in released or Path(released).exists() else \
        f"{params['data']['mirror']}/elmo_released/{released}"
    specs = {name: {**spec, "bilm": "base"} if spec.get("bilm") == "finetuned" else spec
             for name, spec in params.get("elmo_specs", {}).items()}
    probes = params.get("probes", {})
    sources = {**probes.get("sources", {})}
    if "bilm" in sources:
        sources["bilm"] = {**sources["bilm"], "model": path}
    return {**params, "bilm_source": {**params.get("bilm_source", {}), "path": path}, "elmo_specs": specs,
            "probes": {**probes, "sources": sources}}


def rerender_pipelines(output: str) -> int:
    """Re-render dvc.yaml and analysis/dvc.yaml when ``output`` is the repository's params.yaml: each
    view depends on the folders of the runs its table lists, which the profile decides."""
    from . import render
    if Path(output).resolve() != render.ROOT / "params.yaml":
        return 0
    return render.main([])


if __name__ == "__main__":
    sys.exit(main())
