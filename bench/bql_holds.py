"""QEMU's BQL holds and the takes that wait behind them, from ``vm_cpu_per_barrier.py
record-locks``' trace (docs/scheduler.md §10.56).

  python bench/bql_holds.py OUT [OUT ...]     # the same as ``vm_cpu_per_barrier.py holds OUT``

The trace: the uprobes on ``qemu_mutex_lock_impl`` (entry, return), ``qemu_mutex_unlock_impl``
and ``qemu_cond_wait_impl`` (entry, return) with the host's ``sched:sched_switch`` /
``sched:sched_wakeup``, as ``perf script -F comm,tid,cpu,time,event,trace`` prints them.

A hold runs from a take's return (or a ``qemu_cond_wait()``'s return: ``pthread_cond_wait()``
retakes the mutex inside) to the same thread's unlock (or its next ``qemu_cond_wait()``'s entry,
which releases it inside). It is "kept" when its holder was switched out during it. A take is
"contended" when at its entry the BQL was held by another thread; it waited behind that hold."""

from __future__ import annotations

import re
import sys
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

from host_trace import SHORT_S, SWITCH, WAKEUP, traced

PROBE = re.compile(r"probe_qemu:(\w+):\s*\(\S+(?: <- \S+)?\)\s*(.*)$")
ARGS = re.compile(r'mutex=(0x[0-9a-f]+)(?: file="([^"]*)" line=(-?\d+))?')
MAIN_LOOP_FILE = "util/main-loop.c"   # os_host_main_loop_wait()'s qemu_mutex_lock_iothread()


def site(file: str, line: str) -> str:
    """A calling site as its source path from the tree's root and its line."""
    return f"{file.lstrip('./')}:{line}"


def bql_of(text: str) -> tuple[str, str]:
    """The BQL's address: the mutex the main loop takes in ``util/main-loop.c``, and how it was
    found (or the most-taken mutex, if the main loop's take is not in the trace)."""
    taken: Counter[str] = Counter()
    main: Counter[str] = Counter()
    for ln in text.splitlines():
        if "qemu_mutex_lock_impl:" not in ln:
            continue
        m = ARGS.search(ln)
        if m:
            taken[m[1]] += 1
            if m[2] and m[2].endswith(MAIN_LOOP_FILE):
                main[m[1]] += 1
    top = taken.most_common(1)[0][0] if taken else ""
    if main:
        bql = main.most_common(1)[0][0]
        return bql, f"taken in {MAIN_LOOP_FILE}" + (" and the most-taken mutex" if bql == top else
                                                     f"; the most-taken is {top}")
    return top, "the most-taken mutex (no main-loop take traced)"


def kind(comm: str, tid: int, qemu: int) -> str:
    return "vCPU" if comm.startswith("CPU ") else "main loop" if tid == qemu else "other"


@dataclass
class Hold:
    tid: int
    kind: str
    site: str
    t: float
    nested: int = 0   # the holder's other probe hits inside the hold (their traps lengthen it)
    off_s: float = 0.0   # switched out during it
    outs: list[str] = field(default_factory=list)   # the switch-outs' prev_state, "|KIND" if to its own wakee
    woke: dict[int, str] = field(default_factory=dict)   # the threads the holder woke in the hold: their kind


@dataclass
class Wait:
    tid: int
    kind: str
    t: float
    behind: Hold | None
    holder_at_entry: str   # "running / queued / blocked at entry", or "taken after the entry, ... at the block"
    blocked: bool = False
    woken: float | None = None


def _q(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))] if xs else float("nan")


