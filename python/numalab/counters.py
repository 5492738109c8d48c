"""The kernel counters numalab reports, from their one definition: the registry in the Rust
model (``numalab_model::counters``, handed over by ``_core.counters()``). Tables, reports and
the result readers take their counter names from here, never from a list of their own.

Each counter is a dict: ``name`` (the kernel's), ``kind`` (``numastat`` per node, ``vmstat``
system-wide, ``sched`` per thread), ``file``, ``topic`` (``allocation``, ``balancing``,
``tiering``, ``thp``), ``unit``, ``gauge``, ``simulated`` (the engine reports it; otherwise
measured runs only), ``meaning`` and ``source`` (where the kernel counts it).
"""

from __future__ import annotations

from functools import cache
from typing import Any

from numalab import _core


@cache
def registry() -> tuple[dict[str, Any], ...]:
    return tuple(_core.counters())


def names(kind: str, topic: str | None = None, simulated: bool | None = None) -> tuple[str, ...]:
    """The names of one kind (``numastat``, ``vmstat``, ``sched``), in registry order; only those
    of ``topic`` and, when ``simulated`` is given, only those the engine does (or does not) report."""
    return tuple(
        c["name"] for c in registry()
        if c["kind"] == kind and (topic is None or c["topic"] == topic) and (simulated is None or c["simulated"] == simulated)
    )

