"""Issue 22 probe (docs/scheduler.md §10.48): the guest's idle spells per vCPU over a scheduler
case's command, and which team thread arrives last at its barriers.

In the guest, every ``sched:sched_switch`` is traced over the command (no filter), and the job
prints it compact, one switch a line ("S ts cpu prev_pid prev_state next_pid"), with each team
thread's ``sched_wakeup`` ("W ts cpu pid target_cpu"; kernel/sched/core.c: ttwu_do_activate(), on
the target after a halted vCPU's wake-list IPI) and ``sched_waking`` ("K ..."; try_to_wake_up(), on
the waker, before the IPI).
An idle spell is a stretch of a CPU's idle task (pid 0) from the switch to it to the switch from
it (kernel/sched/core.c: __schedule(); the idle task is what halts the vCPU, so a spell is a halt
of the vCPU, interrupts and polling aside). From the first to the last team-thread event, the
report gives per CPU the idle share, the spells per barrier and their length distribution; per
team thread its sleeps (switched out in ``S``: a futex wait in libgomp's
``gomp_team_barrier_wait_end()``, OMP_WAIT_POLICY=passive spins none) per barrier, so
``1 - sleeps`` per barrier is how often it was the last to arrive (the last arrival wakes the
others and does not sleep); and per wake-up of a sleeping team thread, the time from its
``sched_waking`` to its ``sched_wakeup`` and to its switch-in, and from its ``sched_wakeup`` to
its switch-in, split by whether its CPU was idle at the wake-up; and per release of the
barrier's sleepers (their ``sched_waking`` within ``RELEASE_SPAN_S`` of the first) the waits to
the switch-in by the order the woken threads ran, first to last, and when the first team thread
sleeps after it (a runner's phase done), against the second to run. docs/scheduler.md §10.48,
§10.52.

    python bench/vm_idle_spells.py guest sched-passive
    python bench/vm_idle_spells.py --parse /tmp/idle-spells-sched-passive-HHMMSS.txt
    python bench/vm_idle_spells.py model sched-passive 4

``model CASE N`` gives the model's same figures where it has them, for ``check.CONDITIONS["idle"]``
(as ``bench/host_trace.py model``), seeds 1..N: per vCPU the share of the run no thread held it
(``sched_cpus``' ``rq_cpu_time_s``: from the switch-in, as the guest's idle task ends), its idle
entries per barrier (``sched_goidle``), their mean length, the thread's time on it per barrier,
and the host's split of the vCPU thread (running, queued after a halt, queued after a
preemption, halted) with the mean queued wait after a halt (a wake-up's wait for a host core);
and per seed the model's wake-up chain (``sched_wake_chain``, ``vhost/wake_chain.rs``): per wake-up
of a sleeping team thread, from the waker's ``try_to_wake_up()`` to the woken thread running, the
host's wait to run its vCPU included, as the guest's ``sched_waking to the switch-in``; all of
them and those onto a halted vCPU, these split by what gave the vCPU a host core (the first host
plan after the wake-up, or what freed a core later: docs/scheduler.md §10.52), and per release
(wake-ups at one time) by the order they ran, as the guest's.

The guest's output is saved as ``/tmp/idle-spells-CASE-HHMMSS.txt`` for ``--parse``.
"""

import re
import sys
import time
from collections import defaultdict
from dataclasses import replace

from numalab.vm import check
from numalab.vm import run as vm_run
from numalab.vm import setup as vm_setup
from numalab.vm.sched_trace import sections

