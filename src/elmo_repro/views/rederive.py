"""Re-derive every committed significance result from the committed unit statistics.

``python -m elmo_repro.views.rederive`` recomputes, in a clone with no DVC cache (it reads only
git-tracked files: ``params.yaml``, each run's ``units.csv`` and ``metrics.json``, the paper's
numbers), every comparison of the tables that test differences (Table 1 with its controls,
Tables 2, 3 and 7, Figure 1), and checks each against ``results/tables/<table>.json``: the
difference exactly (1e-9), the p-value and the Holm p-value within two of their Monte-Carlo SEs
(committed and new combined), the detectable difference within two Monte-Carlo SEs of the standard
error it scales. ``--seed N`` resamples with another generator seed (the tables use 0): agreement
then shows that no verdict rests on the resampling. Exits 1 when a value disagrees or a table is
missing, naming it.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path
from typing import Any, Callable, Iterator

from ..io import InputError, read_json
from ..params import load_params
from . import ablation as ablation_view
from . import figure1 as figure1_view
from . import table1_controls as table1_controls_view
from .bootstrap import RESAMPLES

TABLES = Path("results/tables")
ABLATIONS = ("table2", "table3", "table7")
EXACT = 1e-9


def families(params: dict[str, Any], resamples: int, seed: int) -> dict[str, Callable[[], dict[str, list[dict]]]]:
    """Table name -> a function giving its comparisons per family (split), as the view computes
    them; only the tables ``params`` declares."""
    tables = params.get("tables", {})
    out: dict[str, Callable[[], dict[str, list[dict]]]] = {}
    if tables.get("table1_controls", {}).get("runs") and tables.get("table1", {}).get("runs"):
        out["table1_controls"] = lambda: {"test": table1_controls_view.comparisons(params, resamples, seed)}
    for name in ABLATIONS:
        if tables.get(name, {}).get("runs"):
            out[name] = lambda name=name: ablation_view.ablation(params, name, resamples, seed)["comparisons"]
    if tables.get("figure1", {}).get("runs"):
        out["figure1"] = lambda: figure1_view.comparisons(params, resamples, seed)
    return out


def committed(table: str, tables_dir: Path) -> dict[str, list[dict]]:
    """The comparisons per family of a committed table JSON.

    Raises:
        InputError: the file is missing or holds no comparisons.
    """
    path = tables_dir / f"{table}.json"
    if not path.is_file():
        raise InputError(path, "missing: the committed table is not there (build it: dvc repro)")
    data = read_json(path)
    found = {"test": data["bootstrap"]} if table == "table1_controls" and "bootstrap" in data else data.get("comparisons")
    if not found:
        raise InputError(path, "holds no comparisons")
    return found


def _mc_of_se(c: dict[str, Any]) -> float:
    """The Monte-Carlo SE of a comparison's standard error: only its unit part is resampled, and a
    variance from B draws has relative SE √(2/(B − 1)), so SE(SE) ≈ unit_se² / SE · √(1/(2(B − 1)))."""
    if c["standard_error"] <= 0:
        return 0.0
    return c["unit_se"] ** 2 / c["standard_error"] * math.sqrt(1.0 / (2.0 * (c["resamples"] - 1)))


def checks(old: dict[str, Any], new: dict[str, Any]) -> Iterator[tuple[str, float, float, float]]:
    """(quantity, committed, re-derived, tolerance) of one comparison."""
    yield "difference", old["difference"], new["difference"], EXACT * max(1.0, abs(old["difference"]))
    yield "p", old["p_value"], new["p_value"], 2 * math.hypot(old["p_mc_se"], new["p_mc_se"]) + EXACT
    yield "p (Holm)", old["p_holm"], new["p_holm"], 2 * math.hypot(old["p_holm_mc_se"], new["p_holm_mc_se"]) + EXACT
    scale = old["detectable"] / old["standard_error"] if old["standard_error"] > 0 else 0.0
    yield ("detectable", old["detectable"], new["detectable"],
           2 * scale * math.hypot(_mc_of_se(old), _mc_of_se(new)) + EXACT * max(1.0, old["detectable"]))


def _label(c: dict[str, Any]) -> str:
    if "comparison" in c:
        return f"{c['task']}: {c['comparison']}" + (f" ({c['elmo']})" if c.get("elmo") else "")
    return f"{c['task']}: {c['treatment']} vs {c['other']}"


def rederive(params: dict[str, Any], tables_dir: Path = TABLES, resamples: int = RESAMPLES,
             seed: int = 0) -> list[dict[str, Any]]:
    """One record per (table, family, comparison, quantity): committed and re-derived values, the
    tolerance and ``ok``; a missing table or a comparison in one but not the other gives a record
    with ``ok`` False and the reason in ``quantity``."""
    records = []
    for table, compute in families(params, resamples, seed).items():
        try:
            old_families = committed(table, tables_dir)
        except InputError as error:
            records.append({"table": table, "family": "", "comparison": "", "quantity": str(error),
                            "committed": None, "rederived": None, "tolerance": None, "ok": False})
            continue
        new_families = compute()
        for family in sorted(set(old_families) | set(new_families)):
            old_rows, new_rows = old_families.get(family, []), new_families.get(family, [])
            if [_label(c) for c in old_rows] != [_label(c) for c in new_rows]:
                records.append({"table": table, "family": family, "comparison": "", "committed": None,
                                "rederived": None, "tolerance": None, "ok": False,
                                "quantity": f"different comparisons: committed {[_label(c) for c in old_rows]}, "
                                            f"re-derived {[_label(c) for c in new_rows]}"})
                continue
            for old, new in zip(old_rows, new_rows):
                for quantity, a, b, tolerance in checks(old, new):
                    records.append({"table": table, "family": family, "comparison": _label(old), "quantity": quantity,
                                    "committed": a, "rederived": b, "tolerance": tolerance,
                                    "ok": abs(a - b) <= tolerance})
    return records


def print_records(records: list[dict[str, Any]]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title="Committed significance results, re-derived from the committed unit statistics")
    for column in ("table", "split", "comparison", "quantity", "committed", "re-derived", "tolerance", ""):
        table.add_column(column)
    number = lambda v: "—" if v is None else f"{v:.6g}"  # noqa: E731
    for r in records:
        table.add_row(r["table"], r["family"], r["comparison"], r["quantity"], number(r["committed"]),
                      number(r["rederived"]), number(r["tolerance"]), "ok" if r["ok"] else "DIFFERS")
    Console(width=200).print(table)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tables", type=Path, default=TABLES, help="the committed tables (default results/tables)")
    parser.add_argument("--resamples", type=int, default=RESAMPLES, help=f"bootstrap resamples (default {RESAMPLES:,})")
    parser.add_argument("--seed", type=int, default=0, help="resampling seed (the tables use 0)")
    parser.add_argument("--quiet", action="store_true", help="print only what differs and the summary")
    known = parser.parse_args(argv)
    try:
        records = rederive(load_params(), known.tables, known.resamples, known.seed)
    except InputError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print_records([r for r in records if not (known.quiet and r["ok"])])
    bad = [r for r in records if not r["ok"]]
    comparisons = sum(r["quantity"] == "difference" for r in records)
    print(f"{comparisons} comparisons, {len(records)} values: "
          + ("all agree" if not bad else f"{len(bad)} differ"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
