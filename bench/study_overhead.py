"""Study overhead: what a sweep costs beyond the simulations themselves.

Runs a study of 200 short simulations (dgemv, n = 10000, 10 repetitions, 200 seeds: about
15-30 ms each) into a fresh store with one local worker, so the runs execute back to back and
everything else is overhead: expanding the study, creating the store, starting the worker pool,
sending configurations and results between processes, serialising the result documents and
committing the runs to SQLite. Prints that overhead as a percentage of the total (target, issue
27: under 2%), then the same with two workers against the ideal (sum of run times / workers),
which on a loaded two-core machine also counts the client competing with its workers for the
CPUs. The load average is printed with the figures: other processes on the CPUs inflate both.

``--repeat N`` measures N times and prints the lowest overhead (the quietest moment) and the
median.

    .venv/bin/python bench/study_overhead.py [--repeat N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

from numalab.results.store import Store
from numalab.study import expand, parse_study
from numalab.study.executors import LocalBackend
from numalab.console.progress import Progress

RUNS = 200
STUDY = f"""
name = "overhead"
machine = "e5-2620v4-2s"
workload = "dgemv"
repetitions = {RUNS}
params = {{ n = 10000, reps = 10, threads = 16 }}
"""


def measure(workers: int) -> tuple[float, float, float, int]:
    """(total seconds, seconds inside the runs, expansion seconds, runs done)."""
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        resolved = expand(parse_study(STUDY, "overhead.toml"))
        expanded = time.perf_counter()
        with Store(Path(tmp)) as store:
            from numalab.study.sweep import run_study

            summary = run_study(resolved, store, lambda: LocalBackend(workers), Progress("runs", quiet=True))
        total = time.perf_counter() - start
    return total, summary.run_wall_s, expanded - start, summary.ok


def overhead(workers: int) -> tuple[float, float, float, float]:
    """(overhead % of the total, total s, sum of run seconds, expansion s), against the ideal
    total of the run seconds spread over ``workers``."""
    total, runs, expand_s, done = measure(workers)
    assert done == RUNS, f"only {done} of {RUNS} runs finished"
    return 100 * (total - runs / workers) / total, total, runs, expand_s


def _load() -> str:
    return "load average " + " ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=1, help="measurements per worker count (default 1)")
    args = ap.parse_args()
    print(f"{_load()} at the start")
    for workers in (1, 2):
        results = [overhead(workers) for _ in range(max(1, args.repeat))]
        best = min(results)
        pct, total, runs, expand_s = best
        what = "1 worker" if workers == 1 else f"{workers} workers"
        print(f"{what}: total {total:.2f} s, in runs {runs:.2f} s (mean {runs / RUNS * 1000:.1f} ms), "
              f"expansion {expand_s * 1000:.0f} ms; overhead {pct:.1f}% of the total (target < 2%)"
              + ("" if workers == 1 else f" against the ideal {runs / workers:.2f} s")
              + (f"; median of {len(results)}: {statistics.median(r[0] for r in results):.1f}%" if len(results) > 1 else ""))
    print(f"{_load()} at the end")


if __name__ == "__main__":
    main()