JOB = r"""T=/sys/kernel/debug/tracing
[ -d $T/events ] || { mkdir -p /sys/kernel/tracing; mount -t tracefs nodev /sys/kernel/tracing; T=/sys/kernel/tracing; }
echo 16384 > $T/buffer_size_kb
echo 'comm == "barrier"' > $T/events/sched/sched_wakeup/filter
echo 1 > $T/events/sched/sched_wakeup/enable
echo 'comm == "barrier"' > $T/events/sched/sched_waking/filter
echo 1 > $T/events/sched/sched_waking/enable
echo 1 > $T/events/sched/sched_switch/enable
echo "== stat0"; grep '^cpu[0-9]' /proc/stat
echo 1 > $T/tracing_on
numalab-agent run --interval-ms=1000 --maps-budget-pct=100 --output=/tmp/inner.jsonl -- $1 > /tmp/cmd.out 2>&1
echo 0 > $T/tracing_on
echo "== stat1"; grep '^cpu[0-9]' /proc/stat
echo "== overrun"; grep -i overrun $T/per_cpu/cpu*/stats | awk '{ s += $NF } END { print s + 0 }'
echo "== command"; tail -n 5 /tmp/cmd.out
echo "== trace"
awk '{ cpu = -1; ts = -1
  for (i = 1; i <= NF; i++) {
    if (cpu < 0 && $i ~ /^\[[0-9]+\]$/) cpu = substr($i, 2, length($i) - 2) + 0
    if ($i ~ /^[0-9]+\.[0-9]+:$/) { ts = substr($i, 1, length($i) - 1); ev = $(i + 1); break } }
  if (ts < 0) next
  split("", kv); for (j = i + 2; j <= NF; j++) if ((k = index($j, "=")) > 0) kv[substr($j, 1, k - 1)] = substr($j, k + 1)
  if (ev == "sched_switch:") print "S", ts, cpu, kv["prev_pid"], kv["prev_state"], kv["next_pid"], (kv["prev_comm"] == "barrier") + 2 * (kv["next_comm"] == "barrier")
  else if (ev == "sched_wakeup:") print "W", ts, cpu, kv["pid"], kv["target_cpu"]
  else if (ev == "sched_waking:") print "K", ts, cpu, kv["pid"], kv["target_cpu"] }' $T/trace
"""

#: Wakings of team threads within this of the first are one release of the barrier's sleepers
#: (the waker's ``futex_wake()``; its vCPU may be off a host core between two), a barrier being
#: 2.3-2.5 ms on ``vm-4``.
RELEASE_SPAN_S = 1e-3

#: Idle spells' length bins' upper edges, seconds (the last bin is longer).
EDGES = (25e-6, 50e-6, 100e-6, 200e-6, 500e-6, 1e-3, 2e-3, 4e-3)


def _label(k: int) -> str:
    return f"<={EDGES[k] * 1e6:.0f}us" if k < len(EDGES) else f">{EDGES[-1] * 1e6:.0f}us"


def _bin(d: float) -> int:
    return next((k for k, e in enumerate(EDGES) if d <= e), len(EDGES))




