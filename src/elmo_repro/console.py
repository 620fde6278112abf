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


class Progress:
    """Progress of a loop: a rich bar in a terminal, a plain line every ``every`` seconds (and at
    the end) otherwise, because rich prints only the final bar when its output is a log file.

    Use as a context manager; call :meth:`advance` per item and :meth:`note` for a status text
    (e.g. the current loss) shown beside the bar and in the plain lines.
    """

    def __init__(self, description: str, total: int, unit: str = "", every: float = 30.0,
                 completed: int = 0):
        self.description, self.total, self.unit = description, total, unit
        self.completed, self._note, self._printed = completed, "", -1
        self._throttle, self._start, self._bar = Throttle(every), time.monotonic(), None

    def __enter__(self) -> "Progress":
        if _console.is_terminal:
            from rich.progress import (BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn,
                                       TimeRemainingColumn)
            from rich.progress import Progress as RichProgress

            self._bar = RichProgress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                     TimeElapsedColumn(), TimeRemainingColumn(), TextColumn("{task.fields[note]}"),
                                     console=_console, transient=False)
            self._bar.start()
            self._task = self._bar.add_task(self.description, total=self.total, completed=self.completed, note="")
        return self

    def advance(self, n: int = 1) -> None:
        self.completed += n
        if self._bar is not None:
            self._bar.update(self._task, completed=self.completed, note=self._note)
        elif self._throttle():
            self._line()

    def note(self, text: str) -> None:
        self._note = text

    def _line(self) -> None:
        self._printed = self.completed
        share = f" ({100 * self.completed / self.total:.0f}%)" if self.total else ""
        unit = f" {self.unit}" if self.unit else ""
        note = f", {self._note}" if self._note else ""
        log(f"{self.description}: {self.completed:,}/{self.total:,}{unit}{share}, "
            f"{time.monotonic() - self._start:.0f} s{note}")

    def __exit__(self, *exc) -> None:
        if self._bar is not None:
            self._bar.stop()
        elif self._printed != self.completed:
            self._line()
