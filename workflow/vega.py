"""Offline ``dvc plots show``: an HTML template with Vega, Vega-Lite and Vega-Embed inlined.

DVC's default plots page loads these three scripts from a CDN (dvc-render's ``VegaRenderer.SCRIPTS``),
so it stays blank without network. ``python -m workflow.vega`` (run by ``bash setup.sh``) fetches
the versions DVC's page asks for from the npm registry, checks each tarball against the registry's
sha512 integrity (pinned below), and writes ``external/vega/dvc_plots.html``: a page whose head
holds the three scripts inline and which has no ``{scripts}`` placeholder, so the CDN tags DVC
would add are never written. ``.dvc/config`` points ``plots.html_template`` at it, so a plain
``dvc plots show`` writes a self-contained ``dvc_plots/index.html``. Licences: BSD-3-Clause
(the Vega project); the inlined files keep their licence headers.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import io
import sys
import tarfile
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TEMPLATE = ROOT / "external" / "vega" / "dvc_plots.html"
# (package, version, file in the tarball, npm's dist.integrity): the versions dvc-render's page uses
PACKAGES = (
    ("vega", "5.20.2", "package/build/vega.min.js",
     "sha512-qmH7aD9GGPpssVdxL1xgcdxTbQzyRUeRR16Os385ymvQhiwCYQNA6+eXUPAZDTVLfk0RXu6Jzj6kUE5jQ80EVw=="),
    ("vega-lite", "5.2.0", "package/build/vega-lite.min.js",
     "sha512-Yxcg8MvYfxHcG6BbkaKT0oVCIMIcE19UvqIsEwBmyd/7h2nzW7oRnID81T8UrY7hpDrIr6wa2JADOT2dhGNErw=="),
    ("vega-embed", "6.18.2", "package/build/vega-embed.min.js",
     "sha512-wcDyQPE4J5aiCDc3/suH5RQDvrKkjuLkhzUcbOLwEkNF8/+pp17tS0JghzEvAPNRg+5aG1/N2ydixq8Lk3dOlg=="),
)
REGISTRY = "https://registry.npmjs.org"
PAGE = """<!DOCTYPE html>
<html>
<head>
<meta charset="utf-8">
{refresh_tag}
<title>DVC plots (offline)</title>
{inline}
<style>table {{ border-spacing: 15px; }}</style>
</head>
<body>
{plot_divs}
</body>
</html>
"""


def tarball_url(package: str, version: str) -> str:
    return f"{REGISTRY}/{package}/-/{package}-{version}.tgz"


def check_integrity(data: bytes, integrity: str, name: str) -> None:
    """Raise ValueError unless ``data`` matches npm's ``sha512-<base64>`` integrity string."""
    algorithm, _, expected = integrity.partition("-")
    actual = base64.b64encode(hashlib.new(algorithm, data).digest()).decode()
    if actual != expected:
        raise ValueError(f"{name}: {algorithm} {actual} does not match the pinned {expected}")


def script(tarball: bytes, member: str, name: str) -> str:
    """The JavaScript file ``member`` of an npm tarball, as a ``<script>`` element."""
    with tarfile.open(fileobj=io.BytesIO(tarball), mode="r:gz") as archive:
        handle = archive.extractfile(member)
        if handle is None:
            raise ValueError(f"{name}: {member} is not a file in the tarball")
        code = handle.read().decode("utf-8")
    if "</script" in code:           # would end the inline element early
        raise ValueError(f"{name}: {member} contains '</script'")
    return f"<script>/* {name} (BSD-3-Clause) */\n{code}\n</script>"


def page(scripts: list[str]) -> str:
    """The template: DVC fills ``{plot_divs}`` and ``{refresh_tag}``; no ``{scripts}`` slot."""
    return PAGE.format(inline="\n".join(scripts), refresh_tag="{refresh_tag}", plot_divs="{plot_divs}")


def fetch_url(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=60) as response:
        return response.read()


def build(target: Path = TEMPLATE, fetch=fetch_url, packages=PACKAGES) -> Path:
    """Fetch, check and inline ``packages`` into the template at ``target`` (written atomically).

    Raises:
        ValueError: a tarball whose sha512 differs from the pinned integrity, or without its script.
        OSError: the registry cannot be reached.
    """
    scripts = []
    for package, version, member, integrity in packages:
        name = f"{package}@{version}"
        data = fetch(tarball_url(package, version))
        check_integrity(data, integrity, name)
        scripts.append(script(data, member, name))
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(target.name + ".tmp")
    tmp.write_text(page(scripts), encoding="utf-8")
    tmp.replace(target)
    return target


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--force", action="store_true", help="rebuild even if the template exists")
    args = parser.parse_args(argv)
    if TEMPLATE.is_file() and not args.force:
        return 0
    print(f"{build()}: Vega {', '.join(f'{p}@{v}' for p, v, _, _ in PACKAGES)} inlined", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
