"""Study overhead: what a sweep costs beyond the simulations themselves.

Runs a study of 200 short simulations (dgemv, n = 10000, 10 repetitions, 200 seeds: about
15-30 ms each) into a fresh store, once with one local worker and once with two, and counts as
overhead everything but the runs (a run: reading its configuration, simulating, building its
document, as ``worker.run_config`` times it): expanding the study, creating the store, starting
the worker pool, sending configurations and outcomes between processes, encoding the result
documents and committing the runs to SQLite. Two measures of it, both printed:

* CPU: the CPU time of the client (this process, all its threads) and of its workers (reaped
  children, ``getrusage``), less the runs' own CPU time (``process_time`` in the worker around
  each run), as a percentage of the client's and workers' CPU time. Other processes on the CPUs
  do not enter it, so it is the measure to compare on a shared machine; with as many workers as
  CPUs every CPU second of overhead is taken from the simulations.
* wall: the study's wall time less the ideal (the runs' wall times spread over the workers), as a
  percentage of the wall time. It also counts waiting (store syncs, starting the workers, the
  last runs ending on one worker) and, on a loaded machine, other processes holding the CPUs;
  with fewer workers than CPUs it does not count the client's CPU, which runs beside them.

Target (issue 27): overhead under 2 % of the study. The load average is printed with the figures.
``--bar`` draws the sweep's progress bar, as ``numalab study`` does on a terminal, into a stand-in
terminal that drops the text, so the bar's CPU time counts too (without it the sweep shows nothing).
``--repeat N`` measures N times and prints the measurement with the lowest CPU overhead (the
quietest moment) and the median of each measure.

    .venv/bin/python bench/study_overhead.py [--repeat N] [--bar]
"""

from __future__ import annotations

import argparse
import io
import os
import resource
import statistics
import tempfile
import time
from dataclasses import dataclass
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


@dataclass(frozen=True)
class Measured:
    workers: int
    wall_s: float  # the whole study: expansion, store, sweep, closing the store
    run_wall_s: float  # the runs' own wall times, summed
    expand_s: float
    client_cpu_s: float
    workers_cpu_s: float
    run_cpu_s: float  # the runs' own CPU times, summed

    @property
    def wall_pct(self) -> float:
        return 100 * (self.wall_s - self.run_wall_s / self.workers) / self.wall_s

    @property
    def cpu_s(self) -> float:
        return self.client_cpu_s + self.workers_cpu_s

    @property
    def cpu_pct(self) -> float:
        return 100 * (self.cpu_s - self.run_cpu_s) / self.cpu_s


def _cpu(who: int) -> float:
    r = resource.getrusage(who)
    return r.ru_utime + r.ru_stime


class _Terminal(io.TextIOBase):
    """A terminal to draw the bar on, which drops what it is sent."""

    def isatty(self) -> bool:
        return True

    def write(self, text: str) -> int:
        return len(text)


def measure(workers: int, bar: bool = False) -> Measured:
    from numalab.study.sweep import run_study, study_progress

    with tempfile.TemporaryDirectory() as tmp:
        # The workers are reaped when the pool shuts down (end of run_study), so their CPU time
        # is in RUSAGE_CHILDREN by then.
        client, children = _cpu(resource.RUSAGE_SELF), _cpu(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        resolved = expand(parse_study(STUDY, "overhead.toml"))
        expanded = time.perf_counter()
        with Store(Path(tmp)) as store:
            progress = study_progress(stream=_Terminal()) if bar else Progress("runs", quiet=True)
            summary = run_study(resolved, store, lambda: LocalBackend(workers), progress)
        wall = time.perf_counter() - start
        client, children = _cpu(resource.RUSAGE_SELF) - client, _cpu(resource.RUSAGE_CHILDREN) - children
    assert summary.ok == RUNS, f"only {summary.ok} of {RUNS} runs finished"
    # Workers started by a forkserver (a client with other threads) are not this process's
    # children: their CPU time would be missing, and the overhead would come out negative.
    assert children >= summary.run_cpu_s, f"the workers' CPU time ({children:.2f} s) is not counted: less than their runs' ({summary.run_cpu_s:.2f} s)"
    return Measured(workers, wall, summary.run_wall_s, expanded - start, client, children, summary.run_cpu_s)


def _load() -> str:
    return "load average " + " ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=1, help="measurements per worker count (default 1)")
    ap.add_argument("--bar", action="store_true", help="draw the sweep's progress bar (to a terminal that drops it), as on a terminal")
    args = ap.parse_args()
    if args.bar:
        # Imported once per command (about 10 ms of CPU; `numalab` has rich.console loaded already),
        # not once per study: not in the first measurement only.
        import rich.progress  # noqa: F401
    print(f"{_load()} at the start" + (", with the progress bar" if args.bar else ", without a progress bar (--bar draws it)"))
    print("overhead = what is not the runs' own time (target < 2 %): CPU = client + workers' CPU time less the runs' "
          "CPU time, of client + workers; wall = wall time less the runs' wall times / workers, of the wall time")
    for workers in (1, 2):
        results = [measure(workers, args.bar) for _ in range(max(1, args.repeat))]
        m = min(results, key=lambda r: r.cpu_pct)
        what = "1 worker" if workers == 1 else f"{workers} workers"
        median = ""
        if len(results) > 1:
            median = (f"; median of {len(results)}: CPU {statistics.median(r.cpu_pct for r in results):.1f} %, "
                      f"wall {statistics.median(r.wall_pct for r in results):.1f} %")
        print(f"{what}: CPU overhead {m.cpu_pct:.1f} % (client {m.client_cpu_s * 1000:.0f} ms + workers "
              f"{(m.workers_cpu_s - m.run_cpu_s) * 1000:.0f} ms beyond the runs' {m.run_cpu_s:.2f} s), "
              f"wall overhead {m.wall_pct:.1f} % (total {m.wall_s:.2f} s, runs "
              f"{m.run_wall_s:.2f} s, mean {m.run_wall_s / RUNS * 1000:.1f} ms, ideal {m.run_wall_s / workers:.2f} s; "
              f"expansion {m.expand_s * 1000:.0f} ms){median}")
    print(f"{_load()} at the end")


if __name__ == "__main__":
    main()
