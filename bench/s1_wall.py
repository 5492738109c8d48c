"""Study S1's wall time: the 84 runs of its default NPB implementation with 2 local workers.

Reads studies/s1-autonuma-npb.toml without its ``compare_npb`` line (the other implementations'
252 runs), runs it into a fresh store with ``--jobs`` local workers (default 2) and prints the
wall time, the CPU time of the workers, the sum of the runs' own times, the share of it in the
longest workload (BT and SP dominate), and the load average before and after: on a shared
two-core machine other processes stretch the wall time, so the figure to compare is that of a
quiet moment (issue 27's target: under 60 s with 2 workers).

    .venv/bin/python bench/s1_wall.py [--jobs N]
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from numalab.console.progress import Progress
from numalab.results.store import Store
from numalab.study import expand, load_study
from numalab.study.executors import LocalBackend
from numalab.study.sweep import run_study

S1 = Path(__file__).resolve().parents[1] / "studies" / "s1-autonuma-npb.toml"


def _load() -> str:
    return "load average " + " ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=2, help="local worker processes (default 2)")
    args = ap.parse_args()
    text = re.sub(r"(?m)^compare_npb\s*=.*$", "", S1.read_text())
    print(f"{_load()} at the start")
    with tempfile.TemporaryDirectory() as tmp:
        study = Path(tmp) / S1.name
        study.write_text(text)
        children = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        resolved = expand(load_study(study))
        with Store(Path(tmp) / "results") as store:
            summary = run_study(resolved, store, lambda: LocalBackend(args.jobs), Progress("runs", quiet=True))
            per_workload: dict[str, float] = defaultdict(float)
            for row in store.rows(resolved.name):
                per_workload[row["workload"]] += row["wall_s"] or 0.0
        wall = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime + after.ru_stime) - (children.ru_utime + children.ru_stime)
    assert summary.ok == len(resolved.runs) == 84, summary.describe()
    runs = summary.run_wall_s
    print(f"S1, {len(resolved.runs)} runs of the default NPB, {args.jobs} workers: {wall:.1f} s wall (target < 60 s), "
          f"workers' CPU {cpu:.1f} s, sum of the runs' times {runs:.1f} s (ideal wall {runs / args.jobs:.1f} s)")
    shares = ", ".join(f"{w} {100 * t / runs:.0f}%" for w, t in sorted(per_workload.items(), key=lambda kv: -kv[1]))
    print(f"run time by workload: {shares}")
    print(f"{_load()} at the end")


if __name__ == "__main__":
    main()
