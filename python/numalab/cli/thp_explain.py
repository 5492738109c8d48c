"""``numalab sim --explain-thp``: where transparent huge pages changed placement
(docs/allocation.md §3.2): which regions got 2 MiB pages and why, the huge pages that hold the
first writes of two threads (each goes whole to the thread that writes first), THP faults that
fell back to 4 KiB pages (v6.13: the faulting node alone, else base pages) and khugepaged's
collapses at its default rate."""

from __future__ import annotations

from typing import Any

from numalab.spec.run import THP_BYTES, THP_DEFAULT

_WRITERS_EVERYWHERE = ("transpose", "dynamic", "shared", "gather", "scatter")


def _static_share(n: int, nt: int, t: int) -> tuple[int, int]:
    """libgomp's schedule(static) without a chunk (the engine's pattern.rs: static_share)."""
    q, r = divmod(n, nt)
    return (t * (q + 1), t * (q + 1) + q + 1) if t < r else (t * q + r, t * q + r + q)


def first_write(w: dict[str, Any], index: int) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """(phase, access) of the first access in program order that writes region ``index``."""
    for step in w["program"]:
        if step["repeat"] < 1:
            continue
        for p in step["phases"]:
            for a in w["phases"][p]["accesses"]:
                if a["region"] == index and a["wr"] > 0:
                    return w["phases"][p], a
    return None


def first_writer(w: dict[str, Any], index: int) -> dict[str, Any] | None:
    """The first access in program order that writes region ``index``."""
    found = first_write(w, index)
    return found[1] if found else None


def shared_pages(region: dict[str, Any], access: dict[str, Any], threads: int) -> int:
    """Huge pages holding the first writes of more than one thread of a static split: the pages
    in which a thread's block starts other than on their first byte."""
    units = region["planes"] * max(1, access.get("rows", 1))
    starts = []
    for t in range(1, threads):
        s, e = _static_share(units, threads, t)
        if e > s:
            starts.append(s * region["bytes"] // units)
    return len({b // THP_BYTES for b in starts if b % THP_BYTES})


def thp_text(doc: dict[str, Any], w: dict[str, Any], thp_setting: str | None) -> str:
    """``thp_setting``: the run's --thp (None: the kernel profile's default)."""
    thp = doc.get("thp") or {}
    mode = thp_setting or THP_DEFAULT.get(doc["kernel"], "madvise")
    whose = f" (the {doc['kernel']} profile's default; --thp to change)" if thp_setting is None else ""
    lines = [f"transparent huge pages: enabled = {mode}{whose}"]
    report = {(r["pid"], r["region"]): r for r in thp.get("regions", [])}
    small = []
    for i, r in enumerate(w["regions"]):
        if not r["thp"]:
            why = {"never": "THP off", "madvise": "not marked MADV_HUGEPAGE"}.get(mode, "smaller than 2 MiB")
            small.append(f"{r['name']} ({why})")
            continue
        pages = -(-r["bytes"] // THP_BYTES)
        for pid in range(1, w.get("processes", 1) + 1):
            rep = report.get((pid, r["name"]), {})
            placed = ", ".join(f"{n} {c}" for n, c in rep.get("fault_alloc", {}).items()) or "none written"
            tag = f"{r['name']}" + (f" (process {pid})" if w.get("processes", 1) > 1 else "")
            lines.append(f"{tag}: {pages} pages of 2 MiB; huge pages placed by first touch: {placed}")
            a = first_writer(w, i)
            if a is None:
                pass
            elif a["pattern"] == "master":
                lines.append("  first written by thread 0 alone: each huge page goes to its node while that node has room")
            elif a["pattern"] in _WRITERS_EVERYWHERE:
                lines.append(f"  first written by every thread across every page ({a['pattern']}): each huge page goes whole"
                             " to the node of whichever thread writes it first, where 4 KiB pages would follow each writer")
            else:
                shared = shared_pages(r, a, w["threads"])
                if shared:
                    lines.append(f"  {shared} huge pages hold the first writes of more than one thread's block (the static split"
                                 " is not 2 MiB aligned): each went whole to the node of the thread that wrote it first; with 4 KiB"
                                 " pages each block would be on its own thread's node")
                else:
                    lines.append("  every thread's block starts on a 2 MiB boundary: huge pages change no placement")
            fallback = rep.get("fault_fallback", {})
            if fallback:
                where = ", ".join(f"{n} {c}" for n, c in fallback.items())
                lines.append(f"  {sum(fallback.values())} THP faults found the faulting node below its watermark and fell back to"
                             f" 4 KiB pages on other nodes ({where}): 6.13 takes no remote huge page for a region not marked"
                             " MADV_HUGEPAGE (mm/mempolicy.c: alloc_pages_mpol)")
            collapsed = rep.get("collapse_alloc", {})
            if collapsed or rep.get("collapse_alloc_failed"):
                where = ", ".join(f"{n} {c}" for n, c in collapsed.items()) or "none"
                lines.append(f"  khugepaged collapsed {sum(collapsed.values())} of them into huge pages on the node holding"
                             f" their base pages ({where}); {rep.get('collapse_alloc_failed', 0)} failed")
            elif fallback:
                lines.append("  khugepaged collapsed none: it scans 8 ranges of 2 MiB per 10 s (pages_to_scan 4096,"
                             " scan_sleep_millisecs 10000)")
    if small:
        lines.append("4 KiB pages: " + ", ".join(small))
    return "\n".join(lines)
