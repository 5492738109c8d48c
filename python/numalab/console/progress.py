"""One progress display for every long command: what is running, step k of N, the step's name,
the elapsed time (and, where asked, the time left), on stderr.

On a terminal it is a rich bar. Elsewhere (a pipe, a log file, CI, Slurm output) a command that
asks for ``plain`` lines gets one every ``interval_s`` seconds and a last one when it stops::

    runs: 3/10 done, 2 running, 0 failed, elapsed 0:00:05, eta 0:00:12
    report: 2/4 steps (case dgemv), elapsed 0:00:01

and one that does not (its stdout is the answer, its stderr must stay clean) shows nothing.
"""

from __future__ import annotations

import sys
import time
from contextlib import contextmanager
from typing import Any, Iterator, TextIO


class Progress:
    """``start(total)``, ``add(n)`` more steps, ``step(label)`` one done, ``update(done, detail)``,
    ``stop()``; also a context manager (start on entry, stop on exit).

    ``quiet``: show nothing (``--json``, the Python API), but still count. ``delay_s``: show
    nothing until the command has run that long (a fast command stays silent). ``bar=False``:
    plain lines on a terminal too, for a command that writes its own lines on stderr meanwhile
    (a bar would be torn by them). ``redraws_per_s``: how often the bar is drawn (each drawing
    costs rich about 2.5 ms of CPU).
    """

    def __init__(self, what: str, total: int = 0, *, unit: str = "steps", stream: TextIO | None = None, quiet: bool = False,
                 plain: bool = True, bar: bool = True, delay_s: float = 0.0, interval_s: float = 5.0, eta: bool = False, transient: bool = True,
                 redraws_per_s: float = 10.0):
        self.redraws_per_s = redraws_per_s
        self.what, self.total, self.unit = what, total, unit
        self.stream = stream or sys.stderr
        self.tty = not quiet and bar and bool(getattr(self.stream, "isatty", lambda: False)())
        self.lines = not quiet and not self.tty and plain
        self.delay_s, self.interval_s, self.eta, self.transient = delay_s, interval_s, eta, transient
        self.done, self.label, self.detail = 0, "", ""
        self._start = time.monotonic()
        self._bar: Any = None
        self._task: Any = None
        self._last: float | None = None
        self._shown: tuple[int, int, str, str] | None = None

    def __enter__(self) -> "Progress":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def start(self, total: int | None = None) -> "Progress":
        if total is not None:
            self.total = total
        self._start = time.monotonic()
        self._refresh(line=False)
        return self

    def add(self, n: int) -> None:
        self.total += n
        self._refresh(line=False)

    def step(self, label: str = "") -> None:
        self.done, self.label = self.done + 1, label
        self._refresh()

    def update(self, done: int, detail: str = "") -> None:
        self.done, self.detail = done, detail
        self._refresh()

    def stop(self) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None
        elif self.lines and self._due() and self.total and self._state() != self._shown:
            self._line(time.monotonic())

    def _due(self) -> bool:
        return time.monotonic() - self._start >= self.delay_s

    def _state(self) -> tuple[int, int, str, str]:
        return (self.done, self.total, self.label, self.detail)

    def _refresh(self, line: bool = True) -> None:
        """Redraw the bar; a plain line only when a step moved (not for ``start``/``add``)."""
        if not (self.tty or self.lines) or not self._due():
            return
        if self.tty:
            self._show_bar()
            self._bar.update(self._task, completed=self.done, total=self.total, label=self.label, detail=self.detail)
            return
        now = time.monotonic()
        if line and (self._last is None or now - self._last >= self.interval_s):
            self._line(now)

    def _line(self, now: float) -> None:
        elapsed = now - self._start
        text = f"{self.what}: {self.done}/{self.total} {self.unit}" + (f" ({self.label})" if self.label else "")
        text += (f", {self.detail}" if self.detail else "") + f", elapsed {clock(elapsed)}"
        if self.eta:
            text += ", eta " + ("?" if self.done == 0 else clock(elapsed / self.done * max(0, self.total - self.done)))
        print(text, file=self.stream, flush=True)
        self._last, self._shown = now, self._state()

    def _show_bar(self) -> None:
        if self._bar is not None:
            return
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, SpinnerColumn, TextColumn, TimeElapsedColumn, TimeRemainingColumn
        from rich.progress import Progress as Bar

        columns: list[Any] = [SpinnerColumn(), TextColumn(self.what), BarColumn(), MofNCompleteColumn(), TextColumn(self.unit),
                              TextColumn("{task.fields[label]}"), TextColumn("{task.fields[detail]}"), TimeElapsedColumn()]
        if self.eta:
            columns += [TextColumn("eta"), TimeRemainingColumn()]
        self._bar = Bar(*columns, console=Console(file=self.stream), transient=self.transient, refresh_per_second=self.redraws_per_s)
        self._task = self._bar.add_task(self.what, total=self.total, completed=self.done, label=self.label, detail=self.detail)
        self._bar.start()


@contextmanager
def working(what: str, quiet: bool = False, stream: TextIO | None = None) -> Iterator[None]:
    """A spinner with the elapsed time while one long call runs (a terminal only)."""
    stream = stream or sys.stderr
    if quiet or not bool(getattr(stream, "isatty", lambda: False)()):
        yield
        return
    from rich.console import Console
    from rich.progress import Progress as Bar
    from rich.progress import SpinnerColumn, TextColumn, TimeElapsedColumn

    with Bar(SpinnerColumn(), TextColumn(f"{what} ..."), TimeElapsedColumn(), console=Console(file=stream), transient=True) as bar:
        bar.add_task(what, total=None)
        yield


def clock(seconds: float) -> str:
    """``h:mm:ss``."""
    s = int(round(seconds))
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}"
