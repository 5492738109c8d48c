"""Where the real host's idle time comes from while a guest's case runs (docs/scheduler.md §10.46):
each host CPU's idle spells over the command window, what QEMU's vCPU threads were doing during
them, and how long a vCPU thread woken onto an idle CPU takes to run there.

  python bench/host_idle.py OUT     # OUT from `bench/host_trace.py record CASE OUT --wake-path`

A CPU's idle time is its idle task's: from a `sched_switch` to `swapper` to the next switch away
(or, where the idle task's own events are missing, the CPU's next traced event). Per idle
stretch the vCPU threads are counted as running (on another CPU), queued (runnable and not
running: switched out in R / R+, or woken and not yet switched in), or blocked (switched out in
S / D: a halt in `qemu_wait_io_event()`, a BQL wait); the stretch's time goes to the first of:
a vCPU thread *woken onto this CPU* and not yet running there (the wake-up's own latency), one
*queued on another CPU* (the balancer has not pulled it), or *none queued* (every vCPU thread not
running is blocked: nothing for the core to run). The host's `cpuidle` counters (`OUT.cpuidle`,
the halts each CPU made, `drivers/cpuidle/sysfs.c`) give each CPU's halted time however many of
its idle task's events the trace has.

The wake-up path to an idle CPU (Linux 6.18 `kernel/sched/core.c`): the waker's
`try_to_wake_up()` traces `sched_waking`, picks the CPU (`select_task_rq_fair()`), and, the target
being idle, queues the task on its wake list and sends it an IPI (`ttwu_queue_wakelist()` →
`__smp_call_single_queue()`, `ipi_send_cpu` with callsite `ttwu_queue_wakelist`) unless the idle
task polls (`sched_wake_idle_without_ipi`). The target, halted (this host is itself a VM: `hlt`
exits to its hypervisor, which must run the vCPU again), leaves the halt (`power:cpu_idle` state
-1, `kernel/sched/idle.c: default_idle_call()`), takes the IPI (`call_function_single_entry`),
enqueues the task (`sched_ttwu_pending()`, `sched_wakeup` traced there) and switches to it."""

from __future__ import annotations

import re
import statistics
import subprocess
import sys
from collections import Counter, defaultdict
from pathlib import Path

HEADER = re.compile(r"^\s*(.+?)\s+(\d+)\s+\[(\d+)\]\s+(\d+\.\d+):\s+(\S+):\s(.*)$")
SW = re.compile(r"prev_pid=(\d+) prev_prio=\d+ prev_state=(\S+) ==> next_comm=.*? next_pid=(\d+)")
WK = re.compile(r"comm=.*? pid=(\d+) prio=\d+ target_cpu=(\d+)")
IPI = re.compile(r"cpu=(\d+) callsite=(\w+)")
EXIT = "4294967295"
MIGRATION_COST_S = 0.5e-3   # Linux 6.18 kernel/sched/fair.c: sysctl_sched_migration_cost   # power:cpu_idle's state when the CPU leaves idle (PWR_EVENT_EXIT)


def stats(xs: list[float]) -> str:
    if not xs:
        return "-"
    s = sorted(xs)
    return (f"n {len(xs)}, median {1e6 * statistics.median(s):.1f}, mean {1e6 * statistics.fmean(s):.1f}, "
            f"p90 {1e6 * s[int(0.9 * (len(s) - 1))]:.1f} µs")


def cpuidle(out: str) -> dict[str, tuple[int, float]]:
    """Per CPU its halts and halted seconds between the window's marks."""
    p = Path(out + ".cpuidle")
    if not p.is_file():
        return {}
    at: dict[str, dict[str, tuple[int, int]]] = defaultdict(dict)
    which = ""
    for ln in p.read_text().splitlines():
        a = ln.split()
        if a[0] == "mark":
            which = a[1]
        else:
            key = f"{a[0]} {a[1]}"
            at[which][key] = (int(a[2]), int(a[3]))
    got: dict[str, tuple[int, float]] = defaultdict(lambda: (0, 0.0))
    for key, (n1, t1) in at["end"].items():
        n0, t0 = at["start"][key]
        cpu = key.split()[0]
        got[cpu] = (got[cpu][0] + n1 - n0, got[cpu][1] + (t1 - t0) / 1e6)
    return dict(got)


