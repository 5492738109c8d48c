"""``numalab check --host``: a fixed set of kernel runs on this host under the agent and the same
runs in the simulator on a machine (a calibrated preset, docs/calibrate.md §5), predicted against
measured time, per case.

Like with like: the measured time is the kernel's own timer (``time_s``: the timed repetitions,
kernels/common.h ``print_result``), the predicted one the simulator's ``reported_time_s`` of a
descriptor whose repeated step is ``timed`` as the kernel's loop is (docs/workloads.md §1.2).
Process start-up and the first touch (``init_s``) are in neither. Beside the wall time each run
reports the CPU time of its loop (``cpu_s``, every thread); ``cpu_s / threads`` is about the loop's
time on an idle machine, and ``cpu_s / (threads x time_s)`` the share of the CPUs the run got:
below 1, other programs held them (the host was busy) and the wall time measures them too.

Descriptors: ``dgemv-kernel.toml`` and ``stream-triad.toml`` beside this module (kernels/dgemv.c and
kernels/stream.c in triad mode; the library's ``dgemv`` is study S2's program, its ``stream``
stream.c v5.10's four kernels) and the library's ``stencil`` (kernels/stencil.c)."""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from numalab.calibrate.measure import kernel, run_placed
from numalab.spec import RunSpec

HERE = Path(__file__).parent
#: A simulator parameter -> the C kernel's option, and options fixed for the kernel.
KERNEL_OPTIONS = {
    "dgemv": ({"n": "n", "reps": "reps", "threads": "threads", "init": "init"}, {}),
    "stream": ({"n": "n", "ntimes": "reps", "threads": "threads"}, {"init": "parallel", "mode": "triad"}),
    "stencil": ({"n": "n", "reps": "reps", "threads": "threads", "init": "init"}, {}),
}
#: The descriptor each kernel is simulated with.
DESCRIPTORS = {"dgemv": str(HERE / "dgemv-kernel.toml"), "stream": str(HERE / "stream-triad.toml"), "stencil": "stencil"}
#: Sizes past the caches of common servers' per-core share, short enough for a 2-core machine.
DGEMV = {"n": 6000, "reps": 30}  # 288 MB matrix
STREAM = {"n": 8_000_000, "ntimes": 10}  # 3 x 64 MB
STENCIL = {"n": 256, "reps": 10}  # 2 x 128 MiB grids
ONE_NODE = "one memory node: the placement is the default one"


@dataclass(frozen=True)
class Case:
    name: str
    workload: str
    params: dict[str, Any]
    config: str = "default"
    skipped: str = ""  # why the case does not run on this host; empty: it runs


@dataclass(frozen=True)
class Run:
    """One host run: the kernel's timed loop, wall and CPU time, and its first touch."""
    time_s: float
    cpu_s: float
    init_s: float
    threads: int

    @property
    def cpu_share(self) -> float:
        """The share of its CPUs the loop got: 1 on an idle machine."""
        return self.cpu_s / (self.threads * self.time_s) if self.time_s > 0 else 0.0

    @property
    def cpu_time_s(self) -> float:
        """The loop's CPU time per thread: about its time had nothing else run."""
        return self.cpu_s / self.threads


@dataclass(frozen=True)
class Outcome:
    case: Case
    runs: tuple[Run, ...] = ()
    predicted_s: float = 0.0  # the simulator's reported_time_s (the timed loop)
    predicted_run_s: float = 0.0  # the simulator's time_s (the whole run, from the exec)

    @property
    def measured_s(self) -> float:
        """The median of the runs' wall time of the loop."""
        return statistics.median(r.time_s for r in self.runs)

    @property
    def measured_cpu_s(self) -> float:
        """The median of the runs' CPU time of the loop per thread."""
        return statistics.median(r.cpu_time_s for r in self.runs)

    @property
    def cpu_share(self) -> float:
        return statistics.median(r.cpu_share for r in self.runs)

    @property
    def error_pct(self) -> float:
        """(predicted - measured) / measured, in percent, on the wall time."""
        return (self.predicted_s - self.measured_s) / self.measured_s * 100.0

    @property
    def error_cpu_pct(self) -> float:
        """The same on the CPU time per thread (the error the host's other programs do not make)."""
        return (self.predicted_s - self.measured_cpu_s) / self.measured_cpu_s * 100.0

    def as_json(self) -> dict[str, Any]:
        head = {"case": self.case.name, "workload": self.case.workload, "params": self.case.params, "config": self.case.config}
        if self.case.skipped:
            return head | {"skipped": self.case.skipped}
        return head | {
            "measured_s": self.measured_s, "measured_runs_s": [r.time_s for r in self.runs],
            "measured_cpu_s": self.measured_cpu_s, "measured_runs_cpu_s": [r.cpu_time_s for r in self.runs],
            "cpu_share": self.cpu_share, "init_runs_s": [r.init_s for r in self.runs],
            "predicted_s": self.predicted_s, "predicted_run_s": self.predicted_run_s,
            "error_pct": self.error_pct, "error_cpu_pct": self.error_cpu_pct,
        }


