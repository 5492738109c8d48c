"""``perf mem`` samples (``perf script`` with data addresses) -> a :class:`Profile`.

Captured as ``perf mem record [-t load|store] -- PROGRAM`` then
``perf script -F tid,cpu,time,period,event,addr`` (``pid,tid`` and a missing ``period`` are read
too): one line per sample, ``[PID/]TID [CPU] TIME: [PERIOD] EVENT: ADDR`` (tools/perf/builtin-script.c:
process_sample_event prints the fields in that order). Each sample stands for ``period`` accesses
(1 without it) to the page of its data address; an event whose name holds ``store`` is a write.
Threads are numbered by thread id (the lowest, usually the main thread, is thread 0); the samples'
first and last times give the interval they span. Samples without a data address (0) are
skipped, as ``perf mem report`` does.
"""

from __future__ import annotations

import re
from pathlib import Path

from numalab.workload.profiles import MAX_THREADS, PAGE, Page, Profile, malformed, read_text

LINE = re.compile(r"^\s*(?:\S+\s+)??(?:(\d+)/)?(\d+)\s+\[(\d+)\]\s+(\d+\.\d+):\s+(?:(\d+)\s+)?(\S+):\s+([0-9a-fA-F]+)\s*$")


def read(path: str | Path) -> Profile:
    p = Path(path)
    samples: list[tuple[int, int, float, bool]] = []
    times: list[float] = []
    for n, line in enumerate(read_text(p).splitlines(), start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        m = LINE.match(line)
        if not m:
            raise malformed(p, n, "not a perf mem sample (expected `perf script -F tid,cpu,time,period,event,addr`: TID [CPU] TIME: PERIOD EVENT: ADDR)")
        tid, t, period, event, addr = int(m[2]), float(m[4]), int(m[5]) if m[5] else 1, m[6], int(m[7], 16)
        if period <= 0:
            raise malformed(p, n, f"period {period}: a sample stands for at least one access")
        times.append(t)
        if addr == 0:
            continue
        samples.append((tid, addr // PAGE, float(period), "store" in event.lower()))
    if not samples:
        raise malformed(p, 1, "no samples with a data address (record with `perf mem record`, print with `perf script -F tid,cpu,time,period,event,addr`)")
    tids = sorted({s[0] for s in samples})
    if len(tids) > MAX_THREADS:
        raise malformed(p, 1, f"{len(tids)} threads, more than {MAX_THREADS}")
    index = {tid: i for i, tid in enumerate(tids)}
    pages: dict[int, Page] = {}
    writes = total = 0.0
    for tid, number, weight, store in samples:
        page = pages.setdefault(number, Page(number, [0.0] * len(tids)))
        page.counts[index[tid]] += weight
        page.writes = (page.writes or 0.0) + (weight if store else 0.0)
        total += weight
        writes += weight if store else 0.0
    span = max(times) - min(times)
    return Profile(source=f"perf mem {p.name}", threads=len(tids), pages=list(pages.values()),
                   write_share=writes / total, duration_s=span if span > 0 else None)
