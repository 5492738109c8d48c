"""Which kernel path moved a command's threads in the guest, and the simulator's same count
(docs/scheduler.md §10.4).

In the guest, ``JOB`` (a shell script for ``numalab vm run -- sh -c JOB sh "CMD ARGS"``) turns on
schedstats, records every ``sched:sched_migrate_task`` of the command's threads with the kernel
stack that made it (the event's ``stacktrace`` trigger; kernel/trace/trace_events_trigger.c),
runs the command under the agent, and prints ``/proc/schedstat`` before and after
(Documentation/scheduler/sched-stats.rst, version 15: kernel/sched/stats.c: show_schedstat())
and the moves counted by stack. ``report`` reads that output back: moves by path (``path_of``),
how many crossed nodes, how busy the guest's CPUs were and how often they went idle.
``sim_sched`` gives the simulator's moves by path for a ``vm check`` case (its
``--explain-sched`` decisions), its CPUs' same two figures (the document's ``sched_cpus``) and
its run queues as ``RQ_AWK`` counts the guest's (``sim_rq``, docs/scheduler.md §10.25).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Any

from numalab.console.tables import render, table
from numalab.vm import hostthreads

#: Each vCPU's count of runnable barrier threads (queued or running) over the command's run,
#: rebuilt from the trace: ``sched_wakeup``/``sched_wakeup_new`` put a thread on ``target_cpu``
#: (kernel/sched/core.c: ttwu_do_wakeup(), wake_up_new_task()), ``sched_migrate_task`` moves it
#: (set_task_cpu()), ``sched_switch`` takes it off when ``prev_state`` is not R (it slept or
#: exited; R+ is a preemption: still queued, __schedule()) and puts ``next`` on its CPU. Prints
#: per CPU the seconds at 0, 1, 2 and 3+ ("rq CPU s0 s1 s2 s3"), from the first barrier event to
#: the last, and per idle tick (``tick_sched_timer`` in the idle task, traced as for
#: "idleticks") between them: "tick CPU longest own count", the longest count over the CPUs and
#: the ticking CPU's own at that moment (3 is 3+); and "imbalanced S SPAN", the seconds some CPU
#: had 2+ while another had none (what an idle CPU's balance could pull), of the span, and
#: "episodes B N": N such stretches of up to 0.5 ms * 2^B (B = 5: longer than 8 ms); and "since J
#: N": N idle ticks J whole jiffies (``jiffy``: 1/HZ s) after their CPU's last thread left it
#: (J = 5: 5 or more; from the first event when it never had one). Kept as awk so the guest sends summaries, not
#: events (its output is capped at 1 MiB).
RQ_AWK = r"""
function acc(c, t) { h[c, n[c] > 3 ? 3 : n[c] + 0] += t - last[c]; last[c] = t }
function add(c, d, t) { acc(c, t); n[c] += d; if (n[c] == 0) z[c] = t }
function gacc(t) { if (imb) { gi += t - gl; ge += t - gl }; gl = t }
function ep() { if (imb) return; if (ge > 0) { bk = 0; for (w = 0.0005; ge > w && bk < 5; w *= 2) bk++; eps[bk]++ }; ge = 0 }
function gset() { mx = 0; mn = 99; for (c = 0; c < ncpu; c++) { if (n[c] > mx) mx = n[c]; if (n[c] + 0 < mn) mn = n[c] + 0 }; imb = (mx >= 2 && mn == 0) }
function on(p, c, t) { if (!run[p]) { run[p] = 1; at[p] = c; add(c, 1, t) } else if (at[p] != c) { add(at[p], -1, t); at[p] = c; add(c, 1, t) } }
{
  cpu = -1; ts = -1
  for (i = 1; i <= NF; i++) {
    if (cpu < 0 && $i ~ /^\[[0-9]+\]$/) cpu = substr($i, 2, length($i) - 2) + 0
    if ($i ~ /^[0-9]+\.[0-9]+:$/) { ts = substr($i, 1, length($i) - 1) + 0; ev = $(i + 1); break }
  }
  if (ts < 0) next
  split("", kv)
  for (j = i + 2; j <= NF; j++) if ((k = index($j, "=")) > 0) kv[substr($j, 1, k - 1)] = substr($j, k + 1)
  if (ev == "hrtimer_expire_entry:") {
    if (t0 == "") next
    m = 0; for (c = 0; c < ncpu; c++) if (n[c] > m) m = n[c]
    pend[cpu " " (m > 3 ? 3 : m) " " (n[cpu] > 3 ? 3 : n[cpu] + 0)]++
    if (n[cpu] + 0 == 0) { j = int((ts - z[cpu]) / jiffy); psince[j > 5 ? 5 : j]++ }
    next
  }
  b = (kv["comm"] == "barrier" || kv["prev_comm"] == "barrier" || kv["next_comm"] == "barrier")
  if (!b) next
  if (t0 == "") { t0 = ts; gl = ts; for (c = 0; c < ncpu; c++) { last[c] = ts; z[c] = ts } }
  t1 = ts
  gacc(ts)
  for (x in pend) tk[x] += pend[x]
  for (x in psince) since[x] += psince[x]
  split("", pend); split("", psince)
  if (ev == "sched_wakeup:" || ev == "sched_wakeup_new:") on(kv["pid"], kv["target_cpu"] + 0, ts)
  else if (ev == "sched_migrate_task:") { p = kv["pid"]; d = kv["dest_cpu"] + 0
    if (run[p] && at[p] != d) { add(at[p], -1, ts); add(d, 1, ts) }
    at[p] = d }
  else if (ev == "sched_switch:") {
    if (kv["prev_comm"] == "barrier") { p = kv["prev_pid"]; if (kv["prev_state"] !~ /^R/ && run[p]) { run[p] = 0; add(at[p], -1, ts) } }
    if (kv["next_comm"] == "barrier") on(kv["next_pid"], cpu, ts)
  }
  gset(); ep()
}
END {
  if (t0 == "") exit
  for (c = 0; c < ncpu; c++) { acc(c, t1); printf "rq %d", c; for (q = 0; q <= 3; q++) printf " %.6f", h[c, q]; printf "\n" }
  gacc(t1); imb = 0; ep(); for (bk in eps) print "episodes", bk, eps[bk]
  for (j in since) print "since", j, since[j]
  printf "imbalanced %.6f %.6f\n", gi, t1 - t0
  for (x in tk) print "tick", x, tk[x]
}
"""

#: The idle ticks traced (``tick_sched_timer`` expiring in the idle task) by ``now`` modulo a
#: jiffy (4 ms at the guest's HZ 250) in 0.25 ms bins, "bin count": the kernel aligns the tick to
#: whole jiffies (kernel/time/tick-sched.c: tick_init_jiffy_update()), so a vCPU the host runs as
#: its tick comes handles it in bin 0 or 1 (docs/scheduler.md §10.12). A stopped tick's one-shot
#: timer lands anywhere.
TICKPHASE_AWK = r"""
/hrtimer_expire_entry:/ { for (i = 1; i <= NF; i++) if ($i ~ /^now=/) { b[int((substr($i, 5) % 4000000) / 250000)]++; break } }
END { for (k in b) print k, b[k] }
"""

#: The guest's job. ``$1`` is the command line (word-split by the shell). Its console lines
#: around the command (``hostthreads.WINDOW_START``, ``WINDOW_END``) make the host snapshot
#: QEMU's threads (``guest_run``, docs/scheduler.md §10.13). The trigger's own
#: filter keeps other tasks' stacks out (a trigger fires whatever the event's filter says).
#: Each move is printed as "count orig_cpu dest_cpu <frame<frame..." (the stack's first 14
#: frames, innermost first), after the CPUs' nodes and the two schedstat snapshots.
JOB = r"""echo 1 > /proc/sys/kernel/sched_schedstats
T=/sys/kernel/debug/tracing
[ -d $T/events ] || { mkdir -p /sys/kernel/tracing; mount -t tracefs nodev /sys/kernel/tracing; T=/sys/kernel/tracing; }
E=$T/events/sched/sched_migrate_task
echo 8192 > $T/buffer_size_kb
echo 'comm == "barrier"' > $E/filter
echo 'stacktrace if comm == "barrier"' > $E/trigger
echo 1 > $E/enable
for e in sched_wakeup sched_wakeup_new; do echo 'comm == "barrier"' > $T/events/sched/$e/filter; echo 1 > $T/events/sched/$e/enable; done
echo 'prev_comm == "barrier" || next_comm == "barrier"' > $T/events/sched/sched_switch/filter
echo 1 > $T/events/sched/sched_switch/enable
H=$T/events/timer/hrtimer_expire_entry
A=$(grep " tick_sched_timer$" /proc/kallsyms | cut -d" " -f1)
[ -n "$A" ] && [ -d $H ] && echo "common_pid == 0 && function == 0x$A" > $H/filter && echo 1 > $H/enable
echo 1 > $T/tracing_on
echo "== cpunode"; for c in /sys/devices/system/cpu/cpu[0-9]*; do echo "${c##*cpu} $(ls -d $c/node* | sed 's/.*node//')"; done
tk() { grep -E "^cpu:|idle_calls|idle_sleeps" /proc/timer_list; grep "LOC:" /proc/interrupts; }
tk > /tmp/k0
cat /proc/schedstat > /tmp/s0
echo "@WINDOW_START@" > /dev/console
numalab-agent run --interval-ms=1000 --maps-budget-pct=100 --output=/tmp/inner.jsonl -- $1 > /tmp/cmd.out 2>&1
R=$?
echo "@WINDOW_END@" > /dev/console
echo "== status $R"
cat /proc/schedstat > /tmp/s1
tk > /tmp/k1
echo 0 > $T/tracing_on
echo "== schedstat0"; cat /tmp/s0
echo "== schedstat1"; cat /tmp/s1
echo "== ticks0"; cat /tmp/k0
echo "== ticks1"; cat /tmp/k1
echo "== trace"
awk '
/sched_migrate_task:/ { if (o != "") print o, d, sig; sig=""; n=0; o="?"; d="?";
  for (i=1;i<=NF;i++) { if ($i ~ /^orig_cpu=/) o=substr($i,10); if ($i ~ /^dest_cpu=/) d=substr($i,10) } next }