def analyse(out: str) -> dict:
    proc = Path(out + ".proc").read_text().splitlines()
    qemu = int(proc[0].split()[1])
    marks = {ln.split()[2]: float(ln.split()[1]) for ln in proc if ln.startswith("mark ")}
    t0, t1 = marks["start"], marks["end"]
    names = {int(a[1]): a[7] for a in (ln.split(maxsplit=7) for ln in proc[1:]) if a[0] != "mark"}
    vcpus = {t for t, n in names.items() if n.startswith("CPU ")}
    text = subprocess.run(["perf", "script", "-i", out + ".perf", "-F", "comm,tid,cpu,time,event,trace"],
                          capture_output=True, text=True, check=True).stdout
    state: dict[int, tuple[str, int]] = {}   # vCPU tid -> (running / queued / woken / blocked, its CPU)
    cur: dict[int, int] = {}                # CPU -> tid current (0 the idle task)
    traced_idle: set[int] = set()            # CPUs whose idle task emitted events in the window
    by_class: dict[str, float] = defaultdict(float)
    idle_s: dict[int, float] = defaultdict(float)
    halts: dict[int, list[float]] = defaultdict(list)
    halt_at: dict[int, float] = {}
    last_t = t0
    # Wake-up path per woken vCPU thread whose target was idle: waking, IPI, target's exit, switch-in.
    path: dict[int, dict[str, float]] = {}
    lat: dict[str, list[float]] = defaultdict(list)
    wakes: Counter[str] = Counter()
    queued_kind: dict[str, float] = defaultdict(float)
    out_at: dict[int, float] = {}            # vCPU tid -> its last switch out
    stretch: dict[int, tuple[str, float]] = {}   # CPU -> (class, since) of its idle stretch
    queued_len: list[float] = []
    blocked_n: Counter[int] = Counter()      # idle core-seconds by number of blocked vCPU threads (class none)

    def account(t: float) -> None:
        nonlocal last_t
        a, b = max(last_t, t0), min(t, t1)
        last_t = max(last_t, t)
        if b <= a:
            return
        for c in [c for c, x in cur.items() if x == 0]:
            idle_s[c] += b - a
            if c not in traced_idle:
                continue   # its idle spells' ends are not traced: the cpuidle counters only
            woken_here = any(s == "woken" and cc == c for s, cc in state.values())
            untraced = any(s == "woken" and cc != c and cur.get(cc) == 0 for s, cc in state.values())
            queued_else = any(s in ("queued", "woken") and cc != c and cur.get(cc) != 0 for s, cc in state.values())
            k = ("woken onto this CPU" if woken_here else "queued on the busy CPU" if queued_else else
                 "woken onto the other CPU, idle, untraced" if untraced else "none queued")
            by_class[k] += b - a
            if k == "queued on the busy CPU":
                # Preempted there or woken onto it; hot: switched out within the migration cost
                # (0.5 ms, `sysctl_sched_migration_cost`), which `can_migrate_task()` refuses to
                # an idle CPU's balance (kernel/sched/fair.c: task_hot()).
                q = [(tid, st) for tid, (st, cc) in state.items() if st in ("queued", "woken") and cc != c]
                pre = any(st == "queued" for _, st in q)
                hot = any(a - out_at.get(tid, -1.0) < MIGRATION_COST_S for tid, _ in q)
                queued_kind[("preempted" if pre else "woken") + (", hot" if hot else ", cold")] += b - a
            if stretch.get(c, ("", a))[0] != k:
                if c in stretch and stretch[c][0] == "queued on the busy CPU":
                    queued_len.append(a - stretch[c][1])
                stretch[c] = (k, a)
            if k == "none queued":
                blocked_n[sum(s == "blocked" for s, _ in state.values())] += b - a

    for ln in text.splitlines():
        # CPUs whose idle task emits events (power:cpu_idle) in the window: their idle spells are
        # whole in the trace (this host's second CPU emits none while idle, §10.46).
        if (m := HEADER.match(ln)) and m[2] == "0" and m[5] == "power:cpu_idle" and t0 <= float(m[4]) <= t1:
            traced_idle.add(int(m[3]))
    for ln in text.splitlines():
        m = HEADER.match(ln)
        if m is None:
            continue
        t, cpu, ev, tr = float(m[4]), int(m[3]), m[5], m[6]
        account(t)
        if cur.get(cpu) == 0 and not (ev == "sched:sched_switch" and "prev_pid=0 " in tr) and int(m[2]) != 0:
            # An event from a task on a CPU we had idle: its switch from the idle task was not
            # traced; the idle spell ended no later than here.
            cur[cpu] = int(m[2])
            if int(m[2]) in vcpus:
                state[int(m[2])] = ("running", cpu)
        if ev == "sched:sched_switch" and (s := SW.search(tr)):
            prev, st, nxt = int(s[1]), s[2], int(s[3])
            if prev in vcpus:
                state[prev] = ("queued" if st.startswith("R") else "blocked", cpu)
                out_at[prev] = t
            if nxt != 0:
                stretch.pop(cpu, None) if stretch.get(cpu, ("",))[0] != "queued on the busy CPU" else \
                    queued_len.append(t - stretch.pop(cpu)[1])
            cur[cpu] = nxt
            if nxt in vcpus:
                state[nxt] = ("running", cpu)
                p = path.pop(nxt, None)
                if p is not None and t0 <= t <= t1:
                    lat["waking to running"].append(t - p["waking"])
                    by = "the main loop" if p["by_main"] else "a vCPU thread" if p["by_vcpu"] else "another task"
                    lat[f"waking to running, woken by {by}"].append(t - p["waking"])
                    for k in ("ipi", "exit", "wakeup"):
                        if k in p:
                            lat[f"waking to {k}"].append(p[k] - p["waking"])
                    if "exit" in p:
                        lat["exit to running"].append(t - p["exit"])
        elif ev == "sched:sched_waking" and (w := WK.search(tr)):
            pid, tgt = int(w[1]), int(w[2])
            if pid in vcpus and state.get(pid, ("",))[0] == "blocked":
                state[pid] = ("woken", tgt)
                if cur.get(tgt) == 0 and t0 <= t <= t1:
                    wakes["onto an idle CPU" + ("" if tgt in traced_idle else " (idle task untraced)")] += 1
                    if tgt in traced_idle:
                        # The waker: QEMU's main loop (a kick: `qemu_cpu_kick()` → the halt_cond's
                        # broadcast) or a vCPU thread (an IPI it sent, or the BQL it let go).
                        waker = int(m[2])
                        path[pid] = {"waking": t, "cpu": tgt,
                                     "by_main": float(waker == qemu), "by_vcpu": float(waker in vcpus)}
                elif t0 <= t <= t1:
                    wakes["onto a busy CPU"] += 1
        elif ev == "sched:sched_wakeup" and (w := WK.search(tr)):
            pid, tgt = int(w[1]), int(w[2])
            if pid in vcpus and state.get(pid, ("",))[0] == "woken":
                state[pid] = ("woken", tgt)
            if pid in path:
                path[pid]["wakeup"] = t
        elif ev == "ipi:ipi_send_cpu" and (i := IPI.search(tr)):
            for p in path.values():
                if p["cpu"] == int(i[1]) and "ipi" not in p:
                    p["ipi"] = t
        elif ev == "sched:sched_wake_idle_without_ipi":
            for p in path.values():
                if "ipi" not in p:
                    p["no_ipi"] = t
        elif ev == "power:cpu_idle":
            if tr.startswith("state=" + EXIT):
                if cpu in halt_at and t0 <= t <= t1:
                    halts[cpu].append(t - halt_at.pop(cpu))
                for p in path.values():
                    if p["cpu"] == cpu and "exit" not in p:
                        p["exit"] = t
            else:
                halt_at[cpu] = t
    account(t1)
    dt = t1 - t0
    return {"window_s": dt, "idle_cores": {c: x / dt for c, x in sorted(idle_s.items())},
            "traced_idle_cpus": sorted(traced_idle),
            "classes": {k: x / dt for k, x in by_class.items()},
            "queued_kind": {k: x / dt for k, x in sorted(queued_kind.items())}, "queued_len": queued_len,
            "none_queued_by_blocked": {n: x / dt for n, x in sorted(blocked_n.items())},
            "halts": {c: (len(xs) / dt, sum(xs) / dt, xs) for c, xs in halts.items()},
            "latency": lat, "wakes": {k: n / dt for k, n in wakes.items()}, "cpuidle": cpuidle(out),
            "qemu": qemu}


