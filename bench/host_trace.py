"""How the host stops QEMU's threads while a guest's scheduler case runs, from the host's own
scheduler trace (docs/scheduler.md §10.28): per thread over the guest's command window, its
run time, its switches out while still runnable (involuntary) and the wait after each until it
runs again, the wait after each wake-up, and what ran on the core instead.

  python bench/host_trace.py record CASE OUT [--wake-path] [--beside-loop]
                                                  # perf record around `numalab vm check --moves`,
                                                  # beside one busy loop in its own session (LOOP)
  python bench/host_trace.py report OUT           # the figures (OUT.perf, OUT.json, OUT.proc),
                                                  # each vCPU thread's time split (§10.34), and
                                                  # the host's two CPUs, beside the loop (§10.55)
  python bench/host_trace.py model CASE [SEEDS] [--condition NAME]
                                                  # the host model's, under a check.CONDITIONS
                                                  # condition (idle by default)

`record` runs the check under `perf record -k CLOCK_MONOTONIC -a` with the tracepoints
`sched:sched_switch` (its `prev_state`: R / R+ when the thread left the core runnable,
kernel/sched/core.c: __schedule() with `preempt` or a runnable `prev`) and `sched:sched_wakeup`,
and keeps the window marks' times (`hostthreads.HostSampler` takes them with `time.monotonic()`,
the same clock) and the sampler's /proc snapshots, so `report` can check its counts against
/proc's (§10.13)."""

from __future__ import annotations

import json
import re
import statistics
import subprocess
import sys
from collections import Counter, defaultdict
from pathlib import Path
from collections.abc import Iterator
from typing import Any

SWITCH = re.compile(
    r"\s(\d+\.\d+):\s+sched:sched_switch:\s+prev_comm=(.*?) prev_pid=(\d+) prev_prio=\d+ prev_state=(\S+) ==> "
    r"next_comm=(.*?) next_pid=(\d+) next_prio=\d+")
WAKEUP = re.compile(r"\s(\d+\.\d+):\s+sched:sched_wakeup:\s+comm=(.*?) pid=(\d+) prio=\d+ target_cpu=(\d+)")
CPU = re.compile(r"\[(\d+)\]")
# perf script's header: the task current on the CPU that emitted the event (for a wake-up, the
# waker, or the idle task when the wake-up was queued to an idle CPU, below), its tid, the CPU.
BINS = (10e-6, 30e-6, 0.1e-3, 0.3e-3, 1e-3, 3e-3, float("inf"))   # spells' lengths counted below each
SHORT_S = 0.3e-3   # a blocked spell's length: the valley between lock waits and halts (BINS)
SKEW_S = 50e-6   # the most a wake-up is traced after its switch-in (the CPUs' clocks, §10.28)
HEADER = re.compile(r"^\s*(.+?)\s+(\d+)\s+\[(\d+)\]\s+(\d+\.\d+):")


# `record --wake-path` adds the events of a wake-up's path to an idle host CPU (§10.46): the
# waker's `sched_waking` (kernel/sched/core.c: try_to_wake_up(), before the target is chosen),
# the IPI sent to the target (ipi:ipi_send_cpu, `ttwu_queue_wakelist()` →
# `__smp_call_single_queue()`, or a reschedule IPI) or none (`sched_wake_idle_without_ipi`: the
# target polls), and the target's exit from idle (power:cpu_idle with state -1, kernel/sched/idle.c:
# cpuidle_idle_call() / default_idle_call() around the halt) and its IPI handler's entry.
WAKE_PATH = ("sched:sched_waking", "sched:sched_wake_idle_without_ipi", "power:cpu_idle", "ipi:ipi_send_cpu",
             "irq_vectors:call_function_single_entry", "irq_vectors:reschedule_entry")


#: `record --beside-loop`: the condition "busy-loop" as §10.18 and §10.51 ran it, one shell loop in a
#: session of its own (so an autogroup of its own, kernel/sched/autogroup.c: sched_autogroup_create_attach()
#: at setsid()), started this long before the trace.
LOOP = ("setsid", "sh", "-c", "while :; do :; done")
LOOP_LEAD_S = 2.0


def _cpu_ticks(pid: int) -> int:
    """utime + stime of /proc/PID/stat, in clock ticks."""
    f = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(f[11]) + int(f[12])


def record(case: str, out: str, wake_path: bool = False, beside_loop: bool = False) -> None:
    events = ["sched:sched_switch", "sched:sched_wakeup"] + (list(WAKE_PATH) if wake_path else [])
    cmd = ["perf", "record", "-q", "-k", "CLOCK_MONOTONIC", "-a", "-m", "4096"] + [x for e in events for x in ("-e", e)] + [
        "-o", out + ".perf", "--", sys.executable, __file__, "_run", case, out]
    if not beside_loop:
        subprocess.run(cmd, check=True)
        return
    # perf traces every CPU (-a), so the loop's own switches are in the trace; `report` finds
    # them by the pid kept in OUT.loop, with its CPU time by /proc over the recording.
    import os
    import time

    loop = subprocess.Popen(LOOP)   # setsid execs sh in place (python's child leads no group)
    try:
        time.sleep(LOOP_LEAD_S)
        group = Path(f"/proc/{loop.pid}/autogroup").read_text().split()[0]
        a, ta = _cpu_ticks(loop.pid), time.monotonic()
        subprocess.run(cmd, check=True)
        b, tb = _cpu_ticks(loop.pid), time.monotonic()
        hz = os.sysconf("SC_CLK_TCK")
        Path(out + ".loop").write_text(f"pid {loop.pid}\nautogroup {group}\nrecording_s {tb - ta:.3f}\n"
                                       f"cpu_s {(b - a) / hz:.3f}\nshare {(b - a) / hz / (tb - ta):.3f}\n")
    finally:
        loop.kill()
        loop.wait()


