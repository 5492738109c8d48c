"""``numalab sim --explain-alloc``: which thread first touched each region's pages and why
(docs/allocation.md §3.5): the C library's writes at allocation time (glibc's chunk headers,
``calloc``'s clearing), from the engine's report, or the program's first write, from the
workload's phases."""

from __future__ import annotations

from typing import Any

from numalab.cli.thp_explain import first_write

_WHY = {
    "header": "chunk headers (malloc/malloc.c: set_head in _int_malloc / sysmalloc)",
    "zeroing": "calloc clearing memory that was not fresh (malloc/malloc.c: __libc_calloc)",
}
_WRITERS = {
    "master": "thread 0 writes every page",
    "block": "each page goes to the thread whose static block holds it",
    "private": "each page goes to the thread whose static block holds it",
    "stencil": "each page goes to the thread whose static block holds it",
}


def _by(by: Any) -> str:
    if by == "master":
        return "the main thread (thread 0)"
    if by == "each-thread":
        return "every thread, its static share of the chunks"
    return f"thread {by['thread']}"


def _size(b: float) -> str:
    for unit, k in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if b >= k:
            return f"{b / k:.4g} {unit}"
    return f"{b:g} bytes"


def _phase_text(w: dict[str, Any], index: int, rest: str) -> str:
    fw = first_write(w, index)
    if fw is None:
        return f"  {rest}: written by no phase (never placed)"
    phase, access = fw
    name, pattern = phase["name"], access["pattern"]
    who = _WRITERS.get(pattern, "each page goes to whichever thread writes it first")
    return f"  {rest}: first written by phase '{name}' ({pattern}): {who}"


def alloc_text(doc: dict[str, Any], w: dict[str, Any]) -> str:
    """Per region of the workload: who first touched its pages, at allocation or at first write."""
    report = {(r["pid"], r["region"]): r for r in doc.get("alloc", [])}
    procs = w.get("processes", 1)
    lines = ["allocation and first touch (docs/allocation.md §3.5):"]
    for i, region in enumerate(w["regions"]):
        a = region.get("alloc")
        if a is None or a["kind"] in ("static", "mmap"):
            how = "a static array" if a is None or a["kind"] == "static" else "the program's own mmap"
            lines.append(f"{region['name']}: {how}, written by nobody before the program")
            lines.append(_phase_text(w, i, "every page"))
            continue
        for pid in range(1, procs + 1):
            r = report.get((pid, region["name"]))
            if r is None:
                continue
            tag = region["name"] + (f" (process {pid})" if procs > 1 else "")
            size = _size(region["bytes"] / max(1, a["chunks"]))
            arenas = ", ".join("main (brk heap)" if x == 0 else f"#{x}" for x in r["arenas"]) or "none"
            lines.append(
                f"{tag}: {a['kind']} by {_by(a['by'])}, {a['chunks']} x {size}: {r['heap_chunks']} from arenas {arenas}, "
                f"{r['mmap_chunks']} mmapped (at or above the mmap threshold); {r['pages']} pages of 4 KiB"
            )
            if a["freed"]:
                lines.append("  freed before the program starts: its memory went back to the allocator")
                continue
            at_alloc = 0
            for t in r["touched"]:
                nodes = ", ".join(f"{n} {c}" for n, c in t["per_node"].items())
                pages = f"{t['pages']} page" + ("s" if t["pages"] != 1 else "")
                lines.append(f"  at allocation: thread {t['thread']} first touched {pages} ({nodes}): {_WHY[t['why']]}")
                at_alloc += t["pages"]
            rest = r["pages"] - at_alloc
            if rest > 0:
                lines.append(_phase_text(w, i, f"the other {rest} pages"))
            else:
                lines.append("  every page was placed at allocation: later writes, parallel or not, move none")
    return "\n".join(lines)