def holds(text: str, t0: float, t1: float, qemu: int, bql: str) -> dict[str, Any]:
    """The window's BQL holds and takes: see the module's text. Times in s."""
    entered: dict[int, tuple[float, str, str]] = {}   # tid -> (entry, mutex, site)
    held: Hold | None = None
    waits: dict[int, Wait] = {}
    off: dict[int, tuple[float, str]] = {}   # tid -> (switched out at, prev_state)
    done_holds: list[tuple[Hold, float]] = []
    done_waits: list[tuple[Wait, float, str]] = []   # (wait, returned at, its site)
    takes: Counter[tuple[str, str]] = Counter()
    uncontended: list[float] = []
    odd: Counter[str] = Counter()
    blocked_at: dict[int, tuple[float, str]] = {}   # vCPU tid -> (switched out blocked at, doing what)
    blocks: dict[str, list[float]] = defaultdict(list)

    woken_in_wait: set[int] = set()   # threads in a cond wait woken since its entry
    retakes: Counter[str] = Counter()   # a cond wait's retake that blocked: the hold it found

    def whereabouts(tid: int) -> str:
        return "running" if tid not in off else "queued" if off[tid][1].startswith("R") else "blocked"

    def doing(tid: int) -> str:
        if tid in waits:
            return "BQL take, held by another"
        if tid in entered:
            _, mutex, where = entered[tid]
            if mutex == bql and where.startswith("cond wait"):
                if tid not in woken_in_wait:
                    return "BQL cond wait: the wait (a halt)"
                if held is not None and held.tid != tid:
                    retakes[f"{held.kind} {held.site} | holder {whereabouts(held.tid)}"] += 1
                return "BQL cond wait: its retake, after the wake-up"
            if mutex == bql:
                return "BQL take, free at entry"
            return f"other mutex {where}"
        return "holding the BQL" if held is not None and held.tid == tid else "elsewhere"

    def end_hold(t: float) -> None:
        nonlocal held
        assert held is not None
        if held.t >= t0 and t <= t1:
            done_holds.append((held, t - held.t))
        held = None

    for t, _cpu, ln, h in traced(text):
        if (s := SWITCH.search(ln)) is not None:
            prev, state, nxt = int(s[3]), s[4], int(s[6])
            off[prev] = (t, state)
            if held is not None and held.tid == prev:
                held.outs.append(state + (f"|{held.woke[nxt]}" if nxt in held.woke else ""))
            if not state.startswith("R"):
                if (prev not in waits and prev in entered and entered[prev][1] == bql and held is not None
                        and held.tid != prev and not entered[prev][2].startswith("cond wait")):
                    # Found free at the entry, taken by another before this thread's try (it was
                    # switched out between): it waits behind that hold from its entry.
                    waits[prev] = Wait(prev, kind(s[2], prev, qemu), entered[prev][0], held,
                                       f"taken after the entry, {whereabouts(held.tid)} at the block")
                if prev in waits:
                    waits[prev].blocked = True
                if s[2].startswith("CPU ") and t0 <= t <= t1:
                    blocked_at[prev] = (t, doing(prev))
            if nxt in off:
                since, _ = off.pop(nxt)
                if held is not None and held.tid == nxt:
                    held.off_s += t - max(since, held.t)
            continue
        if (w := WAKEUP.search(ln)) is not None:
            if held is not None and int(h[2]) == held.tid:
                held.woke[int(w[3])] = kind(w[2], int(w[3]), qemu)
            if int(w[3]) in waits and waits[int(w[3])].woken is None:
                waits[int(w[3])].woken = t
            if int(w[3]) in entered and entered[int(w[3])][2].startswith("cond wait"):
                woken_in_wait.add(int(w[3]))
            if (b := blocked_at.pop(int(w[3]), None)) is not None:
                blocks[b[1]].append(t - b[0])
            continue
        p = PROBE.search(ln)
        if p is None:
            continue
        tid, ev = int(h[2]), p[1]
        a = ARGS.search(p[2])
        mutex = a[1] if a else ""
        where = site(a[2], a[3]) if a and a[2] is not None else "?"
        if held is not None and held.tid == tid and not (ev in ("qemu_mutex_unlock_impl", "qemu_cond_wait_impl")
                                                          and mutex == bql):
            held.nested += 1
        if ev == "qemu_mutex_lock_impl":
            entered[tid] = (t, mutex, where)
            if mutex == bql:
                if held is not None and held.tid != tid:
                    waits[tid] = Wait(tid, kind(h[1], tid, qemu), t, held, f"{whereabouts(held.tid)} at entry")
                elif held is not None:
                    odd["retaken by its holder"] += 1
        elif ev == "qemu_mutex_lock_impl__return" and tid in entered:
            t_in, mutex, where = entered.pop(tid)
            if mutex != bql:
                continue
            if t0 <= t_in <= t1:
                takes[(kind(h[1], tid, qemu), where)] += 1
            wt = waits.pop(tid, None)
            if wt is not None and t0 <= wt.t <= t1:
                done_waits.append((wt, t, where))
            elif wt is None and t0 <= t_in <= t1:
                uncontended.append(t - t_in)
            if held is not None:
                odd["taken while held (a release not traced)"] += 1
                end_hold(t)
            held = Hold(tid, kind(h[1], tid, qemu), where, t)
        elif ev in ("qemu_mutex_unlock_impl", "qemu_cond_wait_impl") and mutex == bql:
            if held is not None and held.tid == tid:
                end_hold(t)
            else:
                odd["released by a thread not holding it"] += 1
            if ev == "qemu_cond_wait_impl":
                entered[tid] = (t, mutex, "cond wait " + where)
                woken_in_wait.discard(tid)
        elif ev == "qemu_cond_wait_impl__return" and tid in entered:
            _, mutex, where = entered.pop(tid)
            if mutex == bql:
                if held is not None:
                    odd["taken while held (a release not traced)"] += 1
                    end_hold(t)
                held = Hold(tid, kind(h[1], tid, qemu), where, t)
                if t0 <= t <= t1:
                    takes[(held.kind, where)] += 1
    d = summary(done_holds, done_waits, takes, uncontended, odd)
    d["vcpu_blocks"] = {k: {"short": sum(x < SHORT_S for x in v), "long": sum(x >= SHORT_S for x in v),
                            "short_median_us": _q([x for x in v if x < SHORT_S], 0.5) * 1e6}
                        for k, v in sorted(blocks.items(), key=lambda kv: -len(kv[1]))}
    d["retakes_behind"] = dict(retakes.most_common())
    return d


