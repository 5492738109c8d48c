"""A profile -> a workload descriptor the simulator replays (docs/mapping.md §7.5).

Regions are runs of pages at most ``GAP`` untouched pages apart within one allocation (numalize's
structure, NumaMMA's call site, the agent's mapping and node), at their own addresses (so
``interleave`` splits them as it split the program's). Each region gets the one access pattern
of the descriptor language that carries most of its accesses: ``master`` (thread 0 alone),
``block`` (each page mostly used by the thread a static schedule would give it), else ``shared``
(every thread the whole region, the threads' counts evened out). Rates: one access is one 64-byte
line, so a region's traffic is its accesses x 64 bytes. Placement: the first toucher the tool
recorded (an ``init`` phase writing one line per page in that pattern), or the node the page was
on (the region bound there with ``membind``), else the access pattern's own first touch.
"""

from __future__ import annotations

import math
from typing import Any

from numalab.workload.profiles import PAGE, Page, Profile

GAP = 16            # untouched pages a region may span (a gap inside one array)
MAX_REGIONS = 512   # half the descriptor's bound: the widest gap wins when there are more
PER_PHASE = 64    # accesses per phase (descriptor.MAX_ACCESSES)
MATCH = 0.95        # share of a region's accesses a pattern must carry to be chosen


def static_owner(i: int, planes: int, threads: int) -> int:
    """The thread libgomp's schedule(static) gives plane ``i`` (the first ``planes mod threads``
    threads one plane more), as the engine's ``pattern.rs: static_share``."""
    q, r = divmod(planes, threads)
    big = r * (q + 1)
    return i // (q + 1) if i < big else r + (i - big) // q if q else threads - 1


def regions(pages: list[Page]) -> list[list[Page]]:
    pages = sorted(pages, key=lambda p: p.number)
    gap = GAP
    while True:
        out: list[list[Page]] = []
        for p in pages:
            last = out[-1][-1] if out else None
            if last and p.group == last.group and p.node == last.node and p.number - last.number <= gap + 1:
                out[-1].append(p)
            else:
                out.append([p])
        if len(out) <= MAX_REGIONS:
            return out
        gap = gap * 4 + 1


def _pattern(run: list[Page], first: int, planes: int, threads: int) -> tuple[str, float]:
    total = sum(sum(p.counts) for p in run)
    if total <= 0:
        return "shared", 0.0
    t0 = sum(p.counts[0] for p in run)
    if t0 >= MATCH * total:
        return "master", total
    owned = sum(p.counts[static_owner(p.number - first, planes, threads)] for p in run)
    if owned >= MATCH * total:
        return "block", total
    return "shared", total


def _first_touch(run: list[Page], first: int, planes: int, threads: int, pattern: str) -> str:
    touched = [p for p in run if p.first_touch is not None]
    if not touched:
        return "master" if pattern == "shared" else pattern
    by_master = sum(p.first_touch == 0 for p in touched)
    by_owner = sum(p.first_touch == static_owner(p.number - first, planes, threads) for p in touched)
    return "master" if by_master >= by_owner else "block"


def _num(x: float) -> str:
    return repr(float(f"{x:.9g}"))


