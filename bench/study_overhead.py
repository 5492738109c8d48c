"""Study overhead: what a sweep costs beyond the simulations themselves.

Runs a study of 200 short simulations (dgemv, n = 10000, 10 repetitions, 200 seeds: about
15-20 ms each) into a fresh store with one local worker, so the runs execute back to back and
everything else is overhead: expanding the study, starting the worker pool, sending configurations
and results between processes, serialising the result documents and committing every run to
SQLite. Prints that overhead as a percentage of the total (target: under 5%), then the same with
two workers against the ideal (sum of run times / workers), which on a loaded two-core machine
also counts the client competing with its workers for the CPUs.

    .venv/bin/python bench/study_overhead.py
"""

from __future__ import annotations

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


def main() -> None:
    total, runs, expand_s, done = measure(1)
    assert done == RUNS, f"only {done} of {RUNS} runs finished"
    overhead = total - runs
    print(f"study overhead, {RUNS} runs, 1 worker: total {total:.2f} s, in runs {runs:.2f} s "
          f"(mean {runs / RUNS * 1000:.1f} ms), expansion {expand_s * 1000:.0f} ms")
    print(f"overhead (expansion + scheduling + store writes): {overhead:.2f} s = {100 * overhead / total:.1f}% of the total (target < 5%)")
    total2, runs2, _, done2 = measure(2)
    ideal = runs2 / 2
    print(f"2 workers: total {total2:.2f} s vs ideal {ideal:.2f} s (sum of runs / 2): "
          f"overhead {100 * (total2 - ideal) / total2:.1f}% of the total ({done2} runs)")


if __name__ == "__main__":
    main()