def show(d: dict) -> None:
    dt = d["window_s"]
    print(f"window {dt:.3f} s; CPUs whose idle task is traced: {d['traced_idle_cpus']}")
    print("idle (idle task current), share of the window per CPU: " +
          ", ".join(f"CPU{c} {x:.3f}" for c, x in d["idle_cores"].items()))
    for c, (n, t) in sorted(d["cpuidle"].items()):
        print(f"cpuidle {c}: {n / dt:.0f} halts a s, halted {t / dt:.3f} of the window, mean halt {1e6 * t / max(1, n):.0f} µs")
    for c, (n, share, xs) in sorted(d["halts"].items()):
        print(f"traced halts CPU{c}: {n:.0f} a s, {share:.3f} of the window; {stats(xs)}")
    print("traced CPUs' idle time (share of the window) by what the vCPU threads were doing: " +
          ", ".join(f"{k} {x:.4f}" for k, x in sorted(d["classes"].items())))
    print("  queued on the busy CPU, by the waiting thread's kind: " +
          ", ".join(f"{k} {x:.4f}" for k, x in d["queued_kind"].items()) + f"; its stretches: {stats(d['queued_len'])}")
    print("  none queued, by vCPU threads blocked: " +
          ", ".join(f"{n} {x:.4f}" for n, x in d["none_queued_by_blocked"].items()))
    print("vCPU wake-ups a s: " + ", ".join(f"{k} {x:.0f}" for k, x in sorted(d["wakes"].items())))
    for k, xs in sorted(d["latency"].items()):
        print(f"  {k}: {stats(xs)}")


def main(argv: list[str]) -> int:
    """`host_idle.py OUT`; `--help` prints the docstring."""
    usage = "usage: host_idle.py OUT   (OUT from: host_trace.py record CASE OUT --wake-path)"
    if argv in (["-h"], ["--help"]):
        print(f"{usage}\n\n{__doc__}")
        return 0
    if len(argv) != 1 or argv[0].startswith("-") or not Path(argv[0] + ".proc").is_file():
        what = f"unknown flag {argv[0]}" if argv and argv[0].startswith("-") else (
            f"{argv[0]}.proc not found" if len(argv) == 1 else "one OUT expected")
        print(f"{usage}\nhost_idle.py: error: {what}", file=sys.stderr)
        return 2
    show(analyse(argv[0]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
