"""Plain-text tables drawn with rich: no colour and a fixed width, so the same output on any
terminal, in a pipe and in golden files."""

from __future__ import annotations

import io
from typing import Any, Iterable, Sequence

from rich import box
from rich.console import Console, Group
from rich.table import Table
from rich.text import Text

from numalab.console.text import printable


def render(*items: Any, width: int = 240) -> str:
    """Render rich objects to plain text (no colour, fixed width: same output on any terminal)."""
    buf = io.StringIO()
    console = Console(file=buf, width=width, color_system=None, legacy_windows=False, soft_wrap=False)
    for item in items:
        console.print(item)
    return "\n".join(line.rstrip() for line in buf.getvalue().splitlines())


def table(headers: Sequence[str], rows: Iterable[Sequence[Any]], title: str | None = None, first_left: bool = True) -> Any:
    """A plain table (a rule under the header, no frame); ``title`` on its own line above it."""
    # Cells are user text (labels, names): Text, not markup, and control characters made visible.
    t = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False)
    for i, h in enumerate(headers):
        t.add_column(Text(printable(h)), justify="left" if (i == 0 and first_left) else "right", no_wrap=True)
    for r in rows:
        t.add_row(*(Text(printable(c)) for c in r))
    return Group(Text(printable(title), no_wrap=True), t) if title else t


def pct(value: float | None, digits: int = 1) -> str:
    """A percentage with ``digits`` decimals, ``-`` when there is none."""
    return "-" if value is None else f"{value:.{digits}f}"
