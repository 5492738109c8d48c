"""Issue 22 probe (docs/scheduler.md §10.36, §10.38): the guest agent's CPU per sample, in
order, for a scheduler case's command run twice in one boot under the agent, after an optional
warm-up.

``sched_switch`` is traced for ``numalab-agent`` only; a sample is a run of the agent from a
wake-up after a sleep of 0.5 s or more to its next sleep (``S``). Warm-ups: ``none``; ``cache``
(``cat`` the agent's binary and one process's /proc files a sample reads: page cache and the
kernel's /proc code, not the agent's sampling code); ``code`` (the agent samples ``sleep 1``
every 200 ms first: its own sampling code run before the case's command); ``copy`` (as ``code``, then the two runs
exec a copy of the binary: the same addresses with ASLR off, other physical pages); a ``-noaslr`` suffix
turns the guest's address-space randomisation off first (``randomize_va_space`` 0).

    python bench/agent_first_sample.py sched-passive none
    python bench/agent_first_sample.py --parse /tmp/agent-first-sched-passive-none-HHMMSS.txt

Each run's ``SAMPLES`` line gives its samples' CPU in the order of the agent's own records
(``t_s``, the exit snapshot left out; the trace's burst under way at each record's moment) and
each sample's numa_maps read (the record's ``maps_cost_s``).
"""

import re
import sys
import time
from dataclasses import replace

from numalab.vm import check
from numalab.vm import run as vm_run
from numalab.vm import setup as vm_setup

JOB = r"""T=/sys/kernel/debug/tracing
[ -d $T/events ] || { mkdir -p /sys/kernel/tracing; mount -t tracefs nodev /sys/kernel/tracing; T=/sys/kernel/tracing; }
echo 8192 > $T/buffer_size_kb
echo 'prev_comm == "numalab-agent" || next_comm == "numalab-agent"' > $T/events/sched/sched_switch/filter
echo 1 > $T/events/sched/sched_switch/enable
P=$T/events/exceptions/page_fault_user
[ -d $P ] && echo 'comm == "numalab-agent"' > $P/filter && echo 1 > $P/enable
echo 1 > $T/tracing_on
case $2 in *noaslr*) echo 0 > /proc/sys/kernel/randomize_va_space;; esac
case $2 in
cache*) cat $(command -v numalab-agent) > /dev/null
  for f in /proc/self/numa_maps /proc/self/status /proc/self/task/*/stat /proc/self/task/*/sched /proc/vmstat /sys/devices/system/node/node*/numastat; do cat $f > /dev/null; done ;;
code*|copy*) numalab-agent run --interval-ms=200 --maps-budget-pct=100 --output=/tmp/warm.jsonl -- sleep 1 > /dev/null 2>&1 ;;
esac
A=numalab-agent
case $2 in copy*) mkdir -p /tmp/copy; cp $(command -v numalab-agent) /tmp/copy/numalab-agent; A=/tmp/copy/numalab-agent;; esac
for i in 1 2; do
  echo "PROBE run $i" > $T/trace_marker
  $A run --interval-ms=1000 --maps-budget-pct=100 --output=/tmp/inner$i.jsonl -- $1 > /tmp/cmd$i.out 2>&1
  grep '"type":"sample"' /tmp/inner$i.jsonl | while read -r l; do
    echo "REC run $i $(echo "$l" | grep -o '"t_s":[0-9.]*' | head -n 1) $(echo "$l" | grep -o '"maps_cost_s":[0-9.e-]*' | head -n 1) $(echo "$l" | grep -o '"snapshot":"exit"')"
  done
done
echo 0 > $T/tracing_on
echo "== trace"; grep -E "sched_switch|PROBE|page_fault_user" $T/trace
"""

SW = re.compile(r"\s(\d+\.\d+): sched_switch: prev_comm=(\S+) prev_pid=(\d+) \S+ prev_state=(\S+) ==> next_comm=(\S+) next_pid=(\d+)")


Burst = tuple[float, float, int, float, float]  # gap before it (s), CPU (ms), user page faults, start, end (s)


def samples(text: str) -> list[tuple[str, int, list[Burst]]]:
    """Each agent pid's bursts (a run from a wake-up to its next sleep in ``S``), per pid in order of first
    seen, with the label of the ``PROBE`` mark before it (the outer agent shows as one too)."""
    label = "warm-up"
    order: list[tuple[str, int]] = []
    at_in: dict[int, float] = {}
    last_sleep: dict[int, float] = {}
    bursts: dict[int, list[Burst]] = {}
    cur: dict[int, list[float]] = {}  # [gap, CPU s, faults, start] of the burst under way
    for line in text.splitlines():
        if "page_fault_user" in line:
            f = re.search(r"-(\d+)\s+\[", line)
            if f and int(f[1]) in cur:
                cur[int(f[1])][2] += 1
            continue
        if "PROBE run" in line:
            label = line.split("PROBE ")[1].strip()
            continue
        m = SW.search(line)
        if not m:
            continue
        t, pc, pp, st, nc, np_ = float(m[1]), m[2], int(m[3]), m[4], m[5], int(m[6])
        if nc == "numalab-agent":
            if np_ not in bursts:
                order.append((label, np_))
                bursts[np_] = []
            if np_ not in cur:  # a new burst: after a sleep (or the process's first run)
                cur[np_] = [t - last_sleep.get(np_, t), 0.0, 0, t]
            at_in[np_] = t
        if pc == "numalab-agent" and pp in at_in:
            cur[pp][1] += t - at_in.pop(pp)
            # It slept (S) or exited: the burst ends. R is a preemption; D a wait inside a
            # sample (a /proc read of a team exiting meanwhile), its CPU counted on.
            if not st.startswith(("R", "D")):
                gap, cpu, n, t0 = cur.pop(pp)
                bursts[pp].append((gap, cpu * 1e3, int(n), t0, t))
                last_sleep[pp] = t
    return [(lab, pid, bursts[pid]) for lab, pid in order]


