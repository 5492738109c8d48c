"""Issue 22 probe (docs/scheduler.md §10.39): guest runs of a scheduler case with N busy loops in
QEMU's own autogroup, the loaded host the host model represents as it is (``vcpu_host.cores`` 2
and ``other_threads`` N: always-runnable nice-0 threads on the cores' EEVDF queues with QEMU's).

Why a wrapper: ``vm/qemu.py: boot()`` starts QEMU with ``start_new_session`` (``setsid()``), and
with ``SCHED_AUTOGROUP`` a new session is a new task group (v6.x ``kernel/sys.c: ksys_setsid()``
→ ``sched_autogroup_create_attach()``), so loops started beside ``numalab vm check`` in its own
session are in another group than QEMU (§10.18's busy loop, which took a core of its own).
QEMU's command line (``vm/qemu.py: argv()``, patched in the child process
that runs the command) is put behind a shell script that starts the N loops, then ``exec``s
QEMU: the loops are in QEMU's session and group, and QEMU keeps the script's pid (the one
``hostthreads`` samples). A watcher, asleep between checks, kills the loops once QEMU's pid is
gone; QEMU's process group (the loops' too) is killed by ``boot()`` on a time-out; this script
kills any left after the command as well. Each run prints one JSON line: UTC and the 1-minute
load before, the autogroups of QEMU, the loops and this script, the loops' shares of a host CPU
over their life (``/proc/PID/schedstat``), and the guest's figures from ``vm check --moves
--json`` (moves, threads, barriers, ``command_s``, QEMU's cores). ``--probe`` runs
``bench/agent_first_sample.py NAME none`` instead (the agent's CPU per sample, two commands in
one boot) and adds its samples. ``--model`` runs no guest: the model under each recorded
loaded run's condition.

    NUMALAB_AGENT=... PYTHONPATH=python python bench/vm_loaded_host.py --loops 2 --case sched-passive --runs 2
    PYTHONPATH=python python bench/vm_loaded_host.py --model [--seeds 4]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

WRAPPER = r"""#!/bin/sh
n=0
: > "$NUMALAB_LOOPS_FILE"
while [ $n -lt "$NUMALAB_LOOPS" ]; do
  (while :; do :; done) &
  echo $! >> "$NUMALAB_LOOPS_FILE"
  n=$((n + 1))
done
pids=$(cat "$NUMALAB_LOOPS_FILE")
echo $$ > "$NUMALAB_QEMU_PID_FILE"
(while kill -0 $$ 2>/dev/null; do sleep 0.2; done; [ -n "$pids" ] && kill $pids 2>/dev/null) &
exec "$@"
"""


#: Run first in the child: QEMU's command line behind the wrapper (its first word the wrapper,
#: the rest QEMU's own, which the wrapper ``exec``s).
PATCH = """import os, sys
from numalab.vm import qemu
_argv = qemu.argv
qemu.argv = lambda *a, **k: [os.environ["NUMALAB_LOOPS_WRAPPER"], *_argv(*a, **k)]
"""


def read(path: str) -> str | None:
    try:
        return Path(path).read_text()
    except OSError:
        return None


def run_ns(pid: int) -> int | None:
    s = read(f"/proc/{pid}/schedstat")
    return int(s.split()[0]) if s else None


class Watch:
    """Polls the wrapper's files: QEMU's pid, the loops' pids, their autogroups once, and each
    loop's first and last (time, CPU ns)."""

    def __init__(self, qemu_file: str, loops_file: str, n: int):
        self.qemu_file, self.loops_file, self.n = qemu_file, loops_file, n
        self.qemu: int | None = None
        self.loops: list[int] = []
        self.groups: dict[str, str] = {}
        self.first: dict[int, tuple[float, int]] = {}
        self.last: dict[int, tuple[float, int]] = {}
        self.stop = threading.Event()

    def poll(self) -> None:
        while not self.stop.wait(0.25):
            if self.qemu is None:
                q = read(self.qemu_file)
                if q and q.strip():
                    self.qemu = int(q)
                    self.loops = [int(x) for x in (read(self.loops_file) or "").split()]
            if self.qemu is None:
                continue
            if not self.groups:
                g = read(f"/proc/{self.qemu}/autogroup")
                try:
                    exe = os.readlink(f"/proc/{self.qemu}/exe")
                except OSError:
                    exe = ""
                if g and "qemu" in exe:  # after the exec
                    self.groups = {"qemu": g.strip(), "self": (read(f"/proc/{os.getpid()}/autogroup") or "").strip()}
                    for p in self.loops:
                        self.groups[f"loop {p}"] = (read(f"/proc/{p}/autogroup") or "gone").strip()
            t = time.monotonic()
            for p in self.loops:
                ns = run_ns(p)
                if ns is not None:
                    self.first.setdefault(p, (t, ns))
                    self.last[p] = (t, ns)

    def shares(self) -> list[float]:
        return [round((self.last[p][1] - self.first[p][1]) / 1e9 / (self.last[p][0] - self.first[p][0]), 3)
                for p in self.loops if p in self.first and self.last[p][0] > self.first[p][0]]

    def kill_left(self) -> list[int]:
        """Loops still alive (still in QEMU's group: not a reused pid) after the command: killed."""
        left = []
        for p in self.loops:
            g = read(f"/proc/{p}/autogroup")
            if g is not None and g.strip() == self.groups.get("qemu"):
                os.kill(p, 9)
                left.append(p)
        return left


