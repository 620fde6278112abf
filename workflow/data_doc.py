"""``docs/data.md``: every folder of the data mirror, the stages that read it and how to obtain it.

``python -m workflow.data_doc [--check]`` renders it from the stage registry (which stage reads
which mirror path, with the committed ``tiny`` profile's params and with the ``paper`` profile's)
and from :mod:`elmo_repro.fetch` (sources, licences, fetched or manual, sizes). ``--check`` exits
1 (and writes nothing) if the committed file differs from its render; a unit test checks the same.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import Any

from elmo_repro import fetch
from elmo_repro.data.lm_corpus import HELDOUT, SOURCES

from .profile import render
from .registry import MIRROR, STAGES
from .snakemake_dag import expand, resolve

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "data.md"
PROFILES = ("tiny", "paper")   # the default jobs' params (params.yaml), and the paper's
_PARAM = re.compile(r"\$\{[\w.]+\}")
_OUTSIDE = "outside-the-mirror:"   # marks paths of external_reads among mirror paths


def mirror_reads(params: dict[str, Any]) -> dict[str, list[str]]:
    """Mirror path -> the stages (both jobs) that read it, in registry order.

    The registry's deps under ``${data.mirror}`` resolved with ``params``, and the paths that
    params name inside a folder dep: the LM sources and held-out text (stages reading ``lm_data``)
    and the WSD data sets (stages reading ``probes.wsd``).
    """
    reads: dict[str, list[str]] = {}

    def add(path: str, stage: str) -> None:
        if stage not in reads.setdefault(path, []):
            reads[path].append(stage)

    for stage in STAGES:
        for dep in stage.deps:
            if dep.startswith(MIRROR + "/"):
                add(resolve(dep[len(MIRROR) + 1:], params), stage.name)
        sections = {p.split(".${", 1)[0] for p in stage.params}
        if "lm_data" in sections:
            lm = params["lm_data"]
            for path in [SOURCES[name][0] for name in lm["train_sources"]] + [HELDOUT[lm["heldout"]]]:
                add(path, stage.name)
        if {"probes.wsd", "probes"} & sections:
            for path in params["probes"]["wsd"]["train"] + params["probes"]["wsd"]["test"]:
                add(path, stage.name)
    return reads


def external_reads(params: dict[str, Any]) -> dict[str, list[str]]:
    """Path -> stages, for the deps that are a params value (``${section.key}``) outside the
    mirror which no stage writes (WordNet's directory, the paper profile's GloVe vectors)."""
    concrete = expand(params)
    outs = [resolve(out, params) for stage in concrete for out in stage.all_outs]
    reads: dict[str, list[str]] = {}
    for stage in concrete:
        for dep in stage.deps:
            if not _PARAM.fullmatch(dep):
                continue
            path = resolve(dep, params)
            if not any(path == out or path.startswith(out + "/") for out in outs):
                name = stage.name.split("@", 1)[0]
                if name not in reads.setdefault(path, []):
                    reads[path].append(name)
    return reads


def _readers(paths: list[str], reads: dict[str, list[str]]) -> list[str]:
    """The stages that read any of ``paths`` or anything inside or above them."""
    names: list[str] = []
    for read, stages in reads.items():
        if any(read == p or read.startswith(p + "/") or p.startswith(read + "/") for p in paths):
            names += [s for s in stages if s not in names]
    return names


def _read_by(paths: list[str], reads: dict[str, dict[str, list[str]]]) -> str:
    default = _readers(paths, reads["tiny"])
    paper = [s for s in _readers(paths, reads["paper"]) if s not in default]
    parts = ([", ".join(default)] if default else []) + ([f"paper profile: {', '.join(paper)}"] if paper else [])
    return "; ".join(parts) or "no stage"


def _size(sources: list[fetch.Source]) -> str:
    if all(s.bytes is not None for s in sources):
        return f"{sum(s.bytes for s in sources):,} B"
    laid_out = [pin[0] for s in sources for pin in s.pins.values()]
    return f"unknown (lays out {sum(laid_out):,} B)" if laid_out else "unknown"


def render_doc() -> str:
    """The text of ``docs/data.md``."""
    reads = {name: {**mirror_reads(params), **{_OUTSIDE + p: s for p, s in external_reads(params).items()}}
             for name, params in ((n, render(n)) for n in PROFILES)}
    wordnet_dir = render("tiny")["probes"]["wordnet"]
    rows: dict[str, dict[str, list[str]]] = {}   # location -> column -> lines (one per data set)

    def cell(location: str, column: str, text: str) -> None:
        rows.setdefault(location, {}).setdefault(column, []).append(text)

    sources_of: dict[str, list[fetch.Source]] = {}
    for name, source in fetch.MANIFEST.items():
        sources_of.setdefault(fetch.data_set(name), []).append(source)
    for row in fetch.rows():
        for folder in row.folders:
            location = folder if row.fetched or fetch.MANUAL[row.name].param == "data.mirror" else f"`{row.name}`"
            default = " (default)" if row.default else ""
            if row.fetched:
                cell(location, "source", f"`{row.name}`: {row.source}")
                cell(location, "how", f"fetched: `{row.name}`{default}, {row.check}")
                cell(location, "size", f"`{row.name}`: {_size(sources_of[row.name])}")
            else:
                cell(location, "source", f"`{row.name}`: by hand (see below)")
                cell(location, "how", f"manual: `{row.name}`{default}")
            if row.licence not in rows[location].get("licence", []):
                cell(location, "licence", row.licence)
    lines = [
        "# The data mirror",
        "",
        "Generated by `python -m workflow.data_doc` from the stage registry and `src/elmo_repro/fetch.py`;",
        "a unit test checks it is current. The pipeline reads its data from the folder `data.mirror` names",
        "(`../shared/data` by default). `python -m elmo_repro.fetch --dest DIR` builds such a folder from the",
        "official sources: every data set marked *default* below, each download or laid-out file checked by",
        "size and sha256 (`sha256`: the download's own checksum; `pinned files`: every file it lays out is",
        "checked against the mirror's copy; `recorded`: nothing is published, so the first download's size",
        "and sha256 are recorded in `DIR/downloads/RECORDED.json` and later ones must match them;",
        "`unverified`: needs `--allow-unverified`). Then set",
        "`data.mirror: DIR`. Items marked *manual* cannot be downloaded freely: the steps follow the table",
        "(`python -m elmo_repro.fetch --list` prints them too). *Read by* lists the stages of both jobs",
        "(`dvc.yaml`, `analysis/dvc.yaml`) with the committed params, then those only the paper profile adds.",
        "",
        "| folder | read by | source | licence | fetched or manual | size (download) |",
        "|---|---|---|---|---|---|",
    ]
    for location, columns in rows.items():
        if location.startswith("`"):          # a manual item outside the mirror (WordNet)
            paths, shown = [_OUTSIDE + wordnet_dir], f"{location} → `{wordnet_dir}` (`probes.wordnet`)"
        elif location == "glove":
            paths, shown = [_OUTSIDE + "data/glove"], "`glove/` (with `--dest data`: `data/glove/`)"
        else:
            paths, shown = [location], f"`{location}/`"
        lines.append(f"| {shown} | {_read_by(paths, reads)} | " + " | ".join(
            "<br>".join(columns.get(key, ["—"])) for key in ("source", "licence", "how", "size")) + " |")
    for folder, why in fetch.NOT_FETCHED.items():
        lines.append(f"| `{folder}/` | {_read_by([folder], reads)} (unit tests only) | {why} | see source | "
                     "not fetched | — |")
    lines += ["", "## Manual steps", "", "`DIR` is the mirror (`data.mirror`).", ""]
    for name in fetch.MANUAL:
        lines += ["```text", fetch.manual_text(name), "```", ""]
    return "\n".join(lines).rstrip() + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if docs/data.md is not current")
    args = parser.parse_args(argv)
    text = render_doc()
    if args.check:
        current = DOC.read_text(encoding="utf-8") if DOC.is_file() else ""
        if current != text:
            print(f"{DOC.relative_to(ROOT)} is stale: run python -m workflow.data_doc", file=sys.stderr)
            return 1
        return 0
    DOC.parent.mkdir(parents=True, exist_ok=True)
    DOC.write_text(text, encoding="utf-8")
    print(f"wrote {DOC.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