REC = re.compile(r"^REC (run \d+) \"t_s\":([0-9.]+) (?:\"maps_cost_s\":([0-9.e-]+))?\s*(\"snapshot\":\"exit\")?")


def records(text: str) -> dict[str, list[tuple[float, float | None]]]:
    """Each run's sample records from the agent's own output (``REC`` lines): (t_s, numa_maps read
    s), the exit snapshot left out."""
    out: dict[str, list[tuple[float, float | None]]] = {}
    for line in text.splitlines():
        m = REC.match(line.strip())
        if m and not m[4]:
            out.setdefault(m[1], []).append((float(m[2]), float(m[3]) if m[3] else None))
    return out


def sample_cpu(bursts: list[Burst], t_s: list[float]) -> list[str]:
    """The CPU (ms) of each sample the agent recorded at ``t_s`` (its ``start.elapsed()``), in
    order: the first ``len(t_s)`` bursts of 2 ms or more that follow 0.5 s or more without one
    from the process's start or the last such burst (a shorter burst is a wake-up for a thread's
    ptrace stop; the start-up's bursts follow each other closely, the exit snapshot comes after
    the last sample). Marked ``?`` where the burst's
    start lies more than 0.1 s off the record's time, the clocks put together at the first."""
    picked: list[Burst] = []
    quiet_since = bursts[0][3] if bursts else 0.0  # the process's start
    for b in bursts:
        if b[1] < 2.0:
            continue
        if b[3] - quiet_since >= 0.5 and len(picked) < len(t_s):
            picked.append(b)
        quiet_since = b[4]
    if not picked:
        return []
    offset = picked[0][3] - t_s[0]
    return [f"{b[1]:.1f}" + ("" if abs(b[3] - offset - t) <= 0.1 else "?") for b, t in zip(picked, t_s)]


def report(text: str, name: str, warm: str) -> None:
    """Print each agent pid's bursts, then each run's samples as the agent recorded them."""
    for lab, pid, bs in samples(text):
        if not bs:
            continue
        s = [f"{ms:.1f} ({n} faults)" for gap, ms, n, _, _ in bs if gap >= 0.5]
        print(f"{name} {warm} {lab} pid {pid}: samples (ms CPU, in order) {', '.join(s) or '-'};"
              f" all bursts {' '.join(f'{gap:.2f}s/{ms:.1f}/{n}' for gap, ms, n, _, _ in bs)}")
    # Each run's samples as the agent recorded them: its inner agent is the pid first seen after
    # the run's mark with the most CPU (the outer agent only wakes at the command's exit).
    recs = records(text)
    by_label: dict[str, list[list[Burst]]] = {}
    for lab, _, bs in samples(text):
        by_label.setdefault(lab, []).append(bs)
    for lab, rs in recs.items():
        bs = max(by_label.get(lab, [[]]), key=lambda b: sum(x[1] for x in b))
        cpu = sample_cpu(bs, [t for t, _ in rs]) if bs else []
        maps = [m * 1e3 for _, m in rs if m is not None]
        print(f"SAMPLES {name} {warm} {lab}: cpu_ms {' '.join(cpu)};"
              f" t_s {' '.join(f'{t:.3f}' for t, _ in rs)}; maps_ms {' '.join(f'{m:.1f}' for m in maps)}")


WARMS = ("none", "cache", "code", "copy")


def main() -> int:
    args = sys.argv[1:]
    usage = f"usage: agent_first_sample.py CASE {{{','.join(WARMS)}}}[-noaslr] | --parse FILE"
    if args[:1] in (["-h"], ["--help"]):
        print(f"{usage}\n\n{__doc__}")
        return 0
    if len(args) != 2:
        print(f"{usage}\nagent_first_sample.py: error: expected two arguments, got {len(args)}: {' '.join(args)}",
              file=sys.stderr)
        return 2
    name, warm = args
    if name == "--parse":
        # A saved guest output again (``/tmp/agent-first-*.txt``), with the rules as they are now.
        try:
            text = open(warm).read()
        except OSError as e:
            print(f"agent_first_sample.py: cannot read {warm}: {e.strerror}", file=sys.stderr)
            return 2
        report(text, warm.rsplit("/", 1)[-1], "saved")
        return 0
    if name not in check.CASES:
        print(f"agent_first_sample.py: no case {name!r} (one of numalab vm check's: {', '.join(check.CASES)})",
              file=sys.stderr)
        return 2
    if warm.removesuffix("-noaslr") not in WARMS:
        print(f"agent_first_sample.py: warm-up {warm!r} is none of {', '.join(WARMS)} (optionally with -noaslr)",
              file=sys.stderr)
        return 2
    case = check.CASES[name]
    release = vm_setup.load(lambda s: None).kernel_version
    req = check._plan(case, None, "tcg", 300.0, release, lambda s: None).request
    out = vm_run.run(replace(req, command=["sh", "-c", JOB, "sh", " ".join(req.command), warm], interval_ms=60000))
    text = out.text("stdout")
    stamp = time.strftime("%H%M%S", time.gmtime())
    with open(f"/tmp/agent-first-{name}-{warm}-{stamp}.txt", "w") as f:
        f.write(text)
    report(text, name, warm)
    return 0


if __name__ == "__main__":
    sys.exit(main())
