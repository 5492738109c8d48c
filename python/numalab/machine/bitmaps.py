"""CPU and node sets in the two spellings numalab meets: Linux cpulists (``0-3,8``, sysfs and
numalab's machine JSON) and hwloc bitmap strings (``0x00000100,0x000000ff``: 32-bit hex words,
most significant first, as ``hwloc_bitmap_asprintf`` writes and numalab_model's ``Bitmap``
parses). Sets are plain ``set[int]`` of OS indexes.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

#: hwloc's prefix for a bitmap whose bits are set up to infinity (e.g. an unrestricted allowed set).
INFINITE_PREFIX = "0xf...f"


def parse_hwloc(text: str, limit: int | None = None) -> set[int]:
    """Parse an hwloc bitmap string; ``ValueError`` names the bad word. With ``limit``, a set bit
    at or above it is refused before the set is built (see :mod:`numalab.machine.limits`)."""
    s = text.strip()
    if s.startswith(INFINITE_PREFIX):
        raise ValueError(f"'{text}' is an infinite set; numalab needs the actual CPUs or nodes")
    out: set[int] = set()
    # Words are listed most significant first; an empty word between commas is zero.
    for k, word in enumerate(reversed(s.split(","))):
        word = word.strip()
        if not word:
            continue
        if not _HEX_WORD.fullmatch(word):
            raise ValueError(f"bad bitmap word '{shorten(word)}' in '{shorten(text)}' (expected hex words like 0x000000ff)")
        value = int(word, 16)
        if value >> 32:
            raise ValueError(f"bitmap word '{shorten(word)}' in '{shorten(text)}' has more than 32 bits")
        if value and limit is not None and k * 32 + value.bit_length() > limit:
            raise ValueError(f"'{shorten(text)}' sets bit {k * 32 + value.bit_length() - 1}, beyond the limit of {limit}")
        out.update(k * 32 + b for b in range(32) if value >> b & 1)
    return out


#: One word as hwloc writes it: ``0x`` and hex digits (its value is checked to fit 32 bits).
_HEX_WORD = re.compile(r"(0[xX])?[0-9a-fA-F]+")


def shorten(text: str, width: int = 60) -> str:
    """Errors quote the input, but not a megabyte of it."""
    return text if len(text) <= width else text[: width - 3] + "..."


def format_hwloc(indexes: Iterable[int]) -> str:
    """hwloc's string for a set: ``0x0`` when empty, else every 32-bit word up to the highest."""
    bits = set(indexes)
    if not bits:
        return "0x0"
    words = [0] * (max(bits) // 32 + 1)
    for i in bits:
        words[i // 32] |= 1 << (i % 32)
    return ",".join(f"0x{w:08x}" for w in reversed(words))


def parse_cpulist(text: str) -> set[int]:
    """Parse a Linux cpulist (``0-3,8``; empty string = empty set)."""
    out: set[int] = set()
    for tok in filter(None, (t.strip() for t in text.split(","))):
        a, _, z = tok.partition("-")
        out.update(range(int(a), int(z or a) + 1))
    return out


def format_cpulist(indexes: Iterable[int]) -> str:
    """A Linux cpulist, runs collapsed (``0-3,8``)."""
    runs: list[list[int]] = []
    for i in sorted(set(indexes)):
        if runs and runs[-1][1] + 1 == i:
            runs[-1][1] = i
        else:
            runs.append([i, i])
    return ",".join(str(a) if a == b else f"{a}-{b}" for a, b in runs)
