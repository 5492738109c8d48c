"""Progress of ``numalab report`` on stderr, shown only once the report has taken a second: a
rich bar on a terminal, a plain line every few seconds otherwise (logs, CI)."""

from __future__ import annotations

import sys
import time
from typing import Any, TextIO


class Steps:
    """``add(n)`` announces steps, ``step(what)`` finishes one, ``stop()`` ends the display."""

    def __init__(self, stream: TextIO | None = None, delay_s: float = 1.0, interval_s: float = 5.0):
        self.stream = stream or sys.stderr
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.delay_s, self.interval_s = delay_s, interval_s
        self.start = time.monotonic()
        self.total = 2  # reading the store, writing the file
        self.done = 0
        self.what = ""
        self._bar: Any = None
        self._last: float | None = None

    def add(self, n: int) -> None:
        self.total += n
        if self._bar is not None:
            self._bar.update(self._task, total=self.total)

    def step(self, what: str) -> None:
        self.done, self.what = self.done + 1, what
        now = time.monotonic()
        if now - self.start < self.delay_s:
            return
        if self.tty:
            self._show_bar()
            self._bar.update(self._task, completed=self.done, total=self.total, what=what)
        elif self._last is None or now - self._last >= self.interval_s:
            print(f"report: {self.done}/{self.total} steps ({what}), {now - self.start:.0f} s", file=self.stream, flush=True)
            self._last = now

    def _show_bar(self) -> None:
        if self._bar is not None:
            return
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

        self._bar = Progress(SpinnerColumn(), TextColumn("report"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.fields[what]}"),
                             TimeElapsedColumn(), console=Console(file=self.stream), transient=True)
        self._task = self._bar.add_task("report", total=self.total, completed=self.done, what=self.what)
        self._bar.start()

    def stop(self) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None


class Quiet(Steps):
    """No output (the Python API, tests)."""

    def step(self, what: str) -> None:
        self.done += 1
