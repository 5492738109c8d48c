"""Progress on stderr for commands that can take more than a second: a spinner or a bar on a
terminal, nothing otherwise (output that is piped or captured stays clean)."""

from __future__ import annotations

import sys
from contextlib import contextmanager
from typing import Callable, Iterator

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn


def _console(quiet: bool) -> Console | None:
    if quiet or not sys.stderr.isatty():
        return None
    return Console(stderr=True)


@contextmanager
def working(what: str, quiet: bool = False) -> Iterator[None]:
    """A spinner with elapsed time while one long call runs."""
    console = _console(quiet)
    if console is None:
        yield
        return
    with console.status(f"{what} ...", spinner="dots"):
        yield


@contextmanager
def steps(what: str, total: int, quiet: bool = False) -> Iterator[Callable[[], None]]:
    """A bar over ``total`` steps; yields ``advance()``."""
    console = _console(quiet)
    if console is None:
        yield lambda: None
        return
    columns = (SpinnerColumn(), TextColumn(what), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=console, transient=True) as bar:
        task = bar.add_task(what, total=total)
        yield lambda: bar.advance(task)
