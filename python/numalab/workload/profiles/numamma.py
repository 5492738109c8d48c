"""NumaMMA's per-call-site counters -> a :class:`Profile`.

NumaMMA (sampled memory accesses attributed to the allocation that owns them) writes
``call_sites.log`` [src: numamma/numamma src/mem_analyzer.c: print_call_site_summary]: one line per
call site with accesses, ``ID\\tCALLER (size=BYTES) - N buffers. R read access (total weight: W, avg
weight: A). W wr_access``; and, with ``NUMAMMA_DUMP_SINGLE=1`` (settings.dump_single_items),
``callsite_counters_ID.dat`` beside it (``__plot_counters``): one line per page of the site's
buffer (size / 4096 + 1 lines), each thread's sampled accesses to it, tab-separated. A site
without that file has its accesses spread evenly over its pages and threads. Buffers get
addresses of their own here (NumaMMA's files give none), one after the other.
"""

from __future__ import annotations

import re
from pathlib import Path

from numalab.workload.profiles import MAX_THREADS, PAGE, Page, Profile, count, malformed, read_text

LINE = re.compile(r"^(\d+)\t(.*) \(size=(\d+)\) - (\d+) buffers\. (\d+) read access \(total weight: (\d+), "
                  r"avg weight: [^)]*\)\. (\d+) wr_access$")
BASE_PAGE = 1 << 24   # 64 GiB: where the replayed buffers start (any user address would do)


def read(path: str | Path, threads: int | None = None) -> Profile:
    p = Path(path)
    sites = []
    for n, line in enumerate(read_text(p).splitlines(), start=1):
        if not line.strip():
            continue
        m = LINE.match(line)
        if not m:
            raise malformed(p, n, "not a NumaMMA call-site line (ID<tab>CALLER (size=N) - K buffers. R read access (total weight: W, avg weight: A). W wr_access)")
        sid, caller = count(p, n, m[1], "call-site id"), m[2]
        size, reads, writes = (count(p, n, m[i], what) for i, what in ((3, "size"), (5, "read access"), (7, "wr_access")))
        if size == 0:
            raise malformed(p, n, "size=0: a call site's buffer has at least one byte")
        sites.append((n, sid, caller, size, reads, writes))
    if not sites:
        raise malformed(p, 1, "no call sites (NumaMMA lists one line per call site with accesses)")
    tables = {sid: _counters(p.parent / f"callsite_counters_{sid}.dat") for _n, sid, *_ in sites}
    widths = {len(r) for t in tables.values() if t for r in t}
    if len(widths) > 1:
        raise malformed(p.parent / "callsite_counters_*.dat", 1, f"the files give different thread counts ({sorted(widths)})")
    T = widths.pop() if widths else (threads or 1)
    if threads is not None and threads != T:
        raise malformed(p, 1, f"--threads {threads} disagrees with the counters files' {T} threads")
    if T > MAX_THREADS:
        raise malformed(p, 1, f"{T} threads, more than {MAX_THREADS}")
    pages: list[Page] = []
    next_page = BASE_PAGE
    total_rd = total_wr = 0
    for n, sid, caller, size, reads, writes in sites:
        npages = size // PAGE + 1
        table = tables[sid]
        if table is not None and len(table) != npages:
            raise malformed(p.parent / f"callsite_counters_{sid}.dat", len(table) + 1,
                            f"{len(table)} page lines, expected {npages} (size={size} in {p.name} line {n})")
        rows = table or [[(reads + writes) / (npages * T)] * T for _ in range(npages)]
        share = writes / (reads + writes) if reads + writes else 0.0   # this site's own
        for i, row in enumerate(rows):
            pages.append(Page(next_page + i, row, group=f"call site {sid}: {caller}", writes=share * sum(row)))
        next_page += npages + 64   # a gap, so sites stay regions of their own
        total_rd, total_wr = total_rd + reads, total_wr + writes
    overall = total_wr / (total_rd + total_wr) if total_rd + total_wr else 0.0
    return Profile(source=f"NumaMMA {p.name}", threads=T, pages=pages, write_share=overall)


def _counters(path: Path) -> list[list[float]] | None:
    if not path.exists():
        return None
    rows = []
    for n, line in enumerate(read_text(path).splitlines(), start=1):
        fields = line.split("\t")
        if fields and fields[0] == "":
            fields = fields[1:]   # __plot_counters writes "\t%d" per thread
        if not fields or fields == [""]:
            raise malformed(path, n, "an empty page line (expected one tab-separated count per thread)")
        rows.append([float(count(path, n, f.strip(), f"thread {i}'s count")) for i, f in enumerate(fields)])
    return rows
