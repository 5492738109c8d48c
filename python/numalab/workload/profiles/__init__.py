"""Real access profiles turned into workloads the simulator replays (docs/mapping.md §7).

Each importer (``numalize``, ``numamma``, ``perfmem``, ``agent``) reads one tool's output into a
:class:`Profile`: pages with per-thread access counts, who first touched them or where they sat,
the number of threads and, when the tool records it, the time the counts span. :func:`workload`
turns a profile into a descriptor (``replay.py``). A malformed file is refused with
``FILE:LINE: reason`` (:func:`malformed`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from numalab.exceptions import UsageError

PAGE = 4096
#: Most threads a profile may name (the engine's limit, descriptor.MAX_THREADS).
MAX_THREADS = 1 << 14
#: Largest input read (a numalize table of a 100 GB program at 4 KiB pages is about this).
MAX_BYTES = 1 << 31


@dataclass
class Page:
    """One 4 KiB page: its number (address >> 12), accesses per thread, and what the tool saw of
    its placement: the thread that first touched it (numalize) or the node it was on (agent)."""

    number: int
    counts: list[float]
    first_touch: int | None = None
    node: int | None = None
    group: str = ""  # the allocation it belongs to (numalize's structure, NumaMMA's call site)
    writes: float | None = None   # accesses that were writes, when the tool tells them apart


@dataclass
class Profile:
    source: str            # the tool and file, for the descriptor's `source`
    threads: int
    pages: list[Page] = field(default_factory=list)
    write_share: float = 0.0          # share of the accesses that are writes (pages without `writes`)
    duration_s: float | None = None   # the time the counts span, when the tool records it
    thread_nodes: list[int] | None = None   # the node each thread ran on, when the tool records it


def malformed(path: str | Path, line: int, reason: str) -> UsageError:
    """A one-line refusal naming the file and line (the CLI prints ``numalab: <this>``)."""
    return UsageError(f"{path}:{line}: {reason}")


def read_text(path: str | Path) -> str:
    p = Path(path)
    try:
        if p.stat().st_size > MAX_BYTES:
            raise UsageError(f"{p}: larger than {MAX_BYTES >> 30} GiB, the most an importer reads")
        return p.read_text(encoding="utf-8", errors="strict")
    except UnicodeDecodeError as e:
        raise UsageError(f"{p}:1: not UTF-8 text ({e.reason})") from None
    except OSError as e:
        raise UsageError(f"{p}: cannot read ({e.strerror or e})") from None


def count(path: str | Path, line: int, text: str, what: str) -> int:
    """A non-negative integer field."""
    try:
        v = int(text)
    except ValueError:
        raise malformed(path, line, f"{what} '{text[:40]}' is not a whole number") from None
    if v < 0 or v >= 1 << 63:
        raise malformed(path, line, f"{what} {v} is out of range (0 to 2^63-1)")
    return v