def _run(case: str, out: str) -> None:
    """The check itself, its sampler's marks and snapshots kept beside the trace."""
    from numalab.cli.main import run
    from numalab.vm import hostthreads

    result = hostthreads.HostSampler.result

    def keep(self: hostthreads.HostSampler) -> hostthreads.HostThreads | None:
        Path(out + ".proc").write_text(f"pid {self.pid}\n" + self.text)
        return result(self)

    hostthreads.HostSampler.result = keep  # type: ignore[method-assign]
    line = hostthreads.HostSampler.line
    idle = Path(out + ".cpuidle")

    def mark(self: hostthreads.HostSampler, text: str) -> None:
        # Each host CPU's halts by cpuidle state, counted by the kernel at the window's marks
        # (drivers/cpuidle/sysfs.c: `usage`, `time` in µs): the idle time this trace cannot see
        # on a CPU whose idle task emits no events (§10.46).
        if text.rstrip().endswith(hostthreads.WINDOW_START) and self.pid is not None:
            # QEMU's autogroup, to set beside the loop's (OUT.loop).
            Path(out + ".autogroup").write_text(Path(f"/proc/{self.pid}/autogroup").read_text())
        if text.rstrip().endswith((hostthreads.WINDOW_START, hostthreads.WINDOW_END)):
            rows = [f"{d.parent.parent.name} {d.name} {(d / 'usage').read_text().strip()} {(d / 'time').read_text().strip()}"
                    for d in sorted(Path("/sys/devices/system/cpu").glob("cpu[0-9]*/cpuidle/state[0-9]*"))]
            with idle.open("a") as f:
                f.write(f"mark {text.rstrip().split()[-1]}\n" + "".join(r + "\n" for r in rows))
        line(self, text)

    hostthreads.HostSampler.line = mark  # type: ignore[method-assign]
    sys.stdout = open(out + ".json", "w")
    run(["vm", "check", "--moves", "--json", "--case", case])


def kind(comm: str, pid: int, qemu: int, tids: set[int]) -> str:
    if pid in tids:
        if pid == qemu:
            return "qemu main loop"
        return "qemu vCPU" if comm.startswith("CPU ") else f"qemu {comm}"
    if pid == 0:
        return "idle"
    for k in ("kworker", "ksoftirqd", "rcu", "perf", "python", "numalab", "migration"):
        if comm.startswith(k):
            return k
    return comm


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))] if xs else float("nan")


def _overlap(spans: dict[str, list[tuple[float, float]]], idle: list[tuple[float, float]]) -> dict[str, float]:
    """Core-seconds idle while at least one vCPU thread is in each kind of spell: a sweep over the
    spells' and the idle intervals' ends."""
    ev: list[tuple[float, str, int]] = [(a, "idle", 1) for a, _ in idle] + [(b, "idle", -1) for _, b in idle]
    for k, xs in spans.items():
        ev += [(a, k, 1) for a, _ in xs] + [(b, k, -1) for _, b in xs]
    ev.sort()
    n: Counter[str] = Counter()
    got: dict[str, float] = defaultdict(float)
    last = ev[0][0] if ev else 0.0
    for t, k, d in ev:
        for kk in spans:
            if n[kk] > 0:
                got[kk] += n["idle"] * (t - last)
        got["any"] += n["idle"] * (t - last)
        last = t
        n[k] += d
    return dict(got)


def traced(text: str) -> Iterator[tuple[float, int, str, re.Match[str]]]:
    """Each line of `perf script`'s output with an event header: its time, CPU, text and header
    (its task's comm and tid)."""
    for ln in text.splitlines():
        if (h := HEADER.match(ln)) is not None:
            yield float(h[4]), int(h[3]), ln, h


def split(text: str, t0: float, t1: float, qemu: int, vcpus: set[int], tids: set[int]) -> dict:
    """Each vCPU thread's time over the window as running, queued (runnable, not running: after an
    involuntary switch, after a wake-up), or blocked (switched out in S / D), the blocked spells
    by who woke them: another vCPU thread (QEMU's BQL handed on at its unlock, or a kick), the
    main loop (a halted vCPU's interrupt, or the BQL handed on by it), or another task; and the
    host's two cores: run time by kind of task and idle time, and the idle time while some vCPU
    thread is blocked of each kind.

    A wake-up onto an idle CPU is queued there and traced by that CPU when it takes the IPI, the
    idle task current (Linux `kernel/sched/core.c: ttwu_queue_cond()`, `ttwu_queue_wakelist()`,
    `sched_ttwu_pending()`); its waker is then taken as the task the other CPU ran (2 CPUs)."""
    cur: dict[int, tuple[int, float]] = {}
    state: dict[int, tuple[str, float]] = {}
    spells: dict[int, dict[str, list[float]]] = {v: defaultdict(list) for v in vcpus}
    spans: dict[str, list[tuple[float, float]]] = defaultdict(list)
    idle: list[tuple[float, float]] = []
    ran: dict[str, float] = defaultdict(float)
    queued_wakes: Counter[str] = Counter()

    pending: dict[int, tuple[float, float]] = {}   # tid -> (blocked since, switched in at)
    short_s: dict[int, dict[str, float]] = defaultdict(lambda: defaultdict(float))   # time in spells shorter than SHORT_S
    woke_on: dict[int, int] = {}   # tid -> the CPU its last wake-up targeted

    def add(tid: int, kind_: str, since: float, t: float) -> None:
        if t0 <= t <= t1 or since < t1 < t:
            spells[tid][kind_].append(t - since)
        a, b = max(since, t0), min(t, t1)
        if b > a:
            spells[tid][kind_ + " s"].append(b - a)
            short_s[tid][kind_] += (b - a) * (t - since < SHORT_S)
            spans[kind_].append((a, b))
            if kind_.startswith("blocked, woken"):
                # Short spells are lock waits, long ones halts or waits behind a preempted holder.
                spans[kind_ + (" <" if t - since < SHORT_S else " >=") + f" {SHORT_S * 1e3:g} ms"].append((a, b))

    def who(pid: int) -> str:
        return "vCPU" if pid in vcpus else "main loop" if pid == qemu else "QEMU other" if pid in tids else \
            "idle" if pid == 0 else "other"

    for t, cpu, ln, h in traced(text):
        if (m := SWITCH.search(ln)) is not None:
            prev, nxt, st = int(m[3]), int(m[6]), m[4]
            for tid in [x for x in pending if t - pending[x][1] > SKEW_S or x == prev]:
                add(tid, "blocked, waker not traced", *pending.pop(tid))
            if cpu in cur and cur[cpu][0] == 0 and prev in vcpus and state.get(prev, ("",))[0] == "queued, woken" \
                    and woke_on.get(prev) == cpu and state[prev][1] >= cur[cpu][1]:
                # Woken onto this idle CPU and switched out with no switch-in traced: the host's
                # trace lacks most switches from the idle task (§10.34). An idle CPU runs what it
                # is woken for at once, so it ran from its wake-up.
                w = state[prev][1]
                a, b = max(cur[cpu][1], t0), min(w, t1)
                if b > a:
                    ran["idle"] += b - a
                    idle.append((a, b))
                state[prev] = ("running", w)
                cur[cpu] = (prev, w)
            if cpu in cur:
                a, b = max(cur[cpu][1], t0), min(t, t1)
                if b > a and cur[cpu][0] == prev:
                    ran[who(prev)] += b - a
                    if prev == 0:
                        idle.append((a, b))
                elif b > a:
                    ran["not traced"] += b - a
            cur[cpu] = (nxt, t)
            if prev in vcpus and prev in state:
                k, since = state[prev]
                # Switched out again with no switch-in traced since it blocked (perf 6.1 on the
                # host's 6.18 misses some, /proc's counts say the switches out are all there).
                add(prev, "blocked, switch-in not traced" if k == "blocked" else k, since, t)
                state[prev] = ("queued, preempted" if st.startswith("R") else "blocked", t)
            if nxt in vcpus:
                if state.get(nxt, ("",))[0] == "blocked":
                    # Its wake-up may be traced by the other CPU a few us after this switch-in
                    # (the host's CPUs' clocks differ, the report's note): wait for it.
                    pending[nxt] = (state[nxt][1], t)
                elif nxt in state:
                    add(nxt, *state[nxt], t)
                state[nxt] = ("running", t)
        elif (m := WAKEUP.search(ln)) is not None:
            pid = int(m[3])
            if pid not in vcpus or (pid not in pending and state.get(pid, ("",))[0] != "blocked"):
                continue
            waker = int(h[2])
            woke_on[pid] = int(m[4])
            if waker == 0 and cpu == int(m[4]):
                others = [c for c in cur if c != cpu]
                waker = cur[others[0]][0] if len(others) == 1 else -1
                if t0 <= t <= t1:
                    queued_wakes[who(waker)] += 1
            if pid in pending:
                add(pid, "blocked, woken by " + who(waker), *pending.pop(pid))
            else:
                add(pid, "blocked, woken by " + who(waker), state[pid][1], t)
                state[pid] = ("queued, woken", t)
    dt = t1 - t0
    rows = []
    for v in sorted(vcpus):
        row: dict[str, dict[str, Any]] = {}
        for k in sorted(k for k in spells[v] if not k.endswith(" s")):
            xs = spells[v][k]
            row[k] = {"per_s": len(xs) / dt, "share": sum(spells[v][k + " s"]) / dt,
                      "median_ms": 1e3 * statistics.median(xs), "p90_ms": 1e3 * pct(xs, 0.9),
                      "short_share": short_s[v][k] / dt,
                      "per_s_by_ms": {f"<{b * 1e3:g}": sum(x < b for x in xs) / dt for b in BINS}}
        rows.append({"tid": v, "kinds": row})
    return {"vcpus": rows, "cores": {k: x / dt for k, x in ran.items()},
            "idle_while": {k: x / dt for k, x in _overlap(spans, idle).items()},
            "woken_on_idle_cpu_by": {k: n / dt for k, n in queued_wakes.items()}}


