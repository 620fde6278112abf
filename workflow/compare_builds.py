"""Where two builds of the pipeline first diverge: ``python -m workflow.compare_builds A B``.

A and B are two checkouts (clones) that ran the same stages, e.g. on two machines, or on one
machine under different kernel settings (``ATEN_CPU_CAPABILITY``, ``ONEDNN_MAX_CPU_ISA``, threads).
From their lock files (``dvc.lock``, ``analysis/dvc.lock``) every stage both recorded is classed:

* ``same``: equal inputs, equal outputs;
* ``diverges``: equal inputs (data, code, params), different outputs: the computation itself gave
  other numbers there, a place to pin;
* ``follows``: different inputs (it read an output that already differed), so different outputs
  say nothing new;
* ``only A`` / ``only B``: recorded in one build.

Then, for each diverging stage whose outputs are in both workspaces, the first thing that differs
inside them: the first tensor of a ``.pt`` file (by name, with its largest absolute difference), the
first dataset of an HDF5 file, the first key of a JSON file, the first line of a text file. Exits 1
when a stage diverges, 0 when the builds agree wherever both ran.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import yaml

LOCKS = ("dvc.lock", "analysis/dvc.lock")


@dataclass(frozen=True)
class StageRecord:
    """A stage as a lock file records it: path -> hash of its inputs and of its outputs, and params."""

    name: str
    deps: dict[str, str]
    outs: dict[str, str]
    params: str


def _hash(entry: dict[str, Any]) -> str:
    return str(entry.get("md5") or entry.get("hash") or "")


def read_locks(root: Path) -> dict[str, StageRecord]:
    """Every stage of the lock files under ``root`` (an absent lock file holds none), by name
    (``analysis/dvc.yaml:<stage>`` for the analysis job's)."""
    stages: dict[str, StageRecord] = {}
    for lock in LOCKS:
        path = root / lock
        if not path.is_file():
            continue
        prefix = "" if lock == "dvc.lock" else "analysis/dvc.yaml:"
        for name, stage in (yaml.safe_load(path.read_text(encoding="utf-8")) or {}).get("stages", {}).items():
            stages[prefix + name] = StageRecord(
                name=prefix + name,
                deps={d["path"]: _hash(d) for d in stage.get("deps", [])},
                outs={o["path"]: _hash(o) for o in stage.get("outs", [])},
                params=json.dumps(stage.get("params", {}), sort_keys=True))
    return stages


def classify(a: dict[str, StageRecord], b: dict[str, StageRecord]) -> list[tuple[str, str, list[str]]]:
    """``(stage, class, paths)`` for every stage of either build, in A's lock order then B's;
    ``paths``: the outputs that differ (``diverges``, ``follows``) or the inputs that do
    (``follows``, first)."""
    out = []
    for name in [*a, *(n for n in b if n not in a)]:
        if name not in b or name not in a:
            out.append((name, "only A" if name in a else "only B", []))
            continue
        x, y = a[name], b[name]
        differ = sorted(p for p in set(x.outs) | set(y.outs) if x.outs.get(p) != y.outs.get(p))
        inputs = sorted(p for p in set(x.deps) | set(y.deps) if x.deps.get(p) != y.deps.get(p))
        if x.params != y.params:
            inputs.append("(params)")
        if inputs:
            out.append((name, "follows", inputs + differ))
        else:
            out.append((name, "diverges" if differ else "same", differ))
    return out


def _files(path: Path) -> Iterator[tuple[str, Path]]:
    if path.is_file():
        yield "", path
    elif path.is_dir():
        for file in sorted(p for p in path.rglob("*") if p.is_file()):
            yield str(file.relative_to(path)), file


def _digest(path: Path) -> str:
    return hashlib.md5(path.read_bytes()).hexdigest()


def _first_tensor(a: Any, b: Any, where: str = "") -> str | None:
    """The first tensor (or value) that differs between two loaded objects, with its largest
    absolute difference; None when equal."""
    import torch

    if isinstance(a, dict) and isinstance(b, dict):
        for key in list(a) + [k for k in b if k not in a]:
            if key not in a or key not in b:
                return f"{where}{key}: only in {'B' if key not in a else 'A'}"
            found = _first_tensor(a[key], b[key], f"{where}{key}.")
            if found:
                return found
        return None
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        if len(a) != len(b):
            return f"{where.rstrip('.')}: {len(a)} against {len(b)} items"
        for i, (x, y) in enumerate(zip(a, b)):
            found = _first_tensor(x, y, f"{where}{i}.")
            if found:
                return found
        return None
    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
        if a.shape != b.shape or a.dtype != b.dtype:
            return f"{where.rstrip('.')}: {tuple(a.shape)} {a.dtype} against {tuple(b.shape)} {b.dtype}"
        if torch.equal(a, b):
            return None
        diff = (a.double() - b.double()).abs() if a.is_floating_point() else (a != b).double()
        return f"{where.rstrip('.')}: max |A − B| = {diff.max().item():.3g} over {int((diff > 0).sum())} of {a.numel()} values"
    return None if a == b else f"{where.rstrip('.')}: {a!r} against {b!r}"


def first_difference(a: Path, b: Path) -> str:
    """What first differs between two files of the same name (see the module doc)."""
    if a.suffix == ".pt":
        import torch
        return _first_tensor(torch.load(a, map_location="cpu", weights_only=False),
                             torch.load(b, map_location="cpu", weights_only=False)) or "same tensors, other bytes"
    if a.suffix in (".hdf5", ".h5"):
        import h5py
        import numpy as np
        with h5py.File(a, "r") as x, h5py.File(b, "r") as y:
            names: list[str] = []
            x.visit(lambda n: names.append(n) if isinstance(x[n], h5py.Dataset) else None)
            for name in names:
                if name not in y:
                    return f"{name}: only in A"
                u, v = x[name][()], y[name][()]
                if not np.array_equal(u, v):
                    delta = np.abs(u.astype(float) - v.astype(float)).max() if u.shape == v.shape else "shape"
                    return f"{name}: max |A − B| = {delta}"
        return "same datasets, other bytes"
    if a.suffix == ".json":
        x, y = json.loads(a.read_text(encoding="utf-8")), json.loads(b.read_text(encoding="utf-8"))
        if isinstance(x, dict) and isinstance(y, dict):
            for key in list(x) + [k for k in y if k not in x]:
                if x.get(key) != y.get(key):
                    return f"key {key!r}: {str(x.get(key))[:80]} against {str(y.get(key))[:80]}"
        return "same values, other bytes"
    try:
        for number, (u, v) in enumerate(zip(a.read_text(encoding="utf-8").splitlines(),
                                            b.read_text(encoding="utf-8").splitlines()), 1):
            if u != v:
                return f"line {number}: {u[:80]!r} against {v[:80]!r}"
    except UnicodeDecodeError:
        return "binary files differ"
    return "one is a prefix of the other"


def inside(root_a: Path, root_b: Path, out: str) -> list[str]:
    """The first difference of each file of output ``out`` present in both workspaces."""
    files_a, files_b = dict(_files(root_a / out)), dict(_files(root_b / out))
    if not files_a or not files_b:
        return [f"{out}: not in both workspaces (a DVC output: `dvc checkout` or re-run there)"]
    lines = []
    for name in sorted(set(files_a) | set(files_b)):
        label = f"{out}/{name}" if name else out
        if name not in files_a or name not in files_b:
            lines.append(f"{label}: only in {'A' if name in files_a else 'B'}")
        elif _digest(files_a[name]) != _digest(files_b[name]):
            lines.append(f"{label}: {first_difference(files_a[name], files_b[name])}")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m workflow.compare_builds", description=__doc__.split("\n\n")[0])
    parser.add_argument("a", type=Path, help="one checkout")
    parser.add_argument("b", type=Path, help="the other")
    parser.add_argument("--all", action="store_true", help="list every stage, not only those that differ")
    known = parser.parse_args(argv)
    classes = classify(read_locks(known.a), read_locks(known.b))
    for name, kind, paths in classes:
        if known.all or kind != "same":
            print(f"{kind:9} {name}" + (f"  ({', '.join(paths[:4])}{' …' if len(paths) > 4 else ''})" if paths else ""))
            if kind == "diverges":
                for path in paths:
                    for line in inside(known.a, known.b, path):
                        print(f"          {line}")
    counts = {kind: sum(1 for _, k, _ in classes if k == kind) for kind in ("same", "diverges", "follows", "only A", "only B")}
    print(", ".join(f"{n} {kind}" for kind, n in counts.items() if n))
    return 1 if counts["diverges"] else 0


if __name__ == "__main__":
    sys.exit(main())
