"""CPU and node sets in the two spellings numalab meets: Linux cpulists (``0-3,8``, sysfs and
numalab's machine JSON) and hwloc bitmap strings (``0x00000100,0x000000ff``: 32-bit hex words,
most significant first, as ``hwloc_bitmap_asprintf`` writes them). Sets are plain ``set[int]`` of
OS indexes. Parsing and formatting are the model's (``numalab_model::Bitmap`` through ``_core``),
so Python and Rust read the same strings the same way; errors are ``ValueError``.
"""

from __future__ import annotations

from collections.abc import Iterable

from numalab import _core


def parse_hwloc(text: str, limit: int | None = None) -> set[int]:
    """Parse an hwloc bitmap string; ``ValueError`` names the bad word. With ``limit``, a set bit
    at or above it is refused before the set is built (see :mod:`numalab.machine.limits`)."""
    return set(_core.parse_hwloc(text, limit))


def shorten(text: str, width: int = 60) -> str:
    """Errors quote the input, but not a megabyte of it."""
    return text if len(text) <= width else text[: width - 3] + "..."


def format_hwloc(indexes: Iterable[int]) -> str:
    """hwloc's string for a set: ``0x0`` when empty, else every 32-bit word up to the highest."""
    return _core.format_hwloc(sorted(set(indexes)))


def parse_cpulist(text: str) -> set[int]:
    """Parse a Linux cpulist (``0-3,8``; empty string = empty set); ``ValueError`` names the bad token."""
    return set(_core.parse_cpulist(text))


def format_cpulist(indexes: Iterable[int]) -> str:
    """A Linux cpulist, runs collapsed (``0-3,8``)."""
    return _core.format_cpulist(sorted(set(indexes)))