#: The kinds of a vCPU thread's spell `spells()` and the model (`sched_host_spells`,
#: docs/scheduler.md §10.51) give as distributions: the wait from a wake-up to the switch-in,
#: after a blocked spell of at least `SHORT_S` (a halt) or shorter (a lock wait); the wait after
#: an involuntary switch until it runs again; a run from its switch-in to its switch-out.
SPELL_KINDS = ("woken_after_halt", "woken_after_lock", "preempted", "run")
TAILS_S = (1e-3, 2e-3, 4e-3)


def dist(xs: list[float]) -> dict[str, float]:
    """Order statistics (element floor(q * n) of the sorted list, as the model's) and the counts
    over `TAILS_S`, seconds, keyed as the model's ``sched_host_spells``."""
    if not xs:
        return {"n": 0}
    d: dict[str, float] = {"n": len(xs), "median_s": pct(xs, 0.5), "p90_s": pct(xs, 0.9), "p99_s": pct(xs, 0.99),
                           "max_s": max(xs), "mean_s": statistics.fmean(xs)}
    for b in TAILS_S:
        d[f"over_{b * 1e3:g}ms"] = sum(x > b for x in xs)
    return d


def spells(text: str, t0: float, t1: float, vcpus: set[int]) -> dict[str, Any]:
    """Each vCPU thread's spells (`SPELL_KINDS`) ending inside the window, per thread and pooled,
    from the trace's switches and wake-ups. A wake-up traced up to `SKEW_S` after the switch-in
    (the host's CPUs' clocks, `split()`) is a wait of 0; a switch the trace lacks (a switch-out
    with no switch-in since, a switch-in after a block with no wake-up) ends the spell uncounted."""
    got: dict[int, dict[str, list[float]]] = {v: {k: [] for k in SPELL_KINDS} for v in vcpus}
    at: dict[int, tuple[str, float, float]] = {}   # tid -> (state, since, blocked since)
    lost: Counter[str] = Counter()
    cur: dict[int, tuple[int, float]] = {}   # CPU -> (the task it switched to, when)
    woke_on: dict[int, int] = {}   # tid -> the CPU its last wake-up targeted

    def done(tid: int, k: str, since: float, t: float) -> None:
        if t0 <= t <= t1:
            got[tid][k].append(max(0.0, t - since))

    for t, cpu, ln, _ in traced(text):
        if (m := SWITCH.search(ln)) is not None:
            prev, nxt = int(m[3]), int(m[6])
            if prev in vcpus:
                st, since, blocked = at.get(prev, ("", 0.0, 0.0))
                if st == "woken" and woke_on.get(prev) == cpu and cur.get(cpu, (-1, t))[0] == 0 \
                        and cur[cpu][1] <= since:
                    # Woken onto this idle CPU, its switch-in from the idle task not traced (the
                    # host's trace lacks most, §10.34, `split()`): an idle CPU runs what it is
                    # woken for at once, so it ran from its wake-up.
                    done(prev, "woken_after_halt" if since - blocked >= SHORT_S else "woken_after_lock", since, since)
                    lost["switch-in from idle not traced, taken at the wake-up"] += t0 <= since <= t1
                    st = "running"
                if st in ("running", "running, wake-up not traced"):
                    done(prev, "run", since, t)
                    lost["wake-up not traced"] += st != "running" and t0 <= t <= t1
                elif st:
                    lost["switch-in not traced, " + st] += t0 <= t <= t1
                at[prev] = ("preempted", t, 0.0) if m[4].startswith("R") else ("blocked", t, t)
            if nxt in vcpus:
                st, since, blocked = at.get(nxt, ("", 0.0, 0.0))
                if st == "woken":
                    done(nxt, "woken_after_halt" if since - blocked >= SHORT_S else "woken_after_lock", since, t)
                elif st == "preempted":
                    done(nxt, "preempted", since, t)
                # Blocked with no wake-up yet: it may be traced just after (below).
                at[nxt] = ("running, wake-up not traced" if st == "blocked" else "running", t, blocked)
            cur[cpu] = (nxt, t)
        elif (m := WAKEUP.search(ln)) is not None:
            pid = int(m[3])
            st, since, blocked = at.get(pid, ("", 0.0, 0.0))
            if pid not in vcpus:
                continue
            if st == "blocked":
                at[pid] = ("woken", t, blocked)
                woke_on[pid] = int(m[4])
            elif st == "running, wake-up not traced" and t - since <= SKEW_S:
                done(pid, "woken_after_halt" if since - blocked >= SHORT_S else "woken_after_lock", t, t)
                at[pid] = ("running", since, blocked)
    pooled = {k: [x for v in vcpus for x in got[v][k]] for k in SPELL_KINDS}
    return {"vcpus": {v: {k: dist(got[v][k]) for k in SPELL_KINDS} for v in sorted(vcpus)},
            "all": {k: dist(pooled[k]) for k in SPELL_KINDS}, "lost": dict(lost)}


