"""Switch profiles: ``python -m workflow.profile {tiny,smoke}`` renders ``params.yaml``.

A profile is ``workflow/profiles/base.yaml`` deep-merged with ``workflow/profiles/<name>.yaml``.
``params.yaml`` is the only file DVC and the stages read; the committed one is the ``tiny`` profile.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import yaml

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
    return {"profile": name, **deep_merge(base, override)}


def dump(params: dict[str, Any], name: str) -> str:
    return HEADER.format(name=name) + yaml.safe_dump(params, sort_keys=False, width=100,
                                                     default_flow_style=None)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("name", choices=available())
    parser.add_argument("--output", default="params.yaml")
    args = parser.parse_args(argv)
    Path(args.output).write_text(dump(render(args.name), args.name), encoding="utf-8")
    print(f"params.yaml now holds the {args.name!r} profile", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
