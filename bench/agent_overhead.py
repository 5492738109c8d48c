"""Agent overhead: what sampling costs a program that runs under numalab-agent.

Runs kernels/dgemv (n = 20000: a 3.2 GB matrix, 10 repetitions, 2 threads, parallel first touch)
alone and under the static numalab-agent at its default interval (1000 ms), alternating the two so
drift on a shared machine hits both alike. Prints the median kernel time (the dgemv loop, as the
kernel reports it), the median wall time of the whole process and their ratios (target: under 1%
slower) and of the best runs, and the agent's own CPU time per run and per sample (its rusage minus
the command's, as the summary record reports it): what sampling takes away from the program, and
the figure that stays meaningful when other work shares the machine and the times scatter, also
as a share of the command's own CPU time.

    python3 bench/agent_overhead.py [--rounds N] [--n N] [--reps N] [--interval-ms N]

Builds kernels/ and the agent first if they are missing (make kernels agent). Needs no venv.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DGEMV = ROOT / "kernels" / "dgemv"
AGENT = ROOT / "target" / "static" / "numalab-agent"


def children_cpu_s() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def run(cmd: list[str]) -> tuple[dict, float, float]:
    """The kernel's JSON line, the wall time and the CPU time of the whole process tree."""
    cpu0, t0 = children_cpu_s(), time.perf_counter()
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    wall, cpu = time.perf_counter() - t0, children_cpu_s() - cpu0
    return json.loads(out.strip().splitlines()[-1]), wall, cpu


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--n", type=int, default=20000)
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--interval-ms", type=int, default=None, help="default: the agent's own (1000)")
    a = ap.parse_args()
    if not DGEMV.exists() or not AGENT.exists():
        subprocess.run(["make", "-s", "-C", str(ROOT), "kernels", "agent"], check=True)
    kernel = [str(DGEMV), "--n", str(a.n), "--reps", str(a.reps), "--threads", "2", "--init", "parallel"]

    alone_cpu: list[float] = []
    alone: list[tuple[float, float]] = []
    under: list[tuple[float, float]] = []
    agent_cpu: list[float] = []
    command_cpu: list[float] = []
    samples: list[int] = []
    with tempfile.TemporaryDirectory() as tmp:
        records = Path(tmp) / "records.jsonl"
        agent = [str(AGENT), "run", "--output", str(records)]
        if a.interval_ms:
            agent += ["--interval-ms", str(a.interval_ms)]
        for i in range(a.rounds):
            # Alternate which goes first, so neither always runs on a warmer machine.
            order = ["alone", "agent"] if i % 2 == 0 else ["agent", "alone"]
            for which in order:
                if which == "alone":
                    k, wall, cpu = run(kernel)
                    alone.append((k["time_s"], wall))
                    alone_cpu.append(cpu)
                else:
                    k, wall, cpu = run(agent + ["--"] + kernel)
                    under.append((k["time_s"], wall))
                    summary = json.loads(records.read_text().splitlines()[-1])
                    ru = summary["rusage"]
                    agent_cpu.append(cpu - ru["user_s"] - ru["system_s"])
                    command_cpu.append(ru["user_s"] + ru["system_s"])
                    samples.append(summary["samples"])
            print(f"  round {i + 1}/{a.rounds}: alone {alone[-1][0]:.3f} s, under the agent {under[-1][0]:.3f} s",
                  file=sys.stderr)

    med = statistics.median
    k_alone, k_under = med(t for t, _ in alone), med(t for t, _ in under)
    w_alone, w_under = med(w for _, w in alone), med(w for _, w in under)
    per_sample_ms = 1000 * sum(agent_cpu) / max(1, sum(samples))
    print(f"agent overhead: dgemv n={a.n} reps={a.reps} threads=2 init=parallel, {a.rounds} rounds, "
          f"interval {a.interval_ms or 1000} ms, {os.cpu_count()} CPUs")
    print(f"  kernel time (median): alone {k_alone:.3f} s, under the agent {k_under:.3f} s, "
          f"ratio {k_under / k_alone:.4f} ({100 * (k_under / k_alone - 1):+.2f}%)")
    print(f"  wall time   (median): alone {w_alone:.3f} s, under the agent {w_under:.3f} s, "
          f"ratio {w_under / w_alone:.4f} ({100 * (w_under / w_alone - 1):+.2f}%)")
    k_min_alone, k_min_under = min(t for t, _ in alone), min(t for t, _ in under)
    print(f"  kernel time (best):   alone {k_min_alone:.3f} s, under the agent {k_min_under:.3f} s, "
          f"ratio {k_min_under / k_min_alone:.4f} ({100 * (k_min_under / k_min_alone - 1):+.2f}%)")
    print(f"  agent CPU: {med(agent_cpu) * 1000:.1f} ms per run (median), {per_sample_ms:.2f} ms per sample, "
          f"{100 * med(agent_cpu) / w_under:.2f}% of one CPU over the run; {med(samples):.0f} samples per run")
    print(f"  command CPU (median): alone {med(alone_cpu):.3f} s, under the agent {med(command_cpu):.3f} s, "
          f"ratio {med(command_cpu) / med(alone_cpu):.4f}")
    ratio = sum(agent_cpu) / sum(command_cpu)
    print(f"  agent CPU / command CPU: {100 * ratio:.2f}% (the overhead that does not depend on what else runs)")


if __name__ == "__main__":
    main()