def show_spells(rows: list[tuple[str, dict[str, dict[str, float]]]]) -> None:
    """One line per (thread, kind): count, median / p90 / p99 / max ms, counts over 1 / 2 / 4 ms."""
    print("vCPU thread | kind | n | median / p90 / p99 / max ms | over 1 / 2 / 4 ms")
    for name, d in rows:
        for k in SPELL_KINDS:
            x = d[k]
            if not x["n"]:
                print(f"{name} | {k} | 0 | - | -")
                continue
            q = " / ".join(f"{1e3 * x[f]:.3f}" for f in ("median_s", "p90_s", "p99_s", "max_s"))
            print(f"{name} | {k} | {x['n']} | {q} | " + " / ".join(str(x[f"over_{b * 1e3:g}ms"]) for b in TAILS_S))


#: How `cpus()` names what a woken thread's switch-in took the CPU from: the busy loop or a
#: thread of QEMU switched out runnable (preempted, or its slice ended at a tick), any task
#: switched out blocked (it blocked or halted; the CPU then picks the next), the idle task, or
#: another task switched out runnable.
TOOK_FROM = ("loop", "QEMU", "a block", "idle", "other")
LOOP_BIN_S = 0.1   # `cpus()`'s bins of the loop's CPU time per host CPU


def cpus(text: str, t0: float, t1: float, tids: set[int], vcpus: set[int], loop: int | None) -> dict[str, Any]:
    """The host's CPUs over the window beside a busy loop (pid `loop`; docs/scheduler.md §10.55):

    - `at_once`: the share of the window in which 0, 1, 2, ... of QEMU's threads run at once, and
      `loop_on`: the share each CPU runs the loop;
    - `woken`: each wake-up of a vCPU thread blocked at least `SHORT_S` (`halt`) or less (`lock`),
      by where it was woken (`target_cpu` the CPU the loop last ran on, or another) and what its
      switch-in took the CPU from (`TOOK_FROM`), with the wait from the wake-up to the switch-in;
    - `loop`: the loop's moves between CPUs, its time per CPU in bins of `LOOP_BIN_S`, each spell
      it is off the CPU it last ran on and each run of a QEMU thread on that CPU meanwhile;
    - `lock_blocks`: each blocked spell of a vCPU thread shorter than `SHORT_S` (a wait on the
      BQL, §10.51's split) by whether, as it blocked, another thread of QEMU ran on another CPU or
      was queued runnable (the two ways a lock is found held, §10.51);
    - `others`: the CPU time of any other task by name (work beside the measurement), and `bins`:
      per `LOOP_BIN_S` the loop's share of each CPU and the share with two QEMU threads at once.

    Between two traced switches a CPU ran the task the second switches out (some switches out
    are missing from this host's trace; the time where the first's next differs is
    `untraced_share`); a thread on two CPUs at once (its switch-in traced before its switch-out,
    the CPUs' clocks, §10.28) counts once. A wake-up traced up to `SKEW_S` after its switch-in is
    a wait of 0, as in `spells()`."""
    cur: dict[int, tuple[int, float]] = {}
    spans: list[tuple[float, float, int, int]] = []   # (from, to, CPU, task) between two traced switches
    comms: dict[int, str] = {}
    untraced = 0.0   # the part of `spans` whose first switch's next is not the second's prev
    loop_cpu: int | None = None
    moves = 0
    off_since: float | None = None   # the loop switched out runnable, since
    off: list[float] = []
    on_loop_cpu: list[float] = []   # runs of QEMU's threads on the loop's CPU while it waits there
    queued: set[int] = set()   # QEMU's threads switched out runnable, not yet back
    blocked: dict[int, tuple[float, bool, bool]] = {}   # vCPU tid -> (since, another QEMU thread ran, one queued)
    woken: dict[int, tuple[float, str, int, int | None]] = {}   # tid -> (at, halt / lock, target CPU, the loop's then)
    pending: dict[int, tuple[float, str, float]] = {}   # switched in before its wake-up: (at, took from, blocked since)
    waits: dict[str, dict[str, dict[str, list[float]]]] = {
        k: {w: {f: [] for f in TOOK_FROM} for w in ("loop's CPU", "other CPU")} for k in ("halt", "lock")}
    moved: Counter[str] = Counter()   # woken on one CPU, run on the other
    lock_blocks: Counter[str] = Counter()
    lost: Counter[str] = Counter()

    def inside(t: float) -> bool:
        return t0 <= t <= t1

    for t, cpu, ln, _ in traced(text):
        if (m := SWITCH.search(ln)) is not None:
            prev, nxt, st = int(m[3]), int(m[6]), m[4]
            comms[prev] = m[2]
            if cpu in cur:
                # The CPU ran, up to this switch, the task it switches out: a switch the trace
                # lacks in between (some tasks' switches out are not traced on this host, §10.55)
                # left the task of the last switch-in current in the trace only.
                a, b = max(cur[cpu][1], t0), min(t, t1)
                if b > a:
                    spans.append((a, b, cpu, prev))
                    untraced += (b - a) * (cur[cpu][0] != prev)
            runnable = st.startswith("R")
            took = "idle" if prev == 0 else "a block" if not runnable else "loop" if prev == loop else \
                "QEMU" if prev in tids else "other"
            for tid in [x for x, p in pending.items() if t - p[0] > SKEW_S]:
                lost["switch-in with no wake-up traced"] += inside(pending.pop(tid)[0])
            if prev in tids and cur.get(cpu, (-1, t))[0] == prev and cpu == loop_cpu and off_since is not None \
                    and inside(t):
                on_loop_cpu.append(t - cur[cpu][1])
            if prev == loop:
                # Switched out again with no switch-in traced since: that off spell's end is lost.
                lost["the loop's switch-in not traced"] += off_since is not None and inside(t)
                off_since = t if runnable else None
            if prev in vcpus:
                if prev in woken:
                    # Switched out again with its switch-in not traced (an idle CPU's, §10.34).
                    lost["switch-in not traced"] += inside(t)
                    woken.pop(prev)
                if runnable:
                    queued.add(prev)
                else:
                    others = [x for c, (x, _) in cur.items() if c != cpu and x in tids and x != prev]
                    blocked[prev] = (t, bool(others), bool(queued - {prev}))
            elif prev in tids and runnable:
                queued.add(prev)
            cur[cpu] = (nxt, t)
            queued.discard(nxt)
            if nxt == loop:
                if loop_cpu is not None and cpu != loop_cpu and inside(t):
                    moves += 1
                if off_since is not None and inside(t):
                    off.append(t - off_since)
                loop_cpu, off_since = cpu, None
            if nxt in vcpus:
                if nxt in woken:
                    at, k, target, there = woken.pop(nxt)
                    if inside(t):
                        where = "loop's CPU" if target == there else "other CPU"
                        waits[k][where][took].append(max(0.0, t - at))
                        moved[k] += target != cpu
                elif nxt in blocked:
                    pending[nxt] = (t, took, blocked.pop(nxt)[0])
        elif (m := WAKEUP.search(ln)) is not None:
            pid, target = int(m[3]), int(m[4])
            if pid not in vcpus:
                continue
            if pid in pending:
                at, took, since = pending.pop(pid)
                if t - at > SKEW_S:
                    lost["switch-in with no wake-up traced"] += inside(at)
                elif inside(at):
                    k = "halt" if at - since >= SHORT_S else "lock"
                    where = "loop's CPU" if target == loop_cpu else "other CPU"
                    waits[k][where][took].append(0.0)
                continue
            if pid not in blocked:
                continue
            since, other_ran, other_queued = blocked.pop(pid)
            k = "halt" if t - since >= SHORT_S else "lock"
            woken[pid] = (t, k, target, loop_cpu)
            if k == "lock" and inside(t):
                lock_blocks["another QEMU thread running" if other_ran else
                            "another QEMU thread queued" if other_queued else "neither"] += 1
    spans += [(max(since, t0), t1, c, x) for c, (x, since) in cur.items() if since < t1]   # current at the end
    # The sweep over the spans' ends: how many of QEMU's threads run at once, the loop's CPU.
    ev = sorted([(a, 1, c, x) for a, _, c, x in spans] + [(b, -1, c, x) for _, b, c, x in spans], key=lambda e: (e[0], e[1]))
    on: dict[int, int] = {}
    at_once: dict[int, float] = defaultdict(float)
    both: dict[int, dict[int, float]] = defaultdict(lambda: defaultdict(float))   # bin -> {0: time 2+ at once}
    last = t0
    for tt, d, c, x in ev:
        if tt > last:
            n = len({y for y in on.values() if y in tids})
            at_once[n] += tt - last
            if n >= 2:
                _spread(both, last, tt, t0, 0)
            last = tt
        if d > 0:
            on[c] = x
        elif on.get(c) == x:
            del on[c]
    loop_on: dict[int, float] = defaultdict(float)
    bins: dict[int, dict[int, float]] = defaultdict(lambda: defaultdict(float))
    for a, b, c, x in spans:
        if x == loop and loop is not None:
            loop_on[c] += b - a
            _spread(bins, a, b, t0, c)
    dt = t1 - t0
    # The rest of the CPUs' time by task's name: neither QEMU's, the loop, nor idle (what else
    # the host ran in the window, e.g. another session's work beside the measurement).
    rest: dict[str, float] = defaultdict(float)
    for a, b, _, x in spans:
        if x not in tids and x != loop and x != 0:
            rest[re.sub(r"[/:-]?\d+$", "", comms.get(x, "?"))] += b - a
    got: dict[str, Any] = {
        "others": {k: x / dt for k, x in sorted(rest.items(), key=lambda kx: -kx[1])[:5]}, "others_share": sum(rest.values()) / dt,
        "at_once": {str(n): x / dt for n, x in sorted(at_once.items())},
        "loop_on": {str(c): x / dt for c, x in sorted(loop_on.items())},
        "woken": {k: {w: {f: dist(xs) for f, xs in by.items()} for w, by in ws.items()} for k, ws in waits.items()},
        "woken_run_on_another_cpu": dict(moved),
        "lock_blocks": dict(lock_blocks), "lost": dict(lost), "untraced_share": untraced / dt}
    if loop is not None:
        shares = [max(c.values()) / sum(c.values()) for c in bins.values() if sum(c.values()) > 0]
        main = [max(c, key=lambda k: c[k]) for _, c in sorted(bins.items()) if c]
        got["loop"] = {"moves": moves, "off_cpu": dist(off), "qemu_runs_on_its_cpu": dist(on_loop_cpu),
                       "qemu_on_its_cpu_share": sum(on_loop_cpu) / dt,
                       "bins": len(shares), "bin_main_cpu_share_min": min(shares, default=float("nan")),
                       "bin_main_cpu_changes": sum(a != b for a, b in zip(main, main[1:]))}
    # Per bin of `LOOP_BIN_S` from the window's start: the loop's share of each CPU, and the share
    # in which two or more of QEMU's threads run at once.
    nb = int((t1 - t0) / LOOP_BIN_S) + 1
    span = [min(LOOP_BIN_S, t1 - t0 - i * LOOP_BIN_S) for i in range(nb)]   # the last bin is shorter
    got["bins"] = [{"loop_on": {str(c): round(x / span[i], 4) for c, x in sorted(bins[i].items())},
                    "two_at_once": round(both[i][0] / span[i], 4)} for i in range(nb) if span[i] > 0]
    return got


