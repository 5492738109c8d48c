"""numalab-agent's records (``numalab run --record FILE``) -> a :class:`Profile`.

What the agent records of a program's memory (python/numalab/results/agent.py): at each sample the
program's mappings from ``/proc/PID/numa_maps`` (address, pages on each node), and per thread the
kernel's NUMA hinting-fault statistics by memory node (``task_private + task_shared``,
kernel/sched/fair.c: show_numa_stats) with the node it last ran on; the summary has the wall
time. A page-level table it has not: pages are placed as numa_maps last showed them (each
mapping's pages on a node kept together, the lowest node first), and each node's pages receive
the faults the threads took on that node, evenly. Hinting faults are samples of the accesses
(one per page and scan), so only their shares are kept: the replay sweeps the data once per
interval (64 lines per page, an estimate) split as the faults were.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from numalab.workload.profiles import MAX_THREADS, PAGE, Page, Profile, malformed, read_text

MAX_PAGES = 1 << 22   # 16 GiB of 4 KiB pages: a larger program is imported from a sampled tool instead


def read(path: str | Path) -> Profile:
    p = Path(path)
    last_sample: tuple[int, dict[str, Any]] | None = None
    summary: tuple[int, dict[str, Any]] | None = None
    for n, line in enumerate(read_text(p).splitlines(), start=1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as e:
            raise malformed(p, n, f"not JSON ({e.msg} at column {e.colno})") from None
        if not isinstance(rec, dict) or not isinstance(rec.get("type"), str):
            raise malformed(p, n, "not an agent record (a JSON object with a 'type')")
        if rec["type"] == "sample" and rec.get("mappings"):
            last_sample = (n, rec)
        elif rec["type"] == "summary":
            summary = (n, rec)
    if summary is None:
        raise malformed(p, 1, "no 'summary' record (was the agent stopped before the command ended?)")
    if last_sample is None:
        raise malformed(p, summary[0], "no sample with numa_maps mappings (the command ended before the first sample, or numa_maps was unreadable)")
    sn, srec = summary
    threads = srec.get("threads")
    if not isinstance(threads, list) or not threads:
        raise malformed(p, sn, "the summary lists no threads")
    if len(threads) > MAX_THREADS:
        raise malformed(p, sn, f"{len(threads)} threads, more than {MAX_THREADS}")
    faults: list[dict[int, float]] = []
    for t in threads:
        row: dict[int, float] = {}
        for f in (t.get("faults") or []) if isinstance(t, dict) else []:
            try:
                row[int(f["node"])] = row.get(int(f["node"]), 0.0) + float(f.get("task_private", 0)) + float(f.get("task_shared", 0))
            except (KeyError, TypeError, ValueError):
                raise malformed(p, sn, f"a thread's fault entry {json.dumps(f)[:60]} lacks a node or counts") from None
        faults.append(row)
    if not any(faults):
        raise malformed(p, sn, "no NUMA hinting faults (automatic NUMA balancing was off: run with kernel.numa_balancing=1)")
    ln, lrec = last_sample
    placed: list[tuple[int, int, int]] = []   # (first page, node, pages)
    for m in lrec["mappings"]:
        try:
            start = int(m["address"], 16) // PAGE
            per_node = {int(k): int(v) for k, v in (m.get("pages_per_node") or {}).items()}
        except (KeyError, TypeError, ValueError, AttributeError):
            raise malformed(p, ln, "a mapping without a hexadecimal 'address' or numeric 'pages_per_node'") from None
        if m.get("kernelpagesize_kb", 4) != 4:
            per_node = {k: v * int(m["kernelpagesize_kb"]) // 4 for k, v in per_node.items()}
        off = 0
        for node in sorted(per_node):
            if per_node[node] > 0:
                placed.append((start + off, node, per_node[node]))
                off += per_node[node]
    total_pages = sum(c for _s, _n, c in placed)
    if total_pages == 0:
        raise malformed(p, ln, "the mappings hold no pages")
    if total_pages > MAX_PAGES:
        raise malformed(p, ln, f"{total_pages} pages, more than {MAX_PAGES} (import a sampled profile, perf mem, instead)")
    node_pages: dict[int, int] = {}
    for _s, node, c in placed:
        node_pages[node] = node_pages.get(node, 0) + c
    fault_total = sum(sum(r.values()) for r in faults)
    scale = total_pages * 64 / fault_total   # one sweep of the data per interval
    pages: list[Page] = []
    for start, node, c in placed:
        counts = [r.get(node, 0.0) * scale / node_pages[node] for r in faults]
        pages += [Page(start + i, list(counts), node=node, group=f"mapping {start * PAGE:x}") for i in range(c)]
    nodes = [t.get("current_node") if isinstance(t, dict) else None for t in threads]
    wall = srec.get("wall_s")
    return Profile(source=f"numalab-agent {p.name}", threads=len(threads), pages=pages,
                   duration_s=float(wall) if isinstance(wall, (int, float)) and wall > 0 else None,
                   thread_nodes=[int(x) if isinstance(x, int) else 0 for x in nodes])
