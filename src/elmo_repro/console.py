"""Console output: rich in a terminal, plain timestamped lines in logs (DVC, Snakemake, CI)."""

from __future__ import annotations

import sys
import time

from rich.console import Console

_console = Console(stderr=True, highlight=False)


def log(message: str) -> None:
    """Print one progress line to stderr (timestamped, no escape codes when not a terminal)."""
    stamp = time.strftime("%H:%M:%S")
    if _console.is_terminal:
        _console.print(f"[dim]{stamp}[/dim] {message}")
    else:
        print(f"{stamp} {message}", file=sys.stderr, flush=True)


class Throttle:
    """True at most once every ``seconds``: for periodic progress lines inside hot loops."""

    def __init__(self, seconds: float = 30.0):
        self.seconds, self._last = seconds, time.monotonic()

    def __call__(self) -> bool:
        now = time.monotonic()
        if now - self._last >= self.seconds:
            self._last = now
            return True
        return False
