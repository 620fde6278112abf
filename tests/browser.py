"""A real browser for the report's tests: headless Chromium from the distribution's packages
(``setup.sh`` installs it). A missing browser fails the test, naming the fix, rather than skipping it."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

BROWSERS = ("chromium", "chromium-browser", "google-chrome")


def dump_dom(page: Path, budget_ms: int = 5000) -> str:
    """The DOM of ``page`` after it loaded and its scripts ran (``--dump-dom``), as serialized HTML."""
    browser = next((found for name in BROWSERS if (found := shutil.which(name))), None)
    if browser is None:
        pytest.fail("no Chromium on PATH: `apt-get install chromium` (setup.sh does it on Debian/Ubuntu)")
    # --no-sandbox: CI runs as root, where Chromium's sandbox refuses to start
    done = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                           f"--virtual-time-budget={budget_ms}", "--dump-dom", page.resolve().as_uri()],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout
