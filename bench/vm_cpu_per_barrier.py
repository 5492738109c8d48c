"""QEMU's host CPU seconds per guest barrier under a host condition (docs/scheduler.md §10.43):
does the guest's work per barrier cost the host more CPU when QEMU gets 1.78 cores than when it
gets one?

  python bench/vm_cpu_per_barrier.py record CASE {idle,busy-loop} OUT
  python bench/vm_cpu_per_barrier.py report [--top=N] OUT [OUT ...]
  python bench/vm_cpu_per_barrier.py record-locks CASE {idle,busy-loop} OUT
  python bench/vm_cpu_per_barrier.py locks OUT [OUT ...]
  python bench/vm_cpu_per_barrier.py holds OUT [OUT ...]
  python bench/vm_cpu_per_barrier.py record-probes CASE {idle,busy-loop} OUT PROBE [PROBE ...]
  python bench/vm_cpu_per_barrier.py probes OUT [OUT ...]

``record`` runs ``numalab vm check --moves --json --case CASE`` (``host_trace.py``'s ``_run``:
the sampler's window marks and /proc snapshots of every QEMU thread kept in ``OUT.proc``, the
check's JSON in ``OUT.json``) under ``perf record -e cpu-clock -F 997 -a -k CLOCK_MONOTONIC``
(``OUT.perf``). ``busy-loop`` first starts §10.18's ``sh -c 'while :; do :; done'`` in a session
of its own (``start_new_session``, ``setsid()``: with ``SCHED_AUTOGROUP`` its own task group, Linux ``kernel/sys.c:
ksys_setsid()`` → ``sched_autogroup_create_attach()``) and kills it after.

``report`` gives per run, over the command's window: the barrier (command_s / barriers), QEMU's
host cores by kind of thread (vCPU threads, the main loop, the rest: RCU, workers), their CPU
seconds per barrier (``schedstat`` run-time deltas, ``hostthreads``), the guest's own busy time
per barrier (``vm check``'s per-vCPU ``busy`` share of the command, the guest's clock), and the
vCPU threads' CPU split by where the host's samples fell: translated code (perf's ``[unknown]``
DSO: TCG's code buffer is anonymous memory), QEMU's binary (translation, helpers, softmmu, its
locks' fast path), the C library, the kernel (futex waits and wakes, scheduling, timers).

``record-locks`` records instead a uprobe at the entry and the return of QEMU's
``qemu_mutex_lock_impl(mutex, file, line)`` (``util/qemu-thread-posix.c``: every ``QemuMutex``
lock, the BQL's too, with its caller's ``__FILE__`` and ``__LINE__``), at the entry of
``qemu_mutex_unlock_impl()`` and at the entry and return of ``qemu_cond_wait_impl()``
(``LOCK_PROBES``), added with ``perf probe -x`` before and deleted after, with the host's
``sched:sched_switch`` and ``sched:sched_wakeup``; ``locks`` counts the lock calls per barrier by
calling site with the time from entry to return (the wait for the lock, plus the probes' own cost);
``holds`` gives the BQL's holds by site and thread, kept across a switch-out or not, the hold each
contended take waited behind, and the vCPU threads' blocks by what they were in
(``bql_holds.py``, docs/scheduler.md §10.56). A uprobe traps at every call:
the probed runs are several times slower, so their times are not the unprobed runs'.
``record-probes`` does the same with any ``perf probe -x`` specs on QEMU's functions (e.g.
``'cpu_exec%return ret=$retval:s32'`` ``cpu_loop_exit``), and ``probes`` counts each probe's hits
per barrier over the window, and a ``ret=`` field's values (``cpu_exec()``'s ``EXCP_*`` codes)."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
SAMPLE = re.compile(r"^\s*(\S.*?)\s+(\d+)\s+(\d+\.\d+):\s+cpu-clock\S*:\s+(\S+)\s+(.*?)\s*\((.*)\)\s*$")


QEMU = "/usr/bin/qemu-system-x86_64"
LOCK = re.compile(r"^\s*(\d+)\s+(\d+\.\d+):\s+probe_qemu:(\S+):\s*(.*)$")


def record(case: str, condition: str, out: str, events: tuple[str, ...] = ("-e", "cpu-clock", "-F", "997")) -> None:
    loop = None
    if condition == "busy-loop":
        loop = subprocess.Popen(["sh", "-c", "while :; do :; done"], start_new_session=True)
    try:
        cmd = ["perf", "record", "-q", "-k", "CLOCK_MONOTONIC", "-a", "-m", "4096", *events,
               "-o", out + ".perf", "--", sys.executable, str(HERE / "host_trace.py"), "_run", case, out]
        subprocess.run(cmd, check=True)
    finally:
        if loop is not None:
            os.killpg(loop.pid, signal.SIGTERM)
            loop.wait()


def record_probes(case: str, condition: str, out: str, specs: list[str]) -> None:
    """``record`` with uprobes on QEMU's functions in place of the CPU samples; deleted after."""
    try:
        for spec in specs:
            subprocess.run(["perf", "probe", "-q", "-x", QEMU, "--add", spec], check=True)
        listed = subprocess.run(["perf", "probe", "-l"], capture_output=True, text=True, check=True).stdout
        events = [w for line in listed.splitlines() if (w := line.split()[0]).startswith("probe_qemu:")]
        record(case, condition, out, tuple(x for e in events for x in ("-e", e)))
    finally:
        subprocess.run(["perf", "probe", "-q", "-d", "probe_qemu:*"], check=False)


def probes(out: str) -> None:
    """Each probe's hits per barrier over the command's window, and the values of ``ret=``."""
    _, marks, _ = proc(out + ".proc")
    g = next(iter(json.loads(Path(out + ".json").read_text()).values()))["guest"]
    barriers = int(g["barriers"])
    text = subprocess.run(["perf", "script", "-i", out + ".perf", "--time", f"{marks['start']},{marks['end']}",
                           "-F", "tid,time,event,trace"], capture_output=True, text=True, errors="replace",
                          check=True).stdout
    hits: Counter[str] = Counter()
    rets: Counter[str] = Counter()
    for line in text.splitlines():
        m = LOCK.match(line)
        if m:
            hits[m[3]] += 1
            if r := re.search(r"\bret=(-?\d+)", m[4]):
                rets[f"{m[3]} {int(r[1]):#x}"] += 1
    print(f"{out}: barrier {float(g['command_s']) / barriers * 1e3:.3f} ms (probed); per barrier: "
          + ", ".join(f"{k} {v / barriers:.1f}" for k, v in hits.most_common())
          + "; returned: " + ", ".join(f"{k} {v / barriers:.1f}" for k, v in rets.most_common()))


#: ``record-locks``' uprobes (x86-64: the arguments in rdi, rsi, rdx, rcx). QEMU 7.2's
#: ``util/qemu-thread-posix.c``: ``qemu_mutex_lock_impl(mutex, file, line)`` and
#: ``qemu_mutex_unlock_impl(mutex, file, line)`` are every ``QemuMutex``'s lock and unlock, the BQL's
#: too (``softmmu/cpus.c: qemu_mutex_lock_iothread_impl()`` / ``qemu_mutex_unlock_iothread()``);
#: ``qemu_cond_wait_impl(cond, mutex, file, line)`` releases and retakes the mutex inside
#: ``pthread_cond_wait()`` with neither (a halted vCPU thread's wait in ``qemu_wait_io_event()``).
LOCK_PROBES = ("qemu_mutex_lock_impl mutex=%di:x64 file=+0(%si):string line=%dx:s32",
               "qemu_mutex_lock_impl%return",
               "qemu_mutex_unlock_impl mutex=%di:x64 file=+0(%si):string line=%dx:s32",
               "qemu_cond_wait_impl mutex=%si:x64 file=+0(%dx):string line=%cx:s32",
               "qemu_cond_wait_impl%return")
LOCK_EVENTS = ("qemu_mutex_lock_impl", "qemu_mutex_lock_impl__return", "qemu_mutex_unlock_impl",
               "qemu_cond_wait_impl", "qemu_cond_wait_impl__return")


def record_locks(case: str, condition: str, out: str) -> None:
    """``record`` with ``LOCK_PROBES`` and the host's ``sched:sched_switch`` / ``sched:sched_wakeup``
    (every CPU) in place of the CPU samples; the probes are deleted whatever happens."""
    try:
        for spec in LOCK_PROBES:
            subprocess.run(["perf", "probe", "-q", "-x", QEMU, "--add", spec], check=True)
        record(case, condition, out, tuple(x for e in [f"probe_qemu:{e}" for e in LOCK_EVENTS]
                                           + ["sched:sched_switch", "sched:sched_wakeup"] for x in ("-e", e)))
    finally:
        subprocess.run(["perf", "probe", "-q", "-d", "probe_qemu:*"], check=False)


def locks(out: str) -> None:
    """Per calling site over the command's window: lock calls per barrier, the time from entry to
    return per barrier and per call, and the calls that took over 20 µs per barrier."""
    _, marks, _ = proc(out + ".proc")
    doc = next(iter(json.loads(Path(out + ".json").read_text()).values()))
    barriers = int(doc["guest"]["barriers"])
    text = subprocess.run(["perf", "script", "-i", out + ".perf", "--time", f"{marks['start']},{marks['end']}",
                           "-F", "tid,time,event,trace"], capture_output=True, text=True, errors="replace",
                          check=True).stdout
    entered: dict[int, tuple[float, str]] = {}
    calls: Counter[str] = Counter()
    waited: dict[str, float] = {}
    slow: Counter[str] = Counter()
    for line in text.splitlines():
        m = LOCK.match(line)
        if not m:
            continue
        tid, t = int(m[1]), float(m[2])
        if m[3] == "qemu_mutex_lock_impl":
            f = re.search(r'file="([^"]*)" line=(-?\d+)', m[4])
            entered[tid] = (t, f"{f[1].rsplit('/', 1)[-1]}:{f[2]}" if f else "?")
        elif m[3] == "qemu_mutex_lock_impl__return" and tid in entered:
            t_in, site = entered.pop(tid)
            calls[site] += 1
            waited[site] = waited.get(site, 0.0) + t - t_in
            slow[site] += t - t_in > 20e-6
    g = doc["guest"]
    print(f"{out}: barrier {float(g['command_s']) / barriers * 1e3:.3f} ms (probed), "
          f"lock calls per barrier {sum(calls.values()) / barriers:.1f}")
    for site, n in calls.most_common(12):
        print(f"  {site:32} {n / barriers:8.2f} a barrier, to return {waited[site] / barriers * 1e3:7.3f} ms a "
              f"barrier, {waited[site] / n * 1e6:6.1f} us a call, over 20 us {slow[site] / barriers:6.2f} a barrier")


def holds(out: str) -> None:
    """``bql_holds.holds()`` over the command's window of a ``record-locks`` trace, with its takes
    per barrier and per second of a vCPU thread's run (``schedstat``'s run time, ``OUT.proc``)."""
    import bql_holds

    pid, marks, snaps = proc(out + ".proc")
    g = next(iter(json.loads(Path(out + ".json").read_text()).values()))["guest"]
    barriers = int(g["barriers"])
    vcpu_s = sum((run - snaps["start"][tid][0]) / 1e9 for tid, (run, name) in snaps["end"].items()
                 if name.startswith("CPU ") and tid in snaps["start"])
    text = subprocess.run(["perf", "script", "--ns", "-i", out + ".perf", "--time", f"{marks['start']},{marks['end']}",
                           "-F", "comm,tid,cpu,time,event,trace"], capture_output=True, text=True, errors="replace",
                          check=True).stdout
    bql, how = bql_holds.bql_of(text)
    d = bql_holds.holds(text, marks["start"], marks["end"], pid, bql)
    Path(out + ".holds.json").write_text(json.dumps({"bql": bql, "how": how, "vcpu_run_s": vcpu_s,
                                                     "barriers": barriers, **d}, indent=1))
    print(f"{out}: barrier {float(g['command_s']) / barriers * 1e3:.3f} ms (probed); the BQL {bql} ({how}); "
          f"vCPU threads ran {vcpu_s:.3f} s; uncontended take, entry to return (the probes' floor): "
          f"median {d['uncontended'].get('median_us', 0):.1f} us (n {d['uncontended']['n']}); odd: {d['odd']}")
    print("  takes: a barrier, a second of vCPU run")
    for k, n in d["takes"].items():
        print(f"    {k:50} {n / barriers:9.1f} {n / vcpu_s:9.0f}")
    print("  holds: n, median / p90 / mean us, probe hits inside a hold, kept (switched out during it): n, "
          "median off us, switch-outs R/S, share of hold time")
    for k, r in sorted(d["holds"].items(), key=lambda kv: -kv[1]["sum_s"]):
        ko = r["kept_off"]
        print(f"    {k:50} {r['n']:7} {r['median_us']:7.1f} {r['p90_us']:7.1f} {r['mean_us']:7.1f} "
              f"{r['nested_probes']:5.1f}  kept {r['kept']:5} {ko.get('median_us', 0):8.1f} {r['outs']} "
              f"{r['sum_s'] / sum(x['sum_s'] for x in d['holds'].values()):.3f}")
    print("  contended takes (BQL held by another at entry): n, blocked, wait median / p90 us, "
          "after the wake-up to return median us")
    for k, r in sorted(d["waits"].items(), key=lambda kv: -kv[1]["n"]):
        print(f"    {k:50} {r['n']:6} {r['blocked']:6} {r['wait'].get('median_us', 0):8.1f} "
              f"{r['wait'].get('p90_us', 0):8.1f} {r['after_wake'].get('median_us', 0):8.1f}")
    print("  waited behind: the waiter, the holder's kind and site, its state at the take's entry, the hold kept: "
          "n, wait median us")
    for k, r in list(d["behind"].items())[:20]:
        print(f"    {k:110} {r['n']:6} {r['wait']['median_us']:8.1f}")
    print("  vCPU threads' blocked spells (switch-out in S/D to the wake-up) by what the thread was in: "
          "under 0.3 ms (median us), 0.3 ms or more")
    for k, r in d["vcpu_blocks"].items():
        print(f"    {k:50} {r['short']:6} ({r['short_median_us']:7.1f}) {r['long']:6}")
    print("  a cond wait's retake that blocked, the hold it found: " + "; ".join(
        f"{k} {n}" for k, n in list(d["retakes_behind"].items())[:6]))