def _dist(xs: list[float]) -> dict[str, float]:
    if not xs:
        return {"n": 0}
    return {"n": len(xs), "median_us": _q(xs, 0.5) * 1e6, "p90_us": _q(xs, 0.9) * 1e6,
            "mean_us": sum(xs) / len(xs) * 1e6, "max_us": max(xs) * 1e6, "sum_s": sum(xs)}


def summary(done_holds: list[tuple[Hold, float]], done_waits: list[tuple[Wait, float, str]],
            takes: Counter[tuple[str, str]], uncontended: list[float], odd: Counter[str]) -> dict[str, Any]:
    by: dict[str, list[float]] = defaultdict(list)
    kept: dict[str, list[float]] = defaultdict(list)
    nested: dict[str, int] = Counter()
    outs: dict[str, Counter[str]] = defaultdict(Counter)
    for hd, n in done_holds:
        key = f"{hd.kind} {hd.site}"
        by[key].append(n)
        nested[key] += hd.nested
        if hd.outs:
            kept[key].append(hd.off_s)
            outs[key].update(("R" if s.startswith("R") else "S") + (f" to its wakee, {s.split('|', 1)[1]}" if "|" in s
                                                                     else "") for s in hd.outs)
    hold_rows = {k: {**_dist(v), "nested_probes": nested[k] / len(v), "kept": len(kept[k]),
                     "kept_off": _dist(kept[k]), "outs": dict(outs[k])} for k, v in by.items()}
    behind: Counter[str] = Counter()
    rows: dict[str, dict[str, Any]] = defaultdict(lambda: {"n": 0, "blocked": 0, "waits": [], "after_wake": []})
    waited_behind: dict[str, list[float]] = defaultdict(list)
    for wt, t_ret, where in done_waits:
        hd = wt.behind
        assert hd is not None
        was_kept = bool(hd.outs)
        key = f"{wt.kind} {where}"
        rows[key]["n"] += 1
        rows[key]["blocked"] += wt.blocked
        rows[key]["waits"].append(t_ret - wt.t)
        if wt.blocked and wt.woken is not None:
            rows[key]["after_wake"].append(t_ret - wt.woken)
        b = f"{wt.kind} behind {hd.kind} {hd.site} | holder {wt.holder_at_entry} | hold {'kept' if was_kept else 'not kept'}"
        behind[b] += 1
        waited_behind[b].append(t_ret - wt.t)
    wait_rows = {k: {"n": r["n"], "blocked": r["blocked"], "wait": _dist(r["waits"]),
                     "after_wake": _dist(r["after_wake"])} for k, r in rows.items()}
    return {"holds": hold_rows, "waits": wait_rows,
            "behind": {k: {"n": n, "wait": _dist(waited_behind[k])} for k, n in behind.most_common()},
            "takes": {f"{k} {s}": n for (k, s), n in takes.most_common()},
            "uncontended": _dist(uncontended), "odd": dict(odd)}


USAGE = "usage: bql_holds.py OUT [OUT ...]"


def main() -> None:
    if sys.argv[1:2] in (["-h"], ["--help"]):
        print(f"{USAGE}\n\n{__doc__}")
        return
    if len(sys.argv) < 2 or any(a.startswith("-") for a in sys.argv[1:]):
        print(f"{USAGE}\nbql_holds.py: error: no trace or an unknown flag: {' '.join(sys.argv[1:]) or 'none'}",
              file=sys.stderr)
        sys.exit(2)
    import vm_cpu_per_barrier

    for out in sys.argv[1:]:
        vm_cpu_per_barrier.holds(out)


if __name__ == "__main__":
    main()