def _q(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def workload(profile: Profile, name: str) -> str:
    """The descriptor's TOML text."""
    T = profile.threads
    runs = regions(profile.pages)
    w_all = min(max(profile.write_share, 0.0), 1.0)
    lines: list[str] = []
    init: list[str] = []
    replay: list[str] = []
    summary: dict[str, int] = {"master": 0, "block": 0, "shared": 0}
    for k, run in enumerate(runs):
        first = run[0].number
        planes = run[-1].number - first + 1
        nbytes = planes * PAGE
        pattern, total = _pattern(run, first, planes, T)
        summary[pattern] += 1
        # Lines per region byte swept: every thread sweeps all of a shared region.
        x = total * 64 / nbytes / (T if pattern == "shared" else 1)
        passes = max(1, math.ceil(x))
        x /= passes
        # The region's write share: its pages' own where the tool counted writes, else the profile's.
        wr_counted = [(q.writes, sum(q.counts)) for q in run if q.writes is not None]
        w = (sum(a for a, _ in wr_counted) / max(sum(b for _, b in wr_counted), 1e-300)) if wr_counted else w_all
        w = min(max(w, 0.0), 1.0)
        rname = f"r{k}"
        lines += ["", "[[regions]]", f"name = {_q(rname)}", f"bytes = {nbytes}", f"planes = {planes}",
                  f"address = {first * PAGE}"]
        if run[0].group:
            lines.append(f"# {run[0].group}")
        if run[0].node is not None:
            lines.append(f'policy = "membind={run[0].node}"')
            ft = "master"
        else:
            ft = _first_touch(run, first, planes, T, pattern)
        init.append(f'  {{ region = {_q(rname)}, pattern = "{ft}", wr = {_num(1 / 64)} }},')
        if total > 0:
            acc = f'  {{ region = {_q(rname)}, pattern = "{pattern}", rd = {_num(x * (1 - w))}, wr = {_num(x * w)}'
            replay.append(acc + (f", passes = {passes} }}," if passes > 1 else " },"))
    head = [
        f"name = {_q(name)}",
        f"description = {_q(f'Replay of {profile.source}: {len(runs)} regions ({summary}), {T} threads')}",
        f"source = {_q(f'Imported by numalab import from {profile.source} (docs/mapping.md §7): regions, patterns and rates estimated from the profile, not read from a program')}",
        "",
        'program = [{ phases = ["init"] }, { phases = ["replay"], repeat = "reps", timed = true }]',
        "",
        "[params]",
        f"threads = {T}             # the profile's threads",
        "reps = 1                  # repetitions of the profiled interval",
        f"duration_s = {_num(profile.duration_s or 0.0)}   # the time the profile spans (0: unknown, the replay is memory-bound)",
        "ghz = 2.5                 # estimate: the clock the duration is turned into cycles at",
        "",
        "[minimum]",
        "threads = 1",
        "reps = 1",
    ]
    # A phase holds at most 64 accesses (descriptor.MAX_ACCESSES): one phase per 64 regions.
    inits = [init[i:i + PER_PHASE] for i in range(0, len(init), PER_PHASE)] or [[]]
    replays = [replay[i:i + PER_PHASE] for i in range(0, len(replay), PER_PHASE)] or [[]]
    head[4] = "program = [{ phases = [%s] }, { phases = [%s], repeat = \"reps\", timed = true }]" % (
        ", ".join(f'"init{i}"' for i in range(len(inits))), ", ".join(f'"replay{i}"' for i in range(len(replays))))
    phases = ["", "# The first write of every page, one line per page, by the thread the profile says placed it."]
    for i, chunk in enumerate(inits):
        phases += ["[[phases]]", f'name = "init{i}"', "access = [", *chunk, "]", ""]
    phases.append("# The profiled interval: the compute fills the measured time when the memory does not.")
    for i, chunk in enumerate(replays):
        phases += ["[[phases]]", f'name = "replay{i}"', f'cycles = "duration_s * ghz * 1e9 * threads / {len(replays)}"',
                   "access = [", *chunk, "]", ""]
    return "\n".join(head + lines + phases) + "\n"


def summary(profile: Profile) -> dict[str, Any]:
    """What --json prints beside the file: sizes and the patterns chosen."""
    runs = regions(profile.pages)
    pats: dict[str, int] = {"master": 0, "block": 0, "shared": 0}
    for run in runs:
        first = run[0].number
        pats[_pattern(run, first, run[-1].number - first + 1, profile.threads)[0]] += 1
    return {
        "source": profile.source,
        "threads": profile.threads,
        "pages": len(profile.pages),
        "accesses": sum(sum(p.counts) for p in profile.pages),
        "regions": len(runs),
        "patterns": pats,
        "write_share": profile.write_share,
        "duration_s": profile.duration_s,
        # The node each thread ran on, where the tool saw it (agent): bind the replay's threads alike.
        "thread_nodes": profile.thread_nodes,
    }