def proc(path: str) -> tuple[int, dict[str, float], dict[str, dict[int, tuple[int, str]]]]:
    """QEMU's pid, the window marks, each mark's {tid: (run_ns, name)}."""
    pid = 0
    marks: dict[str, float] = {}
    snaps: dict[str, dict[int, tuple[int, str]]] = {}
    cur: dict[int, tuple[int, str]] | None = None
    for line in Path(path).read_text().splitlines():
        a = line.split(maxsplit=7)
        if a[0] == "pid":
            pid = int(a[1])
        elif a[0] == "mark":
            marks[a[2]] = float(a[1])
            cur = snaps.setdefault(a[2], {})
        elif cur is not None and len(a) == 8:
            cur[int(a[1])] = (int(a[2]), a[7])
    return pid, marks, snaps


def where(dso: str) -> str:
    if dso == "[unknown]" or dso.rsplit("/", 1)[-1].startswith("perf-") or dso.startswith("//anon"):
        return "translated code"
    if "qemu" in dso:
        return "qemu binary"
    if "libc" in dso or "libpthread" in dso or "ld-linux" in dso:
        return "libc"
    if dso.startswith("[kernel") or dso == "[vdso]":
        return "kernel"
    return "other " + dso.rsplit("/", 1)[-1]


def report(out: str, top: int) -> None:
    pid, marks, snaps = proc(out + ".proc")
    t0, t1 = marks["start"], marks["end"]
    doc = next(iter(json.loads(Path(out + ".json").read_text()).values()))
    g = doc["guest"]
    barriers, command_s = int(g["barriers"]), float(g["command_s"])
    kinds: dict[str, float] = {"vCPU": 0.0, "main loop": 0.0, "other": 0.0}
    vcpu_tids = set()
    for tid, (run, name) in snaps["end"].items():
        if tid not in snaps["start"]:
            continue
        k = "vCPU" if name.startswith("CPU ") else "main loop" if tid == pid else "other"
        if k == "vCPU":
            vcpu_tids.add(tid)
        kinds[k] += (run - snaps["start"][tid][0]) / 1e9
    window = t1 - t0
    total = sum(kinds.values())
    per = {k: v / barriers * 1e3 for k, v in kinds.items()}
    guest_busy = sum(float(b) for b in g["busy"]) * command_s / barriers * 1e3
    print(f"{out}: {g.get('threads')} threads, barrier {command_s / barriers * 1e3:.3f} ms, window {window:.3f} s, "
          f"QEMU {total / window:.3f} cores (vCPU {kinds['vCPU'] / window:.3f}, main {kinds['main loop'] / window:.3f}, "
          f"other {kinds['other'] / window:.3f})")
    print(f"  host CPU ms per barrier: all {total / barriers * 1e3:.3f}  vCPU {per.get('vCPU', 0):.3f}  "
          f"main loop {per.get('main loop', 0):.3f}  other {per.get('other', 0):.3f};  guest busy ms per barrier "
          f"(all vCPUs, guest clock) {guest_busy:.3f};  vCPU host CPU / guest busy {per.get('vCPU', 0) / guest_busy:.3f}")
    text = subprocess.run(["perf", "script", "-i", out + ".perf", "-F", "comm,tid,time,event,ip,sym,dso"],
                          capture_output=True, text=True, check=True).stdout
    split: Counter[str] = Counter()
    syms: Counter[str] = Counter()
    cpus: Counter[str] = Counter()
    for line in text.splitlines():
        m = SAMPLE.match(line)
        if not m or not t0 <= float(m[3]) <= t1:
            continue
        tid = int(m[2])
        if tid in vcpu_tids:
            split[where(m[6])] += 1
            sym = m[5] if m[5] and m[5] != "[unknown]" else "?"
            syms[f"{where(m[6])}: {sym if where(m[6]) != 'translated code' else ''}"] += 1
        elif tid == 0 or m[1] == "swapper":
            cpus["idle"] += 1
        else:
            cpus["QEMU" if tid in snaps["end"] else "other tasks"] += 1
    n = sum(split.values())
    if n:
        print("  vCPU threads' samples (" + str(n) + "): " + ", ".join(
            f"{k} {v / n:.3f} ({v / n * per.get('vCPU', 0):.3f} ms/barrier)" for k, v in split.most_common()))
    if n and top:
        print(f"  vCPU threads' top {top} symbols, ms per barrier: " + "; ".join(
            f"{k} {v / n * per.get('vCPU', 0):.3f}" for k, v in syms.most_common(top)))
    allc = sum(cpus.values()) + n
    if allc:
        print("  host CPUs' samples: " + ", ".join(f"{k} {v / allc:.3f}" for k, v in
                                                  (cpus + Counter({"QEMU vCPU": n})).most_common()))


