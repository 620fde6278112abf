"""The offline plots template (workflow/vega.py): integrity check, inlining, and DVC's renderer
writing a page with no CDN script."""

import base64
import hashlib
import io
import tarfile

import pytest
from dvc_render import render_html
from dvc_render.vega import VegaRenderer

from workflow import vega


def tarball(files):
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def integrity(data):
    return "sha512-" + base64.b64encode(hashlib.sha512(data).digest()).decode()


def test_the_template_inlines_the_checked_scripts_and_dvc_adds_no_cdn_tag(tmp_path):
    blob = tarball({"package/build/fake.min.js": "window.vegaFake = 1;"})
    packages = [("fake", "1.0.0", "package/build/fake.min.js", integrity(blob))]
    urls = []
    target = vega.build(tmp_path / "t.html", fetch=lambda url: urls.append(url) or blob, packages=packages)
    assert urls == ["https://registry.npmjs.org/fake/-/fake-1.0.0.tgz"]
    template = target.read_text()
    assert "window.vegaFake = 1;" in template and "{scripts}" not in template
    renderer = VegaRenderer([{"x": 1, "y": 2}], "loss.csv", template="simple", x="x", y="y")
    page = (tmp_path / "index.html")
    render_html([renderer], page, html_template=str(target))
    html = page.read_text()
    assert "window.vegaFake = 1;" in html and "vegaEmbed('#loss_csv'" in html
    assert "cdn.jsdelivr" not in html and "https://" not in html.replace("https://vega.github.io/schema", "")


def test_a_tampered_tarball_is_refused(tmp_path):
    blob = tarball({"package/build/fake.min.js": "x"})
    packages = [("fake", "1.0.0", "package/build/fake.min.js", integrity(blob + b"!"))]
    with pytest.raises(ValueError, match="fake@1.0.0: sha512 .* does not match"):
        vega.build(tmp_path / "t.html", fetch=lambda url: blob, packages=packages)
    assert not (tmp_path / "t.html").exists()


def test_dvc_config_points_at_the_template():
    config = (vega.ROOT / ".dvc" / "config").read_text()
    assert "html_template = ../external/vega/dvc_plots.html" in config
    assert (vega.ROOT / ".dvc" / "../external/vega/dvc_plots.html").resolve() == vega.TEMPLATE