def probe_samples(text: str) -> list[list[float]]:
    """The agent's CPU per sample (ms), per command run, from ``agent_first_sample.py``'s bursts
    ("gap s/CPU ms/faults"). Bursts less than 50 ms apart are one stretch of work (under load a
    sample can sleep briefly inside it); a sample is a stretch woken after 0.5 s or more asleep
    (the 1 s grid), but for the process's last stretch: the agent's wake-up at the command's end
    and its exit snapshot, 0.4-0.7 s after the last sample. Per run, the agent process with the
    most bursts (its start-up's forked child and the outer agent show too)."""
    best: dict[str, list[tuple[float, float]]] = {}
    for m in re.finditer(r"none (run \d+) pid \d+: samples [^;]*; all bursts (.*)", text):
        bursts = [(float(g), float(c)) for g, c in re.findall(r"([\d.]+)s/([\d.]+)/\d+", m[2])]
        if len(bursts) > len(best.get(m[1], [])):
            best[m[1]] = bursts
    out = []
    for _, bursts in sorted(best.items()):
        stretches: list[list[float]] = []  # [gap before it, CPU]
        for gap, cpu in bursts:
            if stretches and gap < 0.05:
                stretches[-1][1] += cpu
            else:
                stretches.append([gap, cpu])
        out.append([round(cpu, 1) for gap, cpu in stretches[:-1] if gap >= 0.5])
    return out


def one(name: str, loops: int, probe: bool, tree: Path) -> dict[str, Any]:
    tmp = Path(tempfile.mkdtemp(prefix="h47-"))
    wrapper = tmp / "qemu-with-loops"
    wrapper.write_text(WRAPPER)
    wrapper.chmod(0o755)
    env = {**os.environ, "NUMALAB_LOOPS_WRAPPER": str(wrapper), "NUMALAB_LOOPS": str(loops),
           "NUMALAB_LOOPS_FILE": str(tmp / "loops"), "NUMALAB_QEMU_PID_FILE": str(tmp / "qemu.pid")}
    if probe:
        cmd = [sys.executable, "-c", PATCH + "import runpy; sys.argv = sys.argv[1:]; runpy.run_path(sys.argv[0], run_name='__main__')",
               str(tree / "bench" / "agent_first_sample.py"), name, "none"]
    else:
        cmd = [sys.executable, "-c", PATCH + "from numalab.cli.main import run; sys.exit(run())",
               "vm", "check", "--moves", "--case", name, "--json"]
    rec: dict[str, Any] = {"case": name, "loops": loops, "probe": probe,
                           "utc": time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime()),
                           "load": float(Path("/proc/loadavg").read_text().split()[0])}
    watch = Watch(str(tmp / "qemu.pid"), str(tmp / "loops"), loops)
    poller = threading.Thread(target=watch.poll, daemon=True)
    poller.start()
    t0 = time.monotonic()
    out = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    watch.stop.set()
    poller.join()
    rec.update(wall_s=round(time.monotonic() - t0, 1), rc=out.returncode, groups=watch.groups,
               loop_shares=watch.shares(), loops_left=watch.kill_left(),
               load_after=float(Path("/proc/loadavg").read_text().split()[0]))
    (tmp / "stdout").write_text(out.stdout)
    (tmp / "stderr").write_text(out.stderr)
    rec["dir"] = str(tmp)
    if out.returncode != 0:
        rec["error"] = out.stderr.strip()[-400:]
        return rec
    if probe:
        rec["samples_ms"] = probe_samples(out.stdout)
        return rec
    doc = json.loads(out.stdout[out.stdout.index("{"):])[name]
    g = doc["guest"]
    threads = doc.get("host", {}).get("threads", [])
    rec.update(moves=g["nr_migrations"], threads=g["threads"], barriers=g["barriers"], command_s=g["command_s"],
               value=g["nr_migrations"] / g["threads"] / g["barriers"] if g["threads"] and g["barriers"] else None,
               qemu_cores=round(sum(t["share"] for t in threads), 3),
               vcpu_shares=[round(t["share"], 3) for t in threads if t.get("vcpu") is not None],
               busy=g["busy"], by_path={p: v[0] for p, v in g["moves"].items() if v[0]})
    return rec