def _spread(bins: dict[int, dict[int, float]], a: float, b: float, t0: float, key: int) -> None:
    """Add the time from `a` to `b` to `bins[i][key]` for each bin of `LOOP_BIN_S` from `t0` it spans."""
    for i in range(int((a - t0) / LOOP_BIN_S), int((b - t0) / LOOP_BIN_S) + 1):
        x = min(b, t0 + (i + 1) * LOOP_BIN_S) - max(a, t0 + i * LOOP_BIN_S)
        if x > 0:
            bins[i][key] += x


def report(out: str) -> dict:
    proc = Path(out + ".proc").read_text().splitlines()
    qemu = int(proc[0].split()[1])
    marks = {ln.split()[2]: float(ln.split()[1]) for ln in proc if ln.startswith("mark ")}
    t0, t1 = marks["start"], marks["end"]
    snaps: dict[str, dict[int, list]] = defaultdict(dict)
    names: dict[int, str] = {}
    which = ""
    for ln in proc[1:]:
        a = ln.split(maxsplit=7)
        if a[0] == "mark":
            which = a[2]
        else:
            snaps[which][int(a[1])] = [int(x) for x in a[2:7]]
            names[int(a[1])] = a[7]
    tids = set(snaps["start"]) & set(snaps["end"])
    text = subprocess.run(["perf", "script", "-i", out + ".perf", "-F", "comm,tid,cpu,time,event,trace"],
                          capture_output=True, text=True, check=True).stdout
    # Per host CPU, who runs there since when: the host's CPUs' clocks may differ by a few us
    # (it is itself a VM), so a thread preempted on one CPU and taken by the other at once can
    # show its switch-in before its switch-out; run time is summed per CPU.
    cur: dict[int, tuple[int, float]] = {}
    run_s: dict[int, float] = defaultdict(float)
    vol: Counter[int] = Counter()
    invol: Counter[int] = Counter()
    slices: Counter[int] = Counter()
    out_at: dict[int, tuple[float, str]] = {}   # tid -> (when it left runnable / was woken, why)
    waits: dict[int, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    instead: dict[int, Counter[str]] = defaultdict(Counter)
    skewed = 0
    for ln in text.splitlines():
        if (m := SWITCH.search(ln)) is not None:
            t, cpu = float(m[1]), int(CPU.search(ln)[1])  # type: ignore[index]
            prev, nxt, state = int(m[3]), int(m[6]), m[4]
            if cpu in cur and cur[cpu][0] == prev and prev in tids:
                run_s[prev] += max(0.0, min(t, t1) - max(cur[cpu][1], t0))
            cur[cpu] = (nxt, t)
            inside = t0 <= t <= t1
            if prev in tids and inside:
                if state.startswith("R"):
                    invol[prev] += 1
                    instead[prev][kind(m[5], nxt, qemu, tids)] += 1
                    out_at[prev] = (t, "preempted " + kind(m[5], nxt, qemu, tids))
                else:
                    vol[prev] += 1
            if nxt in tids:
                if inside:
                    slices[nxt] += 1
                since = out_at.pop(nxt, None)
                if since is not None and inside:
                    if t >= since[0]:
                        waits[nxt][since[1]].append(t - since[0])
                    else:
                        skewed += 1
        elif (m := WAKEUP.search(ln)) is not None:
            pid, t = int(m[3]), float(m[1])
            running = any(c[0] == pid for c in cur.values())
            if pid in tids and t0 <= t <= t1 and not running and pid not in out_at:
                out_at[pid] = (t, "woken")
    dt = t1 - t0
    rows = []
    for tid in sorted(tids, key=lambda x: (x != qemu, names[x])):
        a, b = snaps["start"][tid], snaps["end"][tid]
        w = waits[tid]
        pre = [x for k, xs in w.items() if k.startswith("preempted") for x in xs]
        wok = w["woken"]
        by = {k.split(" ", 1)[1]: [round(1e3 * statistics.fmean(xs), 3), len(xs)] for k, xs in w.items()
              if k.startswith("preempted") and len(xs) >= 5}
        rows.append({
            "tid": tid, "name": "main loop" if tid == qemu else names[tid], "run_s": run_s[tid], "window_s": dt,
            "involuntary": invol[tid], "voluntary": vol[tid], "slices": slices[tid],
            # Per second of running as /proc counts it (its counts agree with the trace's, its
            # run time is 1-14 % above the switches' intervals for a vCPU thread, §10.28).
            "invol_per_run_s": invol[tid] / ((b[0] - a[0]) / 1e9) if b[0] > a[0] else 0.0, "invol_per_s": invol[tid] / dt,
            "preempted_wait_ms": [1e3 * f(pre) for f in (statistics.median, statistics.fmean)] +
            [1e3 * pct(pre, 0.9), 1e3 * max(pre)] if pre else [],
            "woken_wait_ms": [1e3 * f(wok) for f in (statistics.median, statistics.fmean)] +
            [1e3 * pct(wok, 0.9), 1e3 * max(wok)] if wok else [],
            "instead": dict(instead[tid].most_common(6)),
            # The waits after a preemption longer than 0.5, 1, 2 ms (shares), and their mean (ms)
            # and number by what took the core.
            "preempted_over": [sum(x > b for x in pre) / len(pre) if pre else 0.0 for b in (0.5e-3, 1e-3, 2e-3)],
            "preempted_by": by,
            "proc": {"run_s": (b[0] - a[0]) / 1e9, "wait_s": (b[1] - a[1]) / 1e9, "slices": b[2] - a[2],
                     "voluntary": b[3] - a[3], "involuntary": b[4] - a[4]},
        })
    vcpus = {t for t in tids if names[t].startswith("CPU ")}
    beside = Path(out + ".loop")
    loop = dict(ln.split(maxsplit=1) for ln in beside.read_text().splitlines()) if beside.is_file() else {}
    return {"window_s": dt, "threads": rows, "skewed": skewed, "split": split(text, t0, t1, qemu, vcpus, tids),
            "spells": spells(text, t0, t1, vcpus), "beside_loop": loop,
            "cpus": cpus(text, t0, t1, tids, vcpus, int(loop["pid"]) if loop else None)}


def show(doc: dict) -> None:
    print(f"window {doc['window_s']:.3f} s")
    print("thread | run s (proc) | invol (proc) | vol (proc) | invol/s run | invol/s wall | wait after preemption ms "
          "med/mean/p90/max | wake-up wait ms med/mean/p90/max | ran instead")
    for r in doc["threads"]:
        p = r["proc"]
        f = lambda xs: "/".join(f"{x:.3f}" for x in xs) or "-"  # noqa: E731
        print(f"{r['name']} | {r['run_s']:.3f} ({p['run_s']:.3f}) | {r['involuntary']} ({p['involuntary']}) | "
              f"{r['voluntary']} ({p['voluntary']}) | {r['invol_per_run_s']:.0f} | {r['invol_per_s']:.1f} | "
              f"{f(r['preempted_wait_ms'])} | {f(r['woken_wait_ms'])} | {r['instead']}")
        print(f"    waits over 0.5/1/2 ms {f(r['preempted_over'])}; mean wait ms, count by what took the core {r['preempted_by']}")


def show_split(sp: dict) -> None:
    print("vCPU thread | kind: per s, share of the window, median / p90 ms")
    for r in sp["vcpus"]:
        short = f"<{SHORT_S * 1e3:g}"
        print(f"{r['tid']} | " + "; ".join(
            f"{k}: {x['per_s']:.0f}, {x['share']:.3f}, {x['median_ms']:.3f} / {x['p90_ms']:.3f}"
            + (f" (under {SHORT_S * 1e3:g} ms: {x['per_s_by_ms'][short]:.0f}, {x['short_share']:.3f})"
               if k.startswith("blocked, woken") else "") for k, x in r["kinds"].items()))
    print("cores (of 2, share of the window): " + ", ".join(f"{k} {x:.3f}" for k, x in sorted(sp["cores"].items())))
    print("cores idle while a vCPU thread is ...: " + ", ".join(f"{k} {x:.3f}" for k, x in sorted(sp["idle_while"].items())))
    print("wake-ups queued to an idle CPU, per s, by: " +
          ", ".join(f"{k} {x:.0f}" for k, x in sorted(sp["woken_on_idle_cpu_by"].items())))


def show_cpus(c: dict[str, Any], loop: dict[str, str]) -> None:
    """`cpus()`'s figures: QEMU's threads at once, the loop's CPUs, the woken vCPU threads' waits."""
    if loop:
        print(f"busy loop: pid {loop['pid']}, {loop['autogroup']}, {loop['share']} of a CPU over {loop['recording_s']} s (/proc)")
    print("QEMU threads running at once, share of the window: " +
          ", ".join(f"{n} {x:.3f}" for n, x in c["at_once"].items()))
    print("the loop's share of each CPU: " + (", ".join(f"CPU {n} {x:.3f}" for n, x in c["loop_on"].items()) or "-"))
    print(f"other tasks, share of the window: {c['others_share']:.3f} (" +
          ", ".join(f"{k} {x:.3f}" for k, x in c["others"].items()) + ")")
    print("woken vCPU thread | woken on | its switch-in took the CPU from | n | wait median / p90 / p99 / max ms "
          "| over 1 / 2 / 4 ms")
    for k, ws in c["woken"].items():
        for w, by in ws.items():
            for f, x in by.items():
                if x["n"]:
                    q = " / ".join(f"{1e3 * x[g]:.3f}" for g in ("median_s", "p90_s", "p99_s", "max_s"))
                    print(f"{k} | {w} | {f} | {x['n']} | {q} | " + " / ".join(str(x[f"over_{b * 1e3:g}ms"]) for b in TAILS_S))
    print(f"woken, then run on another CPU than woken on: {c['woken_run_on_another_cpu']}; "
          f"lock waits (blocked < {SHORT_S * 1e3:g} ms) as they blocked: {c['lock_blocks']}; lost: {c['lost']}; "
          f"CPU time between switches that do not match {c['untraced_share']:.3f} of the window")
    if (lp := c.get("loop")) is not None:
        f = lambda x: f"{x['n']}, median / p90 / max ms " + " / ".join(  # noqa: E731
            f"{1e3 * x[g]:.3f}" for g in ("median_s", "p90_s", "max_s")) if x["n"] else "0"
        print(f"the loop: {lp['moves']} moves between CPUs; its CPU in {lp['bins']} bins of {LOOP_BIN_S * 1e3:g} ms: "
              f"the least share on its main CPU {lp['bin_main_cpu_share_min']:.3f}, main CPU changes "
              f"{lp['bin_main_cpu_changes']}; off its CPU {f(lp['off_cpu'])}; QEMU's runs on its CPU meanwhile "
              f"{f(lp['qemu_runs_on_its_cpu'])}, {lp['qemu_on_its_cpu_share']:.3f} of the window")


def model(case_name: str, seeds: int, condition: str = "idle") -> None:
    """The host model's threads for the case under ``check.CONDITIONS[condition]`` (as
    ``bench/vm_sched_sim.py --condition`` runs it), seeds 1..N: per vCPU thread its host
    time, involuntary switches per second run and of the run, and its mean wait after one
    (``sched_cpus``' ``host_*``, ``--explain-sched``); and its spells as distributions, as
    `report` gives the measured host's (``sched_host_spells``)."""
    from numalab.vm import check

    print("seed | run s | vCPU: host s, invol, invol/s run, invol/s wall, vol/s wall, mean wait after preemption ms "
          "| main loop: host s, vol/s, invol")
    for seed in range(1, seeds + 1):
        doc = check.condition_doc(case_name, condition, seed, explain_sched=True)
        run = float(doc["time_s"])
        cells: list[str] = []
        split: list[str] = []
        busy = 0.0
        for c in doc["sched_cpus"]:
            h, n = float(c["host_s"]), int(c["host_involuntary"])
            w = float(c["host_preempted_wait_s"]) / max(1, int(c["host_preempted_waits"]))
            cells.append(f"{h:.3f}, {n}, {n / h:.0f}, {n / run:.0f}, {int(c['host_voluntary']) / run:.0f}, {1e3 * w:.3f}")
            # The report's split: running, queued (waiting for a host core, after a preemption or
            # a wake-up), and the rest, halted (the model has no BQL wait of its own).
            q = float(c["host_wait_s"])
            split.append(f"{h / run:.3f} / {q / run:.3f} / {1 - (h + q) / run:.3f}")
            busy += h
        m = doc.get("sched_host_main_loop") or {}
        busy += float(m.get("host_s", 0))
        print(f"{seed} | {run:.3f} | " + " | ".join(cells) +
              f" | {m.get('host_s', 0):.3f}, {int(m.get('host_voluntary', 0)) / run:.0f}, {m.get('host_involuntary', 0)}")
        print(f"    running / queued / halted, share of the run: {' | '.join(split)}; cores busy {busy / (2 * run):.3f}")
        # The cores' idle time split as bench/host_idle.py splits the measured host's (§10.46),
        # per core: a thread queued while a core idles, or none, by the vCPUs halted then.
        if (idle := doc.get("sched_host_idle")) is not None:
            by = idle["none_queued_s_by_halted"]
            print(f"    idle per core: queued {float(idle['queued_s']) / (2 * run):.4f}, none queued "
                  f"{sum(by) / (2 * run):.4f} (by vCPUs halted: "
                  + ", ".join(f"{n} {float(x) / (2 * run):.4f}" for n, x in enumerate(by) if x) + ")")
        # With the host model's BQL (``vcpu_host.bql``, docs/scheduler.md §10.37): per thread its
        # takes and the takes that found the lock held (a short blocked spell each) per second of
        # the run, their mean wait and the share of the run it held the lock.
        locks = [c["host_bql"] for c in doc["sched_cpus"] if "host_bql" in c] + (
            [m["host_bql"]] if "host_bql" in m else [])
        if locks:
            print("    BQL takes / s, waits / s, mean wait µs, held share (vCPUs, then the main loop): " + " | ".join(
                f"{int(b['takes']) / run:.0f}, {int(b['waits']) / run:.0f}, "
                f"{1e6 * float(b['wait_s']) / max(1, int(b['waits'])):.1f}, {float(b['held_s']) / run:.4f}"
                for b in locks))
            # Holds kept across the holder's switch-out, a run (§10.54).
            print("    BQL holds kept across a switch-out, a run: " + " | ".join(str(int(b.get("kept", 0))) for b in locks)
                  + f" (all {sum(int(b.get('kept', 0)) for b in locks)})")
            # Of them, those kept across the wake-up preemption the holder's own write caused
            # (§10.58), and the waits a run (§10.56's real host counts them so).
            print("    of them kept across the wake-up their write caused: "
                  + " | ".join(str(int(b.get("kept_wake", 0))) for b in locks)
                  + f" (all {sum(int(b.get('kept_wake', 0)) for b in locks)}); BQL waits a run, vCPUs "
                  f"{sum(int(b['waits']) for b in locks[:len(doc['sched_cpus'])])}, the main loop "
                  f"{int(m['host_bql']['waits']) if 'host_bql' in m else 0}")
        if (sp := doc.get("sched_host_spells")) is not None:
            show_spells([(f"seed {seed} vCPU {c}", x) for c, x in enumerate(sp["vcpus"])] + [(f"seed {seed} all", sp["all"])])


def main(argv: list[str]) -> int:
    """The three commands of the module's docstring; anything else prints it."""
    cmd, args = (argv[0], argv[1:]) if argv else ("", [])
    wanted = {"record": 2, "report": 1, "model": 1, "_run": 2}
    usage = "usage: host_trace.py record CASE OUT [--wake-path] [--beside-loop] | report OUT | model CASE [SEEDS] [--condition NAME]"
    if cmd in ("-h", "--help"):
        print(f"{usage}\n\n{__doc__}")
        return 0
    flags = ("--wake-path", "--beside-loop")
    if cmd == "record" and any(a not in flags for a in args[2:]):
        print(f"{usage}\nhost_trace.py: error: unknown flag to record: {' '.join(a for a in args[2:] if a not in flags)}",
              file=sys.stderr)
        return 2
    condition = "idle"
    if cmd == "model" and "--condition" in args:
        i = args.index("--condition")
        if i + 1 >= len(args):
            print(f"{usage}\nhost_trace.py: error: --condition needs a NAME", file=sys.stderr)
            return 2
        condition = args[i + 1]
        args = args[:i] + args[i + 2:]
    if cmd not in wanted or len(args) < wanted[cmd] or (cmd == "model" and len(args) > 2):
        what = f"no command {cmd!r}" if cmd not in wanted else f"wrong arguments to {cmd}: {' '.join(args) or 'none'}"
        print(f"{usage}\nhost_trace.py: error: {what}", file=sys.stderr)
        return 2
    from numalab.vm import check

    if cmd in ("record", "model") and args[0] not in check.CASES:
        print(f"host_trace.py {cmd}: no case {args[0]!r} (one of numalab vm check's: {', '.join(check.CASES)})",
              file=sys.stderr)
        return 2
    if cmd == "model" and condition not in check.CONDITIONS:
        print(f"host_trace.py model: no condition {condition!r} (one of: {', '.join(check.CONDITIONS)})", file=sys.stderr)
        return 2
    if cmd == "model" and args[0] not in check.CONDITIONS[condition].barrier_s:
        print(f"host_trace.py model: {args[0]} was not measured under {condition} (its cases: "
              f"{', '.join(check.CONDITIONS[condition].barrier_s)})", file=sys.stderr)
        return 2
    if cmd == "report" and not Path(args[0] + ".proc").is_file():
        print(f"host_trace.py report: {args[0]}.proc not found (written by: host_trace.py record CASE {args[0]})",
              file=sys.stderr)
        return 2
    if cmd == "record":
        record(args[0], args[1], "--wake-path" in args[2:], "--beside-loop" in args[2:])
    elif cmd == "model":
        if len(args) > 1 and not args[1].isdigit():
            print(f"host_trace.py model: SEEDS must be a whole number, got {args[1]!r}", file=sys.stderr)
            return 2
        model(args[0], int(args[1]) if len(args) > 1 else 8, condition)
    elif cmd == "_run":
        _run(args[0], args[1])
    else:
        d = report(args[0])
        Path(args[0] + ".report.json").write_text(json.dumps(d, indent=1))
        show(d)
        show_split(d["split"])
        sp = d["spells"]
        show_spells([(str(v), x) for v, x in sp["vcpus"].items()] + [("all", sp["all"])])
        print(f"spells the trace lacks a switch of: {sp['lost']}")
        show_cpus(d["cpus"], d["beside_loop"])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
