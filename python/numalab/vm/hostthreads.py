"""QEMU's threads as the host's scheduler saw them while the guest's command ran
(docs/scheduler.md §10.13), without tracefs: two snapshots of every thread's
``/proc/<pid>/task/<tid>/schedstat`` and ``status``, taken when the guest's job prints
``WINDOW_START`` and ``WINDOW_END`` on its console (``HostSampler.line``, called by
``qemu.boot``'s console reader).

``schedstat`` (Documentation/scheduler/sched-stats.rst; fs/proc/base.c: proc_pid_schedstat()):
the thread's time on a CPU (ns), its time runnable on a run queue but not running
(``run_delay``, ns) and its timeslices (``pcount``: one per switch to it,
kernel/sched/stats.h: sched_info_arrive()). ``status``: ``voluntary_ctxt_switches`` (it
blocked: a vCPU thread's halt, a lock) and ``nonvoluntary_ctxt_switches`` (preempted while
runnable; kernel/sched/core.c: __schedule()). QEMU names its threads with ``-name
...,debug-threads=on`` (``qemu.argv``): ``CPU <n>/TCG`` for a vCPU, the process's own name for
the main loop (its tid is the pid)."""

from __future__ import annotations

import re
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: The lines the guest's job prints on its console around the command (``sched_trace.JOB``).
WINDOW_START = "numalab-host-window start"
WINDOW_END = "numalab-host-window end"
VCPU = re.compile(r"CPU (\d+)/")


@dataclass(frozen=True)
class Stat:
    """One thread's counters at one instant."""

    run_ns: int
    wait_ns: int
    slices: int
    voluntary: int
    involuntary: int
    name: str


def read_stat(task: Path) -> Stat | None:
    """A thread's counters, or None if it is gone."""
    try:
        run, wait, slices = (int(x) for x in (task / "schedstat").read_text().split()[:3])
        status = (task / "status").read_text()
        name = (task / "comm").read_text().rstrip("\n")
    except (OSError, ValueError):
        return None
    v = re.search(r"^voluntary_ctxt_switches:\s*(\d+)", status, re.M)
    n = re.search(r"^nonvoluntary_ctxt_switches:\s*(\d+)", status, re.M)
    return Stat(run, wait, slices, int(v[1]) if v else 0, int(n[1]) if n else 0, name)


def snapshot(pid: int, proc: Path = Path("/proc")) -> dict[int, Stat]:
    """Every thread of ``pid``: ``{tid: Stat}``."""
    out: dict[int, Stat] = {}
    try:
        tasks = list((proc / str(pid) / "task").iterdir())
    except OSError:
        return out
    for task in tasks:
        if task.name.isdigit() and (s := read_stat(task)) is not None:
            out[int(task.name)] = s
    return out


def format_snapshot(t: float, snap: dict[int, Stat]) -> str:
    """One line per thread, ``t tid run_ns wait_ns slices voluntary involuntary name``: how a
    snapshot is kept (and recorded for the tests)."""
    return "".join(f"{t:.6f} {tid} {s.run_ns} {s.wait_ns} {s.slices} {s.voluntary} {s.involuntary} {s.name}\n"
                   for tid, s in sorted(snap.items()))


class HostSampler:
    """The console watcher ``qemu.boot`` calls: ``started(pid)`` once QEMU runs (again after a
    hung boot), ``line(text)`` for each console line; a window mark takes a snapshot at once."""

    def __init__(self, proc: Path = Path("/proc")):
        self.proc = proc
        self.pid: int | None = None
        self.text = ""
        self._lock = threading.Lock()

    def started(self, pid: int) -> None:
        with self._lock:
            self.pid, self.text = pid, ""

    def line(self, text: str) -> None:
        mark = next((m for m in (WINDOW_START, WINDOW_END) if text.rstrip().endswith(m)), None)
        if mark is None or self.pid is None:
            return
        t = time.monotonic()
        snap = snapshot(self.pid, self.proc)
        with self._lock:
            self.text += f"mark {t:.6f} {mark.split()[-1]}\n" + format_snapshot(t, snap)

    def result(self) -> HostThreads | None:
        return parse(self.text, self.pid) if self.pid is not None else None


@dataclass(frozen=True)
class Thread:
    """One thread over the window: its share of a host CPU, mean run and run-queue wait per
    timeslice (s), timeslices and voluntary / involuntary switches per second."""

    tid: int
    name: str
    share: float
    run_per_slice_s: float
    wait_per_slice_s: float
    slices_per_s: float
    voluntary_per_s: float
    involuntary_per_s: float

    @property
    def vcpu(self) -> int | None:
        m = VCPU.match(self.name)
        return int(m[1]) if m else None


@dataclass(frozen=True)
class HostThreads:
    """QEMU's vCPU threads (by vCPU), its main loop, over ``window_s`` host seconds."""

    window_s: float
    vcpus: list[Thread]
    main_loop: Thread | None


def between(tid: int, a: Stat, b: Stat, dt: float) -> Thread:
    slices = b.slices - a.slices
    per = 1 / slices if slices else 0.0
    return Thread(tid, b.name, (b.run_ns - a.run_ns) / 1e9 / dt, (b.run_ns - a.run_ns) / 1e9 * per,
                  (b.wait_ns - a.wait_ns) / 1e9 * per, slices / dt, (b.voluntary - a.voluntary) / dt,
                  (b.involuntary - a.involuntary) / dt)


def parse(text: str, pid: int) -> HostThreads | None:
    """The window from a sampler's text (``mark T start``, the snapshot's lines, ``mark T end``,
    its lines), or None without both marks. Threads present at both marks only."""
    marks: dict[str, float] = {}
    snaps: dict[str, dict[int, Stat]] = {}
    cur: dict[int, Stat] | None = None
    for line in text.splitlines():
        a = line.split(maxsplit=7)
        if len(a) == 3 and a[0] == "mark":
            marks[a[2]] = float(a[1])
            cur = snaps.setdefault(a[2], {})
        elif len(a) == 8 and cur is not None:
            run, wait, slices, vol, invol = (int(x) for x in a[2:7])
            cur[int(a[1])] = Stat(run, wait, slices, vol, invol, a[7])
    if not {"start", "end"} <= set(marks) or marks["end"] <= marks["start"]:
        return None
    dt = marks["end"] - marks["start"]
    s0, s1 = snaps["start"], snaps["end"]
    threads = [between(tid, s0[tid], s1[tid], dt) for tid in sorted(s1) if tid in s0]
    vcpus = sorted((t for t in threads if t.vcpu is not None), key=lambda t: t.vcpu or 0)
    main = next((t for t in threads if t.tid == pid), None)
    return HostThreads(dt, vcpus, main)


def as_json(h: HostThreads) -> dict[str, Any]:
    """``--json``'s ``host``: the window and each thread's figures (``threads``: the vCPUs in
    order, then the main loop)."""
    rows = [dict(vars(t), vcpu=t.vcpu) for t in h.vcpus]
    if h.main_loop is not None:
        rows.append(dict(vars(h.main_loop), vcpu=None, main_loop=True))
    return {"window_s": h.window_s, "threads": rows}