USAGE = ("usage: vm_cpu_per_barrier.py record|record-locks CASE {idle,busy-loop} OUT | record-probes CASE "
         "{idle,busy-loop} OUT PROBE... | report [--top=N] OUT... | locks OUT... | holds OUT... | probes OUT...")


def fail(what: str) -> None:
    print(f"{USAGE}\nvm_cpu_per_barrier.py: error: {what}", file=sys.stderr)
    sys.exit(2)


def main() -> None:
    if sys.argv[1:2] in (["-h"], ["--help"]):
        print(f"{USAGE}\n\n{__doc__}")
        return
    if sys.argv[1:2] in (["record"], ["record-locks"], ["record-probes"]) and len(sys.argv) >= 4:
        from numalab.vm import check

        if sys.argv[2] not in check.CASES:
            fail(f"no case {sys.argv[2]!r} (one of numalab vm check's: {', '.join(check.CASES)})")
        if sys.argv[3] not in ("idle", "busy-loop"):
            fail(f"condition {sys.argv[3]!r} is neither idle nor busy-loop")
    if len(sys.argv) == 5 and sys.argv[1] == "record":
        record(sys.argv[2], sys.argv[3], sys.argv[4])
    elif len(sys.argv) == 5 and sys.argv[1] == "record-locks":
        record_locks(sys.argv[2], sys.argv[3], sys.argv[4])
    elif len(sys.argv) >= 6 and sys.argv[1] == "record-probes":
        record_probes(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5:])
    elif len(sys.argv) >= 3 and sys.argv[1] == "probes":
        for out in sys.argv[2:]:
            probes(out)
    elif len(sys.argv) >= 3 and sys.argv[1] == "holds":
        for out in sys.argv[2:]:
            holds(out)
    elif len(sys.argv) >= 3 and sys.argv[1] == "locks":
        for out in sys.argv[2:]:
            locks(out)
    elif len(sys.argv) >= 3 and sys.argv[1] == "report":
        top = int(sys.argv[2].split("=", 1)[1]) if sys.argv[2].startswith("--top=") else 0
        for out in sys.argv[2 + bool(top):]:
            report(out, top)
    else:
        fail(f"no command or wrong arguments: {' '.join(sys.argv[1:]) or 'none'}")


if __name__ == "__main__":
    main()