/^ => / { if (n < 14) { sig = sig "<" $2; n++ } next }
END { if (o != "") print o, d, sig }' $T/trace | sort | uniq -c
echo "== idleticks"; awk '/hrtimer_expire_entry:/ { for (i=1;i<=NF;i++) if ($i ~ /^\[[0-9]+\]$/) { n[substr($i,2,length($i)-2)+0]++; break } }
END { for (c in n) print c, n[c] }' $T/trace | sort -n
echo "== tickphase"; awk '""" + TICKPHASE_AWK + r"""' $T/trace | sort -n
echo "== rq"; awk -v ncpu=$(nproc) -v jiffy=0.004 '""" + RQ_AWK + r"""' $T/trace | sort -k1,1 -k2n
echo "== agent"; tail -n 1 /tmp/inner.jsonl
echo; echo "== command"; tail -n 5 /tmp/cmd.out
"""
JOB = JOB.replace("@WINDOW_START@", hostthreads.WINDOW_START).replace("@WINDOW_END@", hostthreads.WINDOW_END)

#: ``path_of``'s names, in the order the report lists them.
PATHS = ("wake-up (futex)", "wake-up (other)", "newly idle balance", "periodic balance, idle CPU", "NOHZ idle balance",
         "periodic balance, busy CPU", "active balance", "fork", "exec", "affinity", "NUMA balancing", "other", "no stack")
#: ``newidle_balance()`` is ``sched_balance_newidle()`` in later stable 6.1 builds (Debian's 6.1.192).
NEWIDLE = {"newidle_balance", "sched_balance_newidle"}
EVENT_FRAME = "trace_event_raw_event_sched_migrate_task"


def path_of(frames: list[str]) -> str:
    """The kernel path of one move from its stack (innermost first): kernel/sched/core.c:
    try_to_wake_up() (the wake-up's ``select_task_rq()``; futex_wake() for a barrier's sleepers),
    wake_up_new_task(), sched_exec(), migration_cpu_stop() (an affinity change); fair.c:
    load_balance() by caller (newidle_balance(); rebalance_domains() from _nohz_idle_balance(),
    from an idle CPU's tick (do_idle()) or a busy one's), active_load_balance_cpu_stop(),
    migrate_swap_stop() and migrate_task_to() (NUMA balancing)."""
    if not frames:
        return "no stack"
    # A stack the trace printed without its event line belongs to another task: cut there.
    if EVENT_FRAME in frames[1:]:
        frames = frames[:frames.index(EVENT_FRAME, 1)]
    s = set(frames)
    if "try_to_wake_up" in s:
        return "wake-up (futex)" if "futex_wake" in s else "wake-up (other)"
    for frame, path in (("wake_up_new_task", "fork"), ("sched_exec", "exec"), ("active_load_balance_cpu_stop", "active balance")):
        if frame in s:
            return path
    if "load_balance" in s:
        if s & NEWIDLE:
            return "newly idle balance"
        if any(f.startswith("_nohz_idle_balance") or f == "nohz_idle_balance" for f in s):
            return "NOHZ idle balance"
        return "periodic balance, idle CPU" if "do_idle" in s else "periodic balance, busy CPU"
    if s & {"migration_cpu_stop", "__set_cpus_allowed_ptr"}:
        return "affinity"
    if s & {"migrate_swap_stop", "migrate_task_to"}:
        return "NUMA balancing"
    return "other"


@dataclass(frozen=True)
class GuestMoves:
    """One guest run: moves and cross-node moves by path, the agent's ``nr_migrations`` summed
    over the threads (the same moves counted by the kernel), threads and barriers, each CPU's
    busy share (``rq_cpu_time`` over the snapshots' interval) and idle entries (``sched_goidle``)."""

    moves: Counter[str]
    cross: Counter[str]
    nr_migrations: int
    threads: int
    barriers: int
    busy: list[float]
    lb_gained: dict[str, Counter[str]]
    goidle: list[int] = field(default_factory=list)
    ticks: Ticks | None = None
    rq: RunQueues | None = None
    #: QEMU's threads on the host over the command (``hostthreads``), when sampled.
    host: hostthreads.HostThreads | None = None
    #: The idle ticks (``tick_sched_timer`` in the idle task) by their time past the jiffy
    #: (``now`` modulo 4 ms) in 16 bins of 0.25 ms: a tick the host ran the vCPU for on time
    #: falls in the first (docs/scheduler.md §10.12); empty without it.
    tick_phase: list[int] = field(default_factory=list)
    #: ``load_balance()``'s counters over the run, summed over the CPUs: ``lb[domain][idle
    #: type]`` in ``LB_COUNTERS`` order (docs/scheduler.md §10.15).
    lb: dict[str, dict[str, list[int]]] = field(default_factory=dict)
    #: The command's own time (kernels/barrier.c's ``time_s``, guest seconds over its barriers):
    #: the guest's speed in this run, which the host's load changes (docs/scheduler.md §10.18).
    command_s: float | None = None


@dataclass(frozen=True)
class RunQueues:
    """Runnable barrier threads per CPU over a run (``RQ_AWK``): ``time[cpu][k]``, seconds with
    k of them (k = 0, 1, 2, 3 for 3+); ``ticks[(longest, own)]``, idle ticks by the longest
    count over the CPUs and the ticking CPU's own at that moment; ``imbalanced_s``, the seconds
    of ``span_s`` some CPU had 2+ while another had none, and ``episodes[b]`` how many such
    stretches lasted up to 0.5 ms * 2^b (``b`` = 5: longer than 8 ms); ``since[j]``, idle ticks
    on a CPU with none, ``j`` whole jiffies after its last thread left it (5: 5 or more)."""

    time: list[list[float]]
    ticks: Counter[tuple[int, int]]
    imbalanced_s: float = 0.0
    span_s: float = 0.0
    episodes: list[int] = field(default_factory=lambda: [0] * 6)
    since: list[int] = field(default_factory=lambda: [0] * 6)

    def shares(self) -> list[float]:
        """The share of CPU-time at 0, 1, 2 and 3+ runnable threads, over all CPUs."""
        tot = [sum(t[k] for t in self.time) for k in range(4)]
        return [x / sum(tot) if sum(tot) else 0.0 for x in tot]

    def longest_at_ticks(self) -> list[int]:
        """Idle ticks on a CPU with none of the threads by the longest count over the CPUs
        then: 0, 1, 2, 3+ (a tick that finds a thread queued on its own CPU is left out: the
        idle task had not yet switched to it, and scheduler_tick() sees the CPU busy)."""
        return [sum(n for (m, o), n in self.ticks.items() if m == k and o == 0) for k in range(4)]

    def figures(self) -> RqFigures:
        """What ``rq_line`` prints: shares at 0-3+, idle ticks by the longest, the imbalanced
        share of the run, its stretches by length and the idle ticks by jiffies since."""
        return RqFigures(self.shares(), [float(n) for n in self.longest_at_ticks()],
                         self.imbalanced_s / self.span_s if self.span_s else 0.0,
                         [float(n) for n in self.episodes], [float(n) for n in self.since])


@dataclass(frozen=True)
class RqFigures:
    """``RunQueues.figures()``, or their mean over runs (``mean_rq``)."""

    shares: list[float]
    longest_at_ticks: list[float]
    imbalanced: float
    episodes: list[float]
    since: list[float]


def mean_rq(runs: list[RunQueues]) -> RqFigures:
    """Each figure's mean over ``runs`` (the simulator's seeds)."""
    figs = [r.figures() for r in runs]

    def mean(rows: list[list[float]]) -> list[float]:
        return [sum(col) / len(col) for col in zip(*rows)]
    return RqFigures(mean([f.shares for f in figs]), mean([f.longest_at_ticks for f in figs]),
                     sum(f.imbalanced for f in figs) / len(figs), mean([f.episodes for f in figs]),
                     mean([f.since for f in figs]))


def rq_line(who: str, f: RqFigures) -> str:
    """One side's run queues on one line, as ``vm check --moves`` prints the guest's and the
    simulator's (counts with a decimal when they are a mean)."""
    def counts(xs: list[float]) -> str:
        return " / ".join(f"{x:.0f}" if float(x).is_integer() else f"{x:.1f}" for x in xs)
    return (f"{who} CPU-time at 0 / 1 / 2 / 3+ runnable threads: " + " / ".join(f"{x:.3f}" for x in f.shares)
            + "; idle ticks by the longest run queue then (0 / 1 / 2 / 3+): " + counts(f.longest_at_ticks)
            + f"; some CPU at 2+ while another at 0: {f.imbalanced:.3f} of the run"
            + ", stretches of it up to 0.5 / 1 / 2 / 4 / 8 / over 8 ms: " + counts(f.episodes)
            + "; idle ticks 0 / 1 / 2 / 3 / 4 / 5+ jiffies after the CPU's last thread left: " + counts(f.since))


def idle_ticks_per_entry(rq: RunQueues | None, goidle: list[int]) -> str | None:
    """How often an idle CPU's own tick came while it was still idle with nothing queued (the
    ticks ``longest_at_ticks`` counts, at which ``rebalance_domains(CPU_IDLE)`` can run) per idle
    entry (``sched_goidle``), with the two counts; None without both. On a host that runs a halted
    vCPU late its kept tick comes once a wake-up has queued a thread, and then the CPU is not idle
    (docs/scheduler.md §10.50)."""
    entries = sum(goidle)
    if rq is None or not entries:
        return None
    ticks = sum(rq.longest_at_ticks())
    return f"{ticks / entries:.2f} ({ticks} of {entries})"


def sim_rq(doc: dict[str, Any]) -> RunQueues | None:
    """The simulator's run queues (``--explain-sched``'s ``sched_rq`` and each CPU's ``rq_s``,
    crates/numalab-sim/src/sched/rq_trace.rs, counted as ``RQ_AWK`` counts the guest's), or None
    without them."""
    rq = doc.get("sched_rq")
    cpus = sorted(doc.get("sched_cpus", []), key=lambda c: int(c["cpu"]))
    if not rq or not cpus:
        return None
    ticks: Counter[tuple[int, int]] = Counter()
    for m, o, n in rq["ticks"]:
        ticks[(int(m), int(o))] += int(n)
    return RunQueues([[float(x) for x in c["rq_s"]] for c in cpus], ticks, float(rq["imbalanced_s"]), float(rq["span_s"]),
                     [int(x) for x in rq["episodes"]], [int(x) for x in rq["since"]])


def rq_of(lines: list[str]) -> RunQueues | None:
    """``RQ_AWK``'s output, or None without it (a run before the trace had it, or no thread)."""
    time: dict[int, list[float]] = {}
    ticks: Counter[tuple[int, int]] = Counter()
    imb = (0.0, 0.0)
    episodes = [0] * 6
    since = [0] * 6
    for line in lines:
        a = line.split()
        if len(a) == 3 and a[0] == "imbalanced":
            imb = (float(a[1]), float(a[2]))
        elif len(a) == 3 and a[0] == "episodes":
            episodes[int(a[1])] = int(a[2])
        elif len(a) == 3 and a[0] == "since":
            since[int(a[1])] = int(a[2])
        elif len(a) == 6 and a[0] == "rq":
            time[int(a[1])] = [float(x) for x in a[2:]]
        elif len(a) == 5 and a[0] == "tick":
            ticks[(int(a[2]), int(a[3]))] += int(a[4])
    if not time:
        return None
    return RunQueues([time.get(c, [0.0] * 4) for c in range(max(time) + 1)], ticks, *imb, episodes, since)


@dataclass(frozen=True)
class Ticks:
    """Per CPU over the command's run, from ``/proc/timer_list`` (kernel/time/timer_list.c:
    print_cpu()) and ``/proc/interrupts``: ``idle_calls``, the idle loop's tries to stop the tick
    (kernel/time/tick-sched.c: __tick_nohz_idle_stop_tick(), once per pass of do_idle()'s loop,
    so at each idle entry and again after every interrupt that wakes the idle CPU, its own tick
    included); ``idle_sleeps``, those that left the tick stopped; ``loc``, local timer
    interrupts; ``idle_ticks``, the tick's handler run in the idle task (``tick_sched_timer``
    expiring with pid 0, traced: each runs ``scheduler_tick()`` → ``trigger_load_balance()``,
    whether the tick was kept or stopped and its one-shot timer came), empty without the trace."""

    idle_calls: list[int]
    idle_sleeps: list[int]
    loc: list[int]
    idle_ticks: list[int] = field(default_factory=list)


def _ticks(lines: list[str]) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {"idle_calls": [], "idle_sleeps": [], "loc": []}
    for line in lines:
        a = line.replace(":", " ").split()
        if not a:
            continue
        if a[0] in ("idle_calls", ".idle_calls", "idle_sleeps", ".idle_sleeps"):
            out[a[0].lstrip(".")].append(int(a[1]))
        elif a[0] == "LOC":
            out["loc"] = [int(x) for x in a[1:] if x.isdigit()]
    return out


def ticks_of(lines0: list[str], lines1: list[str], idle: list[str] | None = None) -> Ticks | None:
    """The counters' growth between the two snapshots, or None without them; ``idle``: the
    job's "CPU count" lines of traced idle ticks."""
    t0, t1 = _ticks(lines0), _ticks(lines1)
    if not t1["idle_calls"] or len(t0["idle_calls"]) != len(t1["idle_calls"]):
        return None
    d = {k: [b - a for a, b in zip(t0[k], t1[k])] for k in t1}
    per = dict((int(a[0]), int(a[1])) for a in (line.split() for line in idle or []) if len(a) == 2)
    ticks = [per.get(c, 0) for c in range(len(d["idle_calls"]))] if idle is not None else []
    return Ticks(d["idle_calls"], d["idle_sleeps"], d["loc"], ticks)


@dataclass(frozen=True)
class SimSched:
    """The simulator's side of a case: moves (all, across nodes) by path, and per CPU the share
    of the run a thread held it (``rq_cpu_time_s`` over the run) and its idle entries."""

    moves: dict[str, tuple[int, int]]
    busy: list[float]
    goidle: list[int]
    barriers: int
    #: The host model's vCPU threads (``sim_host``), with the host model on.
    host: list[hostthreads.Thread] = field(default_factory=list)
    #: The host model's idle vCPUs' kept ticks by how late the host ran them: within 0.25, 0.5,
    #: 1, 2, 4 ms, later, never (summed over the vCPUs; ``vhost.rs: TickDelays``).
    tick_delays: list[int] = field(default_factory=list)
    #: The host model's QEMU main loop thread (``sim_main_loop``), if modelled (§10.14).
    main_loop: hostthreads.Thread | None = None
    #: ``load_balance()``'s counters as the guest's ``lb`` (``sched_cpus``' ``domains``).
    lb: dict[str, dict[str, list[int]]] = field(default_factory=dict)
    #: The newly idle balances by how far they got, summed over the CPUs (``sched_cpus``'
    #: ``newidle_gate``: calls, no_overload, avg_idle, cost_break, random_skip, pulled, and
    #: host_stopped where the host stopped a vCPU inside one, docs/scheduler.md §10.27).
    newidle_gate: dict[str, int] = field(default_factory=dict)
    #: The workload's run queues as the guest's ``rq`` (``sim_rq``), None without them.
    rq: RunQueues | None = None


def sections(text: str) -> dict[str, list[str]]:
    """A guest job's output split at its ``== NAME ...`` lines: each section's lines by NAME."""
    out: dict[str, list[str]] = {}
    cur: list[str] | None = None
    for line in text.splitlines():
        if line.startswith("== "):
            cur = out.setdefault(line[3:].split()[0], [])
        elif cur is not None:
            cur.append(line)
    return out


#: /proc/schedstat v15 per domain: 8 counters per idle type (CPU_IDLE, CPU_NOT_IDLE,
#: CPU_NEWLY_IDLE; the fifth is lb_gained), then alb_*, sbe_*, sbf_*, ttwu_* (kernel/sched/stats.c).
IDLE_TYPES = ("idle", "busy", "newly idle")
#: The 8, in show_schedstat()'s order (v6.1 kernel/sched/stats.c).
LB_COUNTERS = ("lb_count", "lb_balanced", "lb_failed", "lb_imbalance", "lb_gained", "lb_hot_gained", "lb_nobusyq", "lb_nobusyg")
#: Per CPU the fourth counter is sched_goidle, the seventh rq_cpu_time (ns), and the header's
#: timestamp is in jiffies.
SCHED_GOIDLE = 3
RQ_CPU_TIME = 6
HZ = 250  # Debian 6.1's CONFIG_HZ


def _schedstat(lines: list[str]) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    cpu = ""
    for line in lines:
        a = line.split()
        if not a:
            continue
        if a[0] == "timestamp":
            out["timestamp"] = [int(a[1])]
        elif a[0].startswith("cpu"):
            cpu = a[0]
            out[cpu] = [int(x) for x in a[1:]]
        elif a[0].startswith("domain"):
            out[f"{cpu} {a[0]}"] = [int(x) for x in a[2:]]
    return out


def parse(text: str) -> GuestMoves:
    """A guest run's output of ``JOB``."""
    sec = sections(text)
    node = {int(a[0]): int(a[1]) for a in (line.split() for line in sec.get("cpunode", [])) if len(a) == 2}
    moves: Counter[str] = Counter()
    cross: Counter[str] = Counter()
    for line in sec.get("trace", []):
        m = re.match(r"\s*(\d+) (\S+) (\S+) ?(.*)", line)
        if not m:
            continue
        n, o, d = int(m[1]), m[2], m[3]
        p = path_of(m[4].split("<")[1:])
        moves[p] += n
        if o.isdigit() and d.isdigit() and node.get(int(o)) != node.get(int(d)):
            cross[p] += n
    agent = [json.loads(line) for line in sec.get("agent", []) if line.startswith("{")]
    threads = agent[-1].get("threads", []) if agent else []
    cmd = [json.loads(line) for line in sec.get("command", []) if line.startswith("{")]
    s0, s1 = _schedstat(sec.get("schedstat0", [])), _schedstat(sec.get("schedstat1", []))
    elapsed = (s1["timestamp"][0] - s0["timestamp"][0]) / HZ if "timestamp" in s0 and "timestamp" in s1 else 0.0
    cpus = sorted((k for k in s1 if k.startswith("cpu") and " " not in k), key=lambda k: int(k[3:]))
    busy = [(s1[c][RQ_CPU_TIME] - s0[c][RQ_CPU_TIME]) / 1e9 / elapsed if elapsed > 0 else 0.0 for c in cpus]
    goidle = [s1[c][SCHED_GOIDLE] - s0.get(c, s1[c])[SCHED_GOIDLE] for c in cpus]
    lb = _lb_of(s0, s1)
    gained = {d: Counter({it: c[LB_COUNTERS.index("lb_gained")] for it, c in per.items()}) for d, per in lb.items()}
    return GuestMoves(moves, cross, sum(int(t["nr_migrations"]) for t in threads), len(threads),
                      int(cmd[-1]["reps"]) if cmd else 0, busy, gained, goidle,
                      ticks_of(sec.get("ticks0", []), sec.get("ticks1", []), sec.get("idleticks")), rq_of(sec.get("rq", [])),
                      tick_phase=tick_phase_of(sec.get("tickphase", [])), lb=lb,
                      command_s=float(cmd[-1]["time_s"]) if cmd and "time_s" in cmd[-1] else None)


def _lb_of(s0: dict[str, list[int]], s1: dict[str, list[int]]) -> dict[str, dict[str, list[int]]]:
    """Each domain's load_balance() counters per idle type, grown between the snapshots and summed
    over the CPUs (a domain's per-CPU line: its span's mask, then 8 counters per idle type)."""
    out: dict[str, dict[str, list[int]]] = {}
    n = len(LB_COUNTERS)
    for k, v in s1.items():
        if " " in k and k in s0:
            level = out.setdefault(k.split()[1], {it: [0] * n for it in IDLE_TYPES})
            for i, it in enumerate(IDLE_TYPES):
                for j in range(n):
                    level[it][j] += v[n * i + j] - s0[k][n * i + j]
    return out


def tick_phase_of(lines: list[str]) -> list[int]:
    """The job's "bin count" lines of idle ticks by time past the jiffy, as 16 counts ([] without)."""
    out = [0] * 16
    for a in (line.split() for line in lines):
        if len(a) == 2 and a[0].isdigit() and int(a[0]) < 16:
            out[int(a[0])] = int(a[1])
    return out if lines else []


def _per(n: int, threads: int, barriers: int) -> str:
    return f"{n / threads / barriers:.4f}" if threads and barriers else "-"


def _cpus(who: str, busy: list[float], goidle: list[int], barriers: int) -> list[str]:
    """Two lines: each CPU's busy share and its idle entries per barrier, with their means."""
    mean = sum(busy) / len(busy) if busy else 0.0
    out = [f"{who} CPUs busy (rq_cpu_time / elapsed): " + " ".join(f"{b:.2f}" for b in busy) + f" (mean {mean:.2f})"]
    if goidle and barriers:
        per = [n / barriers for n in goidle]
        out.append(f"{who} CPUs idle entries per barrier (sched_goidle): " + " ".join(f"{p:.2f}" for p in per)
                   + f" (mean {sum(per) / len(per):.2f})")
    return out


def report(g: GuestMoves, side: SimSched | dict[str, tuple[int, int]] | None = None) -> str:
    """Moves by path (all, across nodes, and per thread per barrier), the simulator's beside them
    when given (``sim_sched``, or its moves alone), both sides' CPUs' busy share and idle entries
    per barrier, and load_balance()'s pulls by domain."""
    sim = side.moves if isinstance(side, SimSched) else side or {}
    names = [p for p in PATHS if g.moves[p]] + sorted(p for p in sim if p not in g.moves)
    rows = []
    for p in names:
        row: list[Any] = [p, g.moves[p], g.cross[p], _per(g.moves[p], g.threads, g.barriers)]
        if sim:
            row += [*sim.get(p, (0, 0))]
        rows.append(row)
    total = sum(g.moves.values())
    last: list[Any] = ["total", total, sum(g.cross.values()), _per(total, g.threads, g.barriers)]
    if sim:
        last += [sum(a for a, _ in sim.values()), sum(b for _, b in sim.values())]
    rows.append(last)
    cols = ["path", "guest moves", "across nodes", "per thread per barrier"] + (["sim moves", "sim across nodes"] if sim else [])
    text = render(table(cols, rows, f"thread moves by kernel path ({g.threads} threads, {g.barriers} barriers)"))
    lines = [text, f"trace {total} moves, the agent's nr_migrations {g.nr_migrations}", *_cpus("guest", g.busy, g.goidle, g.barriers)]
    if g.command_s is not None and g.barriers:
        lines.append(f"guest command: {g.command_s:.3f} s, {g.command_s / g.barriers * 1e3:.2f} ms per barrier")
    if isinstance(side, SimSched):
        lines += _cpus("sim", side.busy, side.goidle, side.barriers)
    if g.ticks is not None:
        k = g.ticks
        lines.append("guest idle_calls / idle_sleeps / local timer interrupts per CPU: "
                     + " ".join(f"{c}/{s}/{n}" for c, s, n in zip(k.idle_calls, k.idle_sleeps, k.loc))
                     + f" (stopped {sum(k.idle_sleeps) / max(1, sum(k.idle_calls)):.2f} of the tries)")
        if k.idle_ticks:
            lines.append("guest ticks handled idle (tick_sched_timer in the idle task) per CPU: "
                         + " ".join(str(n) for n in k.idle_ticks) + f" (total {sum(k.idle_ticks)})")
    if g.rq is not None:
        lines.append(rq_line("guest", g.rq.figures()))
    if isinstance(side, SimSched) and side.rq is not None:
        lines.append(rq_line("sim", side.rq.figures()))
    ticked = [f"{who} {t}" for who, t in (("guest", idle_ticks_per_entry(g.rq, g.goidle)),
                                          ("sim", idle_ticks_per_entry(side.rq, side.goidle) if isinstance(side, SimSched) else None))
              if t is not None]
    if ticked:
        lines.append("idle ticks on a CPU with none of the threads, per idle entry: " + ", ".join(ticked))
    lines += lb_lines(g, side if isinstance(side, SimSched) else None)
    if g.tick_phase:
        n = sum(g.tick_phase)
        lines.append("guest idle ticks by time past the jiffy, 0.25 ms bins: " + " ".join(str(x) for x in g.tick_phase)
                     + f" (within 0.5 ms: {sum(g.tick_phase[:2]) / n if n else 0.0:.2f})")
    if isinstance(side, SimSched) and side.tick_delays:
        d = side.tick_delays
        lines.append("sim idle vCPUs' kept ticks by how late the host ran them, within 0.25 / 0.5 / 1 / 2 / 4 ms / later / never: "
                     + " / ".join(str(x) for x in d) + f" (within 0.5 ms: {sum(d[:2]) / max(1, sum(d[:6])):.2f} of those run)")
    host = host_table(g.host, side.host if isinstance(side, SimSched) else [],
                      side.main_loop if isinstance(side, SimSched) else None)
    return "\n".join(lines + ([host] if host else []))


def lb_lines(g: GuestMoves, sim: SimSched | None) -> list[str]:
    """load_balance()'s counters per domain and idle type, guest beside simulator ("guest/sim"),
    and the newly idle balances per idle entry: the guest's lb_count at domain0 over its
    sched_goidle (newidle_balance() runs at each, less those skipped by its gate, which the
    kernel does not count), the simulator's gate outcomes."""
    if not g.lb:
        return [f"load_balance() pulls, {level}: " + ", ".join(f"{it} {g.lb_gained[level][it]}" for it in IDLE_TYPES)
                for level in sorted(g.lb_gained)]
    slb = sim.lb if sim is not None else {}
    rows = []
    for level in sorted(set(g.lb) | set(slb)):
        for it in IDLE_TYPES:
            gv = g.lb.get(level, {}).get(it, [0] * len(LB_COUNTERS))
            sv = slb.get(level, {}).get(it)
            rows.append([level, it, *(f"{a}/{b}" if sv is not None else str(a) for a, b in zip(gv, sv or gv))])
    who = "guest/sim" if sim is not None else "guest"
    out = [render(table(["domain", "idle type", *LB_COUNTERS], rows, f"load_balance() counters ({who}, /proc/schedstat v15)"))]
    newly = g.lb.get("domain0", {}).get("newly idle")
    if newly is not None and g.goidle:
        line = f"newly idle balances at domain0 per idle entry: guest {newly[0] / max(1, sum(g.goidle)):.3f}"
        snewly = slb.get("domain0", {}).get("newly idle")
        if sim is not None and snewly is not None:
            line += f", sim {snewly[0] / max(1, sum(sim.goidle)):.3f}"
        out.append(line)
    if sim is not None and sim.newidle_gate:
        gate = sim.newidle_gate
        out.append("sim newly idle balances: " + ", ".join(f"{k} {gate.get(k, 0)}" for k in NEWIDLE_GATE))
    return out


#: The simulator's newly idle gate outcomes (``sched/schedstat.rs: NewidleGate``).
NEWIDLE_GATE = ("calls", "no_overload", "avg_idle", "cost_break", "random_skip", "pulled")


HOST_COLS = ("CPU share", "run per slice (us)", "wait per slice (us)", "voluntary /s", "involuntary /s")


def _host_cells(t: hostthreads.Thread | None) -> list[Any]:
    if t is None:
        return ["-"] * len(HOST_COLS)
    return [f"{t.share:.3f}", f"{t.run_per_slice_s * 1e6:.0f}", f"{t.wait_per_slice_s * 1e6:.0f}",
            f"{t.voluntary_per_s:.0f}", f"{t.involuntary_per_s:.0f}"]


def host_table(guest: hostthreads.HostThreads | None, sim: list[hostthreads.Thread],
               sim_main: hostthreads.Thread | None = None) -> str:
    """QEMU's threads on the host over the command beside the host model's vCPU threads (one row
    per vCPU, then QEMU's main loop, the model's if modelled), or "" with neither."""
    if guest is None and not sim:
        return ""
    by = {t.vcpu: t for t in guest.vcpus if t.vcpu is not None} if guest is not None else {}
    sim_by = {t.tid: t for t in sim}
    rows = [[f"vCPU {c}", *_host_cells(by.get(c)), *(_host_cells(sim_by.get(c)) if sim else [])]
            for c in sorted(set(by) | set(sim_by))]
    if (guest is not None and guest.main_loop is not None) or sim_main is not None:
        rows.append(["main loop", *_host_cells(guest.main_loop if guest is not None else None),
                     *(_host_cells(sim_main) if sim else [])])
    cols = ["thread", *(f"host {c}" for c in HOST_COLS), *((f"model {c}" for c in HOST_COLS) if sim else ())]
    what = f"over the command's {guest.window_s:.2f} s" if guest is not None else "not sampled"
    return render(table(cols, rows, f"QEMU's threads on the host ({what}) and the host model's"))


#: The simulator's ``--explain-sched`` path names, as ``path_of`` names the kernel's (its
#: ``idle-balance`` counts the NOHZ idle balance's pulls too, docs/scheduler.md §4; ``idle-tick-balance`` an idle
#: CPU's own at a kept tick, §10.10).
SIM_PATHS = {"wake": "wake-up (futex)", "newidle-balance": "newly idle balance", "idle-balance": "periodic balance, idle CPU",
             "idle-tick-balance": "periodic balance, idle CPU",
             "busy-balance": "periodic balance, busy CPU", "active-balance": "active balance"}


def sim_moves(name: str, kernel: str = "6.1", host: bool | dict[str, Any] = True,
              background: Any = None) -> dict[str, tuple[int, int]]:
    """The simulator's moves (all, across nodes) by path for ``vm check`` case ``name``."""
    return sim_sched(name, kernel, host, background).moves


def sim_sched(name: str, kernel: str = "6.1", host: bool | dict[str, Any] = True, background: Any = None) -> SimSched:
    """The simulator's side of ``vm check`` case ``name`` as ``check.sim_side`` runs it (the
    guest's speed and background where measured, the host model with the background) with
    its decisions kept: moves by path, and per CPU the share of the run a thread held it (a vCPU
    the host does not run counts as busy while its thread holds the turn, as the guest's
    ``rq_cpu_time`` counts it) and its idle entries. ``host`` and ``background`` as
    ``check.sim_doc`` takes them (default: the case's)."""
    from numalab.vm import check

    case = check.CASES[name]
    spec = check.sim_spec(case, kernel)
    spec = spec.updated(explain_sched=True)
    doc = check.sim_doc(spec, background or case.background, case.interval_ms, host)
    out: dict[str, tuple[int, int]] = {}
    for e in doc.get("sched_events", []):
        if e["from_cpu"] is None:
            continue  # a placement at creation, not a move
        p = SIM_PATHS.get(e["path"], e["path"])
        a, b = out.get(p, (0, 0))
        out[p] = (a + 1, b + int(e["from_node"] != e["to_node"]))
    run_s = float(doc["time_s"])
    cpus = sorted(doc.get("sched_cpus", []), key=lambda c: int(c["cpu"]))
    busy = [float(c["rq_cpu_time_s"]) / run_s if run_s > 0 else 0.0 for c in cpus]
    delays = [sum(int(c["host_tick_delays"][k]) for c in cpus) for k in range(7)] if cpus and "host_tick_delays" in cpus[0] else []
    return SimSched(out, busy, [int(c["sched_goidle"]) for c in cpus], int(dict(spec.params).get("reps") or 0), sim_host(cpus, run_s), delays,
                    sim_main_loop(doc.get("sched_host_main_loop"), run_s), *sim_lb(cpus), rq=sim_rq(doc))


def sim_lb(cpus: list[dict[str, Any]]) -> tuple[dict[str, dict[str, list[int]]], dict[str, int]]:
    """The simulator's load_balance() counters summed over the CPUs by ``domainN`` as the guest's
    /proc/schedstat numbers them (its ``domains``, lowest attached first), and its newly idle gate."""
    lb: dict[str, dict[str, list[int]]] = {}
    gate: Counter[str] = Counter()
    for c in cpus:
        for i, d in enumerate(c.get("domains", [])):
            level = lb.setdefault(f"domain{i}", {it: [0] * len(LB_COUNTERS) for it in IDLE_TYPES})
            for it, counts in zip(IDLE_TYPES, d["lb"]):
                level[it] = [a + int(b) for a, b in zip(level[it], counts)]
        gate.update({k: int(v) for k, v in c.get("newidle_gate", {}).items()})
    return lb, dict(gate)


def sim_host(cpus: list[dict[str, Any]], run_s: float) -> list[hostthreads.Thread]:
    """The host model's vCPU threads over the run (``sched_cpus``' ``host_*``, docs/scheduler.md
    §10.13) as ``hostthreads`` gives QEMU's: empty without the host model."""
    out = []
    for c in cpus:
        if "host_slices" not in c or run_s <= 0:
            continue
        n = int(c["host_slices"])
        per = 1 / n if n else 0.0
        out.append(hostthreads.Thread(int(c["cpu"]), f"CPU {int(c['cpu'])}/model", float(c["host_s"]) / run_s,
                                      float(c["host_s"]) * per, float(c["host_wait_s"]) * per, n / run_s,
                                      int(c["host_voluntary"]) / run_s, int(c["host_involuntary"]) / run_s))
    return out


def sim_main_loop(t: dict[str, Any] | None, run_s: float) -> hostthreads.Thread | None:
    """The host model's QEMU main loop thread over the run (the document's
    ``sched_host_main_loop``, docs/scheduler.md §10.14) as ``hostthreads`` gives QEMU's: None
    without it."""
    if not t or run_s <= 0:
        return None
    n = int(t["host_slices"])
    per = 1 / n if n else 0.0
    return hostthreads.Thread(-1, "main loop/model", float(t["host_s"]) / run_s, float(t["host_s"]) * per,
                              float(t["host_wait_s"]) * per, n / run_s, int(t["host_voluntary"]) / run_s,
                              int(t["host_involuntary"]) / run_s)


def guest_run(name: str, memory_per_node_mib: int | None = None, accel: str = "tcg", timeout_s: float = 300.0) -> tuple[GuestMoves, str]:
    """``JOB`` around scheduler case ``name``'s command, in a guest booted as ``vm check`` boots
    it (its machine, vCPUs, placement and wait policy): the guest's moves and its release."""
    from numalab.vm import check
    from numalab.vm import run as vm_run
    from numalab.vm import setup as vm_setup

    case = check.CASES[name]
    release = vm_setup.load(lambda s: None).kernel_version
    req = check._plan(case, memory_per_node_mib, accel, timeout_s, release, lambda s: None).request
    # The job runs the command under its own agent, sampling every second as the case does; the
    # outer agent only watches the shell.
    # The host's side: QEMU's threads snapshotted at the job's window marks (``hostthreads``).
    sampler = hostthreads.HostSampler()
    out = vm_run.run(replace(req, command=["sh", "-c", JOB, "sh", " ".join(req.command)], interval_ms=60000), watch=sampler)
    if out.status != 0:
        raise vm_run.GuestCommandError(f"vm check --moves {name}: the guest's job failed: {out.text('stderr').strip()[-300:]}")
    return replace(parse(out.text("stdout")), host=sampler.result()), release


def as_json(g: GuestMoves, side: SimSched) -> dict[str, Any]:
    """``--moves --json``: both sides' moves by path (all, across nodes), their CPUs' busy
    share and idle entries (``sim_cpus``: the simulator's) and run queues (``guest.rq``,
    ``sim_rq``)."""
    guest = {"moves": {p: [g.moves[p], g.cross[p]] for p in g.moves}, "nr_migrations": g.nr_migrations, "threads": g.threads,
             "barriers": g.barriers, "busy": g.busy, "goidle": g.goidle, "command_s": g.command_s,
             "lb_gained": {level: dict(c) for level, c in g.lb_gained.items()},
             "lb": {level: {it: dict(zip(LB_COUNTERS, c)) for it, c in per.items()} for level, per in g.lb.items()}}
    if g.ticks is not None:
        guest["ticks"] = {"idle_calls": g.ticks.idle_calls, "idle_sleeps": g.ticks.idle_sleeps, "loc": g.ticks.loc,
                          "idle_ticks": g.ticks.idle_ticks}
    if g.rq is not None:
        guest["rq"] = rq_json(g.rq)
    doc = {"guest": guest, "sim": {p: list(v) for p, v in side.moves.items()},
           "sim_cpus": {"busy": side.busy, "goidle": side.goidle, "barriers": side.barriers},
           "sim_lb": {level: {it: dict(zip(LB_COUNTERS, c)) for it, c in per.items()} for level, per in side.lb.items()},
           "sim_newidle_gate": side.newidle_gate}
    if side.rq is not None:
        doc["sim_rq"] = rq_json(side.rq)
    if g.host is not None:
        doc["host"] = hostthreads.as_json(g.host)
    if g.tick_phase:
        guest["tick_phase"] = g.tick_phase
    if side.host:
        sim_host: dict[str, Any] = {"threads": [dict(vars(t), vcpu=t.tid) for t in side.host], "tick_delays": side.tick_delays}
        if side.main_loop is not None:
            sim_host["main_loop"] = dict(vars(side.main_loop), vcpu=None)
        doc["sim_host"] = sim_host
    return doc


def rq_json(rq: RunQueues) -> dict[str, Any]:
    """``--moves --json``'s run queues, the guest's ``rq`` and the simulator's ``sim_rq`` alike."""
    return {"time": rq.time, "ticks": [[m, o, n] for (m, o), n in sorted(rq.ticks.items())],
            "imbalanced_s": rq.imbalanced_s, "span_s": rq.span_s, "episodes": rq.episodes, "since": rq.since}
