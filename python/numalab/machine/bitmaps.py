"""CPU and node sets in the two spellings numalab meets: Linux cpulists (``0-3,8``, sysfs and
numalab's machine JSON) and hwloc bitmap strings (``0x00000100,0x000000ff``: 32-bit hex words,
most significant first, as ``hwloc_bitmap_asprintf`` writes and numalab_model's ``Bitmap``
parses). Sets are plain ``set[int]`` of OS indexes.
"""

from __future__ import annotations

from collections.abc import Iterable

#: hwloc's prefix for a bitmap whose bits are set up to infinity (e.g. an unrestricted allowed set).
INFINITE_PREFIX = "0xf...f"


def parse_hwloc(text: str) -> set[int]:
    """Parse an hwloc bitmap string; ``ValueError`` names the bad word."""
    s = text.strip()
    if s.startswith(INFINITE_PREFIX):
        raise ValueError(f"'{text}' is an infinite set; numalab needs the actual CPUs or nodes")
    out: set[int] = set()
    # Words are listed most significant first; an empty word between commas is zero.
    for k, word in enumerate(reversed(s.split(","))):
        word = word.strip()
        if not word:
            continue
        try:
            value = int(word, 16)
        except ValueError:
            raise ValueError(f"bad bitmap word '{word}' in '{text}' (expected hex words like 0x000000ff)") from None
        if value >> 32:
            raise ValueError(f"bitmap word '{word}' in '{text}' has more than 32 bits")
        out.update(k * 32 + b for b in range(32) if value >> b & 1)
    return out


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
