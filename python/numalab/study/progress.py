"""Sweep progress on stderr: a rich bar on a terminal (done, running, failed, time left), a plain
line every few seconds otherwise (logs, CI, Slurm output files)."""

from __future__ import annotations

import sys
import time
from typing import Any, TextIO


class Progress:
    """``start(total)``, ``update(done, running, failed)``, ``stop()``."""

    def __init__(self, stream: TextIO | None = None, interval_s: float = 5.0):
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty()
        self.interval_s = interval_s
        self._bar: Any = None
        self._last = 0.0
        self._start = 0.0
        self._state = (0, 0, 0)
        self.total = 0

    def start(self, total: int) -> None:
        self.total, self._start = total, time.monotonic()
        if self.tty:
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress as Bar, TextColumn, TimeElapsedColumn, TimeRemainingColumn

            self._bar = Bar(
                TextColumn("runs"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("done, {task.fields[running]} running, {task.fields[failed]} failed"),
                TimeElapsedColumn(),
                TextColumn("eta"),
                TimeRemainingColumn(),
                console=Console(file=self.stream),
                transient=False,
            )
            self._task = self._bar.add_task("runs", total=total, running=0, failed=0)
            self._bar.start()

    def update(self, done: int, running: int, failed: int) -> None:
        self._state = (done, running, failed)
        if self._bar is not None:
            self._bar.update(self._task, completed=done, running=running, failed=failed)
        elif time.monotonic() - self._last >= self.interval_s:
            self._line()

    def _line(self) -> None:
        done, running, failed = self._state
        elapsed = time.monotonic() - self._start
        eta = "?" if done == 0 else _clock(elapsed / done * (self.total - done))
        print(f"runs: {done}/{self.total} done, {running} running, {failed} failed, elapsed {_clock(elapsed)}, eta {eta}", file=self.stream, flush=True)
        self._last = time.monotonic()

    def stop(self) -> None:
        if self._bar is not None:
            self._bar.stop()
        elif self.total:
            self._line()


def _clock(seconds: float) -> str:
    s = int(round(seconds))
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}"