def report(text: str, name: str) -> int:
    sec = sections(text)
    events = [line.split() for line in sec.get("trace", []) if line[:2] in ("S ", "W ", "K ")]
    team = {int(e[3]) for e in events if e[0] == "S" and int(e[6]) & 1} | {int(e[5]) for e in events if e[0] == "S" and int(e[6]) & 2}
    if not team:
        print(f"vm_idle_spells.py: error: {name}: no team thread in the trace", file=sys.stderr)
        return 1
    # The span: the team's first to last event (its threads' creation to their exit).
    tt = [float(e[1]) for e in events if (e[0] in "WK" and int(e[3]) in team) or (e[0] == "S" and int(e[6]))]
    t0, t1 = min(tt), max(tt)
    span = t1 - t0
    res = [json_line for json_line in sec.get("command", []) if json_line.startswith("{")]
    reps = 1000
    m = re.search(r'"reps":\s*(\d+)', res[-1]) if res else None
    if m:
        reps = int(m[1])
    ncpu = 1 + max(int(e[2]) for e in events)
    idle_since: dict[int, float] = {}
    spells: dict[int, list[float]] = defaultdict(list)
    sleeps: dict[int, int] = defaultdict(int)
    woken: dict[int, tuple[float, bool]] = {}  # a sleeping team thread's wake-up: time, its CPU idle then
    lat: dict[bool, list[float]] = {True: [], False: []}
    waking: dict[int, float] = {}  # the waker's sched_waking (try_to_wake_up(), before the IPI)
    # Releases: sched_waking of team threads within RELEASE_SPAN_S of the first (one
    # futex_wake() of the barrier's sleepers), and their wake-ups' waits to the switch-in.
    releases: list[list[float]] = []
    release_of: dict[int, list[float]] = {}
    first_waking = -1.0
    # Per release: the first team thread to sleep after it (a running thread's phase done: its
    # vCPU halts and frees its host core), from the release's first sched_waking.
    first_sleep: list[float | None] = []
    chain: list[float] = []  # sched_waking to the target's sched_wakeup (ttwu_do_activate(), after the IPI)
    whole: list[float] = []  # sched_waking to the switch-in
    held: dict[int, float] = defaultdict(float)  # team thread: time on a CPU in the span
    on_since: dict[int, float] = {}
    long_spells: list[tuple[float, float]] = []  # idle spells over the last bin's edge, clipped to the span
    other: list[tuple[float, float]] = []  # other tasks' (not the team's, not idle) stretches on a CPU
    cur: dict[int, tuple[int, float]] = {}
    for e in events:
        ts, cpu = float(e[1]), int(e[2])
        if e[0] == "K":
            if int(e[3]) in team:
                waking[int(e[3])] = ts
                if ts - first_waking > RELEASE_SPAN_S:
                    releases.append([])
                    first_sleep.append(None)
                    first_waking = ts
                release_of[int(e[3])] = releases[-1]
            continue
        if e[0] == "W":
            pid, tgt = int(e[3]), int(e[4])
            if pid in team:
                woken[pid] = (ts, tgt in idle_since)
                if pid in waking:
                    chain.append(ts - waking[pid])
            continue
        prev, state, nxt = int(e[3]), e[4], int(e[5])
        if cpu in cur and cur[cpu][0] not in team and cur[cpu][0] != 0:
            other.append((cur[cpu][1], ts))
        cur[cpu] = (nxt, ts)
        if prev == 0 and cpu in idle_since:
            a = max(idle_since.pop(cpu), t0)
            if ts > t0 and a < t1:
                spells[cpu].append(min(ts, t1) - a)
                if min(ts, t1) - a > EDGES[-1]:
                    long_spells.append((a, min(ts, t1)))
        idle_since.pop(cpu, None)
        if nxt == 0:
            idle_since[cpu] = ts
        if prev in team and state.startswith("S") and t0 <= ts <= t1:
            sleeps[prev] += 1
        if prev in team and state.startswith("S") and first_sleep and first_sleep[-1] is None:
            first_sleep[-1] = ts - first_waking
        if nxt in team and nxt in woken:
            w, was_idle = woken.pop(nxt)
            lat[was_idle].append(ts - w)
            if nxt in waking:
                whole.append(ts - waking[nxt])
                release_of.pop(nxt, []).append(ts - waking.pop(nxt))
        if prev in on_since:
            held[prev] += ts - on_since.pop(prev)
        if nxt in team:
            on_since[nxt] = ts
    for cpu, a in idle_since.items():
        if a < t1:
            spells[cpu].append(t1 - max(a, t0))
    print(f"{name}: span {span:.3f} s from the team's first to last event, {reps} barriers, "
          f"{span / reps * 1e3:.3f} ms a barrier; {len(events)} events, overrun {' '.join(sec.get('overrun', ['?']))}")
    print("CPU  idle share  spells/barrier  mean us  median us  spells by length " + " ".join(_label(k) for k in range(len(EDGES) + 1)))
    for cpu in range(ncpu):
        s = sorted(spells[cpu])
        hist = [0] * (len(EDGES) + 1)
        for d in s:
            hist[_bin(d)] += 1
        mean = sum(s) / len(s) * 1e6 if s else 0.0
        med = s[len(s) // 2] * 1e6 if s else 0.0
        print(f"{cpu:3d}  {sum(s) / span:10.3f}  {len(s) / reps:14.3f}  {mean:7.0f}  {med:9.0f}  " + " ".join(str(h) for h in hist))
    idle = sum(sum(v) for v in spells.values())
    busy_other = sum(1 for a, b in long_spells if sum(max(0.0, min(b, y) - max(a, x)) for x, y in other) >= 1e-3)
    print(f"spells over {EDGES[-1] * 1e3:.0f} ms: {len(long_spells)}, {sum(b - a for a, b in long_spells) / idle if idle else 0:.3f} "
          f"of the idle time, {busy_other} with another task (not the team's) on a CPU 1 ms or more; by tenth of the span: "
          + " ".join(str(sum(1 for a, _ in long_spells if min(9, int(10 * (a - t0) / span)) == k)) for k in range(10)))
    print("team thread  sleeps/barrier  last to arrive (1 - sleeps/barrier)  on a CPU ms/barrier")
    for pid in sorted(team):
        print(f"{pid:11d}  {sleeps[pid] / reps:14.3f}  {1 - sleeps[pid] / reps:36.3f}  {held[pid] / reps * 1e3:18.3f}")
    for what, v in (("sched_waking to the target's sched_wakeup", sorted(chain)), ("sched_waking to the switch-in", sorted(whole))):
        if v:
            print(f"{what}: {len(v)}, median {v[len(v) // 2] * 1e6:.0f} us, mean {sum(v) / len(v) * 1e6:.0f} us, "
                  f"p90 {v[int(0.9 * len(v))] * 1e6:.0f} us, p99 {v[int(0.99 * len(v))] * 1e6:.0f} us, "
                  f"over 2 / 4 ms {sum(x > 2e-3 for x in v)} / "
                  f"{sum(x > 4e-3 for x in v)} (their sum {sum(x for x in v if x > 2e-3):.3f} s / "
                  f"{sum(x for x in v if x > 4e-3):.3f} s), longest {v[-1] * 1e3:.1f} ms")
    full = [sorted(r) for r in releases if len(r) == len(team) - 1]
    # The second to run against the first sleep after its release: within 0.1 ms of it (it
    # waited for a running thread's phase to end), or earlier (it got a host core before).
    second = [(sorted(r)[1], f) for r, f in zip(releases, first_sleep) if len(r) == len(team) - 1 and f is not None]
    if second and len(team) > 2:
        near = sum(abs(w - f) <= 1e-4 for w, f in second) / len(second)
        before = sum(w < f - 1e-4 for w, f in second) / len(second)
        fs = sorted(f for _, f in second)
        print(f"first team thread to sleep after a release: median {fs[len(fs) // 2] * 1e6:.0f} us after it; "
              f"the second to run ran within 0.1 ms of that sleep in {near:.2f} of the releases, before it in {before:.2f}")
    if full:
        print(f"releases with all {len(team) - 1} sleepers' waits timed: {len(full)} of {len(releases)}; "
              "sched_waking to the switch-in by order of running:")
        for k in range(len(team) - 1):
            v = sorted(r[k] for r in full)
            print(f"  {k + 1}: median {v[len(v) // 2] * 1e6:.0f} us, p10 {v[len(v) // 10] * 1e6:.0f} us, "
                  f"p90 {v[int(0.9 * len(v))] * 1e6:.0f} us")
    for was_idle in (True, False):
        v = sorted(lat[was_idle])
        if v:
            print(f"wake-up to switch-in, target CPU {'idle' if was_idle else 'busy'}: {len(v)}, median "
                  f"{v[len(v) // 2] * 1e6:.0f} us, mean {sum(v) / len(v) * 1e6:.0f} us, p90 {v[int(0.9 * len(v))] * 1e6:.0f} us")
    return 0


def model(name: str, seeds: int) -> int:
    """The model's side for the case on the idle host (``check.CONDITIONS["idle"]``), seeds 1..N."""
    case = check.CASES[name]
    reps = int(case.params.get("reps", 1000))
    print("seed CPU  idle share  spells/barrier  mean us  on a CPU ms/barrier  host: running / queued after a halt / "
          "after a preemption / halted  wait after a halt us")
    for seed in range(1, seeds + 1):
        doc = check.condition_doc(name, "idle", seed, explain_sched=True)
        run = float(doc["time_s"])
        for c in doc["sched_cpus"]:
            held, n = float(c["rq_cpu_time_s"]), int(c["sched_goidle"])
            h, q, qp = float(c["host_s"]), float(c["host_wait_s"]), float(c["host_preempted_wait_s"])
            print(f"{seed:4d} {int(c['cpu']):3d}  {1 - held / run:10.3f}  {n / reps:14.3f}  {(run - held) / max(1, n) * 1e6:7.0f}  "
                  f"{held / reps * 1e3:19.3f}  {h / run:.3f} / {(q - qp) / run:.3f} / {qp / run:.3f} / {1 - (h + q) / run:.3f}"
                  f"  {(q - qp) / max(1, int(c['host_voluntary'])) * 1e6:.0f}")
        print(f"     {run / reps * 1e3:.3f} ms a barrier")
        chain = doc.get("sched_wake_chain")
        if chain:
            for what, d in (("all", chain["all"]), ("onto a halted vCPU", chain["onto_halted"])):
                print(f"     wake-up to running, {what}: {_chain(d)}")
            for what, label in FREED.items():
                if chain["onto_halted_by_freed"][what]["n"]:
                    print(f"       given a core by {label}: {_chain(chain['onto_halted_by_freed'][what])}")
            print(f"     releases of {chain['release_size']} wake-ups: {chain['releases']}; to running by order of running:")
            for k, d in enumerate(chain["by_order"]):
                print(f"       {k + 1}: median {d['median_s'] * 1e6:.0f} us, p10 {d['p10_s'] * 1e6:.0f} us, p90 {d['p90_s'] * 1e6:.0f} us")
            if chain["never_run"]:
                print(f"     wake-ups whose vCPU the host never ran again: {chain['never_run']}")
    return 0


#: ``sched_wake_chain``'s ``onto_halted_by_freed`` classes (``vhost/wake_chain.rs: Freed``).
FREED = {
    "first_plan": "the first host plan after the wake-up",
    "runner_halted": "a running vCPU halting",
    "main_loop": "the main loop leaving its core",
    "bql": "a running vCPU blocking on the BQL",
    "preempted": "a running vCPU preempted",
    "other": "none of these",
}


def _chain(d: dict[str, float]) -> str:
    """One ``sched_wake_chain`` distribution as the guest's ``sched_waking to the switch-in`` line."""
    if not d["n"]:
        return "none"
    return (f"{d['n']}, median {d['median_s'] * 1e6:.0f} us, mean {d['mean_s'] * 1e6:.0f} us, "
            f"p90 {d['p90_s'] * 1e6:.0f} us, p99 {d['p99_s'] * 1e6:.0f} us, over 2 / 4 ms {d['over_2ms']} / "
            f"{d['over_4ms']}, longest {d['max_s'] * 1e3:.1f} ms")


def main() -> int:
    args = sys.argv[1:]
    usage = "usage: vm_idle_spells.py guest CASE | --parse FILE | model CASE SEEDS"
    if args[:1] in (["-h"], ["--help"]):
        print(f"{usage}\n\n{__doc__}")
        return 0
    if args[:1] == ["model"] and len(args) == 3:
        if args[1] not in check.CASES or not args[2].isdigit() or int(args[2]) < 1:
            print(f"vm_idle_spells.py: error: model needs a case of numalab vm check's and a seed count >= 1, got: "
                  f"{' '.join(args[1:])}", file=sys.stderr)
            return 2
        return model(args[1], int(args[2]))
    if len(args) != 2 or args[0] not in ("guest", "--parse"):
        print(f"{usage}\nvm_idle_spells.py: error: expected 'guest CASE' or '--parse FILE', got: {' '.join(args)}",
              file=sys.stderr)
        return 2
    what, arg = args
    if what == "--parse":
        try:
            text = open(arg).read()
        except OSError as e:
            print(f"vm_idle_spells.py: error: cannot read {arg}: {e.strerror}", file=sys.stderr)
            return 2
        return report(text, arg.rsplit("/", 1)[-1])
    if arg not in check.CASES:
        print(f"vm_idle_spells.py: error: no case {arg!r} (one of numalab vm check's: {', '.join(check.CASES)})",
              file=sys.stderr)
        return 2
    case = check.CASES[arg]
    release = vm_setup.load(lambda s: None).kernel_version
    req = check._plan(case, None, "tcg", 300.0, release, lambda s: None).request
    out = vm_run.run(replace(req, command=["sh", "-c", JOB, "sh", " ".join(req.command)], interval_ms=60000))
    text = out.text("stdout")
    stamp = time.strftime("%H%M%S", time.gmtime())
    path = f"/tmp/idle-spells-{arg}-{stamp}.txt"
    with open(path, "w") as f:
        f.write(text)
    print(f"saved {path}")
    return report(text, arg)


if __name__ == "__main__":
    sys.exit(main())