def host_cores(doc: dict[str, Any]) -> tuple[float, float]:
    """The host model's QEMU threads (vCPUs and main loop) and its other threads, in host cores
    over the run (as ``vm check --moves`` sums QEMU's threads' shares)."""
    run_s = float(doc["time_s"])
    qemu = sum(float(c["host_s"]) for c in doc["sched_cpus"]) + float((doc.get("sched_host_main_loop") or {}).get("host_s", 0.0))
    return qemu / run_s, sum(doc.get("sched_host_others_s", [])) / run_s


def model(seeds: int) -> int:
    """Every recorded run with busy loops in QEMU's group (``guest_seen.GUEST_RUNS``,
    ``other_threads`` > 0) under its own condition: two host cores and its loops
    (``check.HOSTS``), its own barrier, and the agent's CPU per sample measured under its
    condition (``check.CONDITIONS["group-loops-N"]``); seeds 1..``seeds``. Prints the model's
    mean beside the run (``run_condition.judge``), and the host cores the model's QEMU threads
    and loops got beside what the run's did. Deterministic."""
    import statistics
    from dataclasses import replace

    from numalab.vm import check, guest_seen, run_condition

    print("case                     UTC                  N  guest      k  QEMU  ms/barrier  agent ms  model mean (range)        "
          "ratio   sd both  model QEMU / loops")
    for name, runs in guest_seen.GUEST_RUNS.items():
        case = check.CASES[name]
        spec = check.sim_spec(case)
        reps = int(case.params["reps"])
        for r in runs:
            if not r.other_threads:
                continue
            cond = check.CONDITIONS[f"group-loops-{r.other_threads}"]
            host = check.HOSTS[cond.host]
            bg = replace(cond.background(name), barrier_s=r.command_s / reps)
            # --explain-sched keeps the host model's per-thread times (it changes no decision).
            docs = [check.sim_doc(replace(spec, seed=s).updated(explain_sched=True), bg, case.interval_ms, host)
                    for s in range(1, seeds + 1)]
            sim = [check.threads_of(d).migrations_per_thread_barrier(reps) for d in docs]
            v = run_condition.judge(r.value, int(dict(spec.params)["threads"]), reps, sim)
            q = statistics.mean(host_cores(d)[0] for d in docs)
            loops = statistics.mean(host_cores(d)[1] for d in docs) / r.other_threads
            print(f"{name:24s} {r.utc}  {r.other_threads}  {r.value:<9.5g} {v.moves:3d}  {r.cores:4.2f}  {bg.barrier_s * 1e3:9.3f}"
                  f"  {bg.agent_cost_s * 1e3:8.1f}  {v.mean:<8.4g} ({min(sim):.4g}-{max(sim):.4g})  "
                  f"{v.ratio if v.ratio is not None else float('nan'):6.3g}  {v.z_both:+6.1f}   {q:.2f} / {loops:.2f} each")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--loops", type=int, help="busy loops in QEMU's own autogroup")
    ap.add_argument("--case", action="append", help="vm check case (repeatable)")
    ap.add_argument("--runs", type=int, default=1, help="runs per case")
    ap.add_argument("--gap", type=float, default=8.0, help="seconds between runs")
    ap.add_argument("--probe", action="store_true", help="the agent's samples (bench/agent_first_sample.py)")
    ap.add_argument("--out", help="append each run's JSON line here too")
    ap.add_argument("--model", action="store_true",
                    help="no guest: the model under each recorded loaded run's condition (guest_seen.GUEST_RUNS)")
    ap.add_argument("--seeds", type=int, default=4, help="--model's seeds 1..N")
    a = ap.parse_args()
    if a.model:
        if a.seeds < 1:
            ap.error("--seeds must be 1 or more")
        return model(a.seeds)
    if a.loops is None or not a.case:
        ap.error("--loops and --case are needed to run the guest")
    if a.loops < 0 or a.runs < 1 or a.gap < 0:
        ap.error("--loops must be 0 or more, --runs 1 or more, --gap not negative")
    from numalab.vm import check

    unknown = [c for c in a.case if c not in check.CASES]
    if unknown:
        ap.error(f"unknown case {', '.join(unknown)} (one of: {', '.join(n for n in check.CASES if n.startswith('sched-'))})")
    tree = Path(__file__).resolve().parent.parent
    first = True
    for _ in range(a.runs):
        for name in a.case:
            if not first:
                time.sleep(a.gap)
            first = False
            rec = one(name, a.loops, a.probe, tree)
            line = json.dumps(rec, sort_keys=True)
            print(line, flush=True)
            if a.out:
                with open(a.out, "a") as f:
                    f.write(line + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