def thread_levels(cpus: int) -> list[int]:
    return sorted({*(2**i for i in range(cpus.bit_length()) if 2**i < cpus), cpus})


def cases(nodes: list[int], cpus: int) -> list[Case]:
    """DGEMV with serial and parallel first touch on every CPU, STREAM from 1, 2, 4 ... to every
    CPU, the stencil with both first touches on every CPU, DGEMV and the stencil on one thread
    (nothing waits for a partner: on a busy host its CPU time is still an idle core's, which
    separates the model's errors from the load's, docs/calibrate.md §5.1), and STREAM and the
    stencil interleaved over all nodes and bound to the first (skipped, and said so, with one
    node)."""
    out = [Case(f"dgemv init={init}", "dgemv", {**DGEMV, "threads": cpus, "init": init}) for init in ("serial", "parallel")]
    out += [Case(f"stream threads={t}", "stream", {**STREAM, "threads": t}) for t in thread_levels(cpus)]
    out += [Case(f"stencil init={init}", "stencil", {**STENCIL, "threads": cpus, "init": init}) for init in ("serial", "parallel")]
    if cpus > 1:
        out += [Case("dgemv threads=1", "dgemv", {**DGEMV, "threads": 1, "init": "parallel"}),
                Case("stencil threads=1", "stencil", {**STENCIL, "threads": 1, "init": "parallel"})]
    skip = "" if len(nodes) > 1 else ONE_NODE
    for w, params in (("stream", STREAM), ("stencil", {**STENCIL, "init": "parallel"})):
        out += [Case(f"{w} interleave=all", w, {**params, "threads": cpus}, "interleave=all", skip),
                Case(f"{w} membind={nodes[0]}", w, {**params, "threads": cpus}, f"membind={nodes[0]}", skip)]
    return out


def kernel_argv(workload: str, resolved: dict[str, Any]) -> list[str]:
    """The C kernel's command line for the simulator's resolved parameters (defaults included)."""
    names, fixed = KERNEL_OPTIONS[workload]
    opts = {names[k]: v for k, v in resolved.items() if k in names} | fixed
    return [str(kernel(workload))] + [f"--{k}={v}" for k, v in sorted(opts.items())]


def parse_run(out: dict[str, Any]) -> Run:
    return Run(float(out["time_s"]), float(out["cpu_s"]), float(out["init_s"]), int(out["threads"]))


def run_case(case: Case, machine: str, repeat: int = 1) -> Outcome:
    """``repeat`` host runs (their median is the measurement: one run on a busy host can be far
    off) and one simulation (deterministic)."""
    from numalab.runner import sim
    from numalab.runner.host import check_placement

    if case.skipped:
        return Outcome(case)
    spec = RunSpec.create(machine, DESCRIPTORS[case.workload], params=case.params).with_config(case.config)
    bound = spec.bind()
    check_placement(spec.placement)
    argv = kernel_argv(case.workload, dict(bound.workload["params"]))
    runs = tuple(parse_run(run_placed(argv, spec.placement, case.name)) for _ in range(repeat))
    doc = sim.run(bound).doc
    return Outcome(case, runs, float(doc["reported_time_s"]), float(doc["time_s"]))


COLUMNS = ["case", "measured s", "runs s", "CPU s", "share", "predicted s", "error %", "error % (CPU)"]


def rows(outcomes: list[Outcome]) -> list[list[str]]:
    """The table's rows: a skipped case says why in place of its numbers."""
    out = []
    for o in outcomes:
        if o.case.skipped:
            out.append([o.case.name, f"skipped: {o.case.skipped}", "", "", "", "", "", ""])
            continue
        walls = [r.time_s for r in o.runs]
        out.append([o.case.name, f"{o.measured_s:.3f}", f"{min(walls):.3f}-{max(walls):.3f}", f"{o.measured_cpu_s:.3f}",
                    f"{o.cpu_share:.2f}", f"{o.predicted_s:.3f}", f"{o.error_pct:+.1f}", f"{o.error_cpu_pct:+.1f}"])
    return out


def loadavg(path: Path = Path("/proc/loadavg")) -> list[float]:
    """The 1, 5 and 15 minute load averages (what else ran), or nothing where unreadable."""
    try:
        return [float(x) for x in path.read_text().split()[:3]]
    except (OSError, ValueError):
        return []


def check(machine: str, nodes: list[int], cpus: int, step: Callable[[str], None], repeat: int = 1) -> list[Outcome]:
    results = []
    for c in cases(nodes, cpus):
        step(c.name)
        results.append(run_case(c, machine, repeat))
    return results
