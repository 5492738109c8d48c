"""``numalab check --host``: a fixed set of kernel runs on this host under the agent and the same
runs in the simulator on a machine (a calibrated preset, docs/calibrate.md §5), predicted against
measured time, per case.

Measured time is the kernel's own ``init_s + time_s`` (first touch plus the timed loop, what the
simulator's ``time_s`` covers; process start-up is left out). STREAM is simulated with
``stream-triad.toml`` beside this module, the descriptor of kernels/stream.c (triad only; the
library's ``stream`` is stream.c v5.10's four kernels). The C kernels without a simulator
descriptor (stencil) are not cases."""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from numalab.calibrate.measure import kernel, run_placed
from numalab.spec import RunSpec

#: A simulator parameter -> the C kernel's option; STREAM's descriptor first-touches in parallel.
KERNEL_OPTIONS = {
    "dgemv": ({"n": "n", "reps": "reps", "threads": "threads", "init": "init"}, {}),
    "stream": ({"n": "n", "ntimes": "reps", "threads": "threads"}, {"init": "parallel", "mode": "triad"}),
}
#: The descriptor each kernel is simulated with.
DESCRIPTORS = {"dgemv": "dgemv", "stream": str(Path(__file__).with_name("stream-triad.toml"))}
#: Sizes past the caches of common servers' per-core share, short enough for a 2-core machine.
DGEMV = {"n": 6000, "reps": 30}  # 288 MB matrix
STREAM = {"n": 8_000_000, "ntimes": 10}  # 3 x 64 MB


@dataclass(frozen=True)
class Case:
    name: str
    workload: str
    params: dict[str, Any]
    config: str = "default"


@dataclass(frozen=True)
class Outcome:
    case: Case
    measured_s: float  # the median of the runs
    predicted_s: float
    runs_s: tuple[float, ...] = ()  # every run's measured time

    @property
    def error_pct(self) -> float:
        """(predicted - measured) / measured, in percent."""
        return (self.predicted_s - self.measured_s) / self.measured_s * 100.0

    def as_json(self) -> dict[str, Any]:
        return {"case": self.case.name, "workload": self.case.workload, "params": self.case.params, "config": self.case.config,
                "measured_s": self.measured_s, "measured_runs_s": list(self.runs_s), "predicted_s": self.predicted_s,
                "error_pct": self.error_pct}


def thread_levels(cpus: int) -> list[int]:
    return sorted({*(2**i for i in range(cpus.bit_length()) if 2**i < cpus), cpus})


def cases(nodes: list[int], cpus: int) -> list[Case]:
    """DGEMV with serial and parallel first touch on every CPU, STREAM from 1, 2, 4 ... to every
    CPU, and with several nodes STREAM interleaved over all and bound to the first node."""
    out = [Case(f"dgemv init={init}", "dgemv", {**DGEMV, "threads": cpus, "init": init}) for init in ("serial", "parallel")]
    out += [Case(f"stream threads={t}", "stream", {**STREAM, "threads": t}) for t in thread_levels(cpus)]
    if len(nodes) > 1:
        out += [Case("stream interleave=all", "stream", {**STREAM, "threads": cpus}, "interleave=all"),
                Case(f"stream membind={nodes[0]}", "stream", {**STREAM, "threads": cpus}, f"membind={nodes[0]}")]
    return out


def kernel_argv(workload: str, resolved: dict[str, Any]) -> list[str]:
    """The C kernel's command line for the simulator's resolved parameters (defaults included)."""
    names, fixed = KERNEL_OPTIONS[workload]
    opts = {names[k]: v for k, v in resolved.items() if k in names} | fixed
    return [str(kernel(workload))] + [f"--{k}={v}" for k, v in sorted(opts.items())]


def run_case(case: Case, machine: str, repeat: int = 1) -> Outcome:
    """``repeat`` host runs (their median is the measurement: one run on a busy host can be far
    off) and one simulation (deterministic)."""
    from numalab.runner import sim
    from numalab.runner.host import check_placement

    spec = RunSpec.create(machine, DESCRIPTORS[case.workload], params=case.params).with_config(case.config)
    bound = spec.bind()
    check_placement(spec.placement)
    argv = kernel_argv(case.workload, dict(bound.workload["params"]))
    runs = []
    for _ in range(repeat):
        out = run_placed(argv, spec.placement, case.name)
        runs.append(float(out["init_s"]) + float(out["time_s"]))
    predicted = float(sim.run(bound).doc["time_s"])
    return Outcome(case, statistics.median(runs), predicted, tuple(runs))


def check(machine: str, nodes: list[int], cpus: int, step: Callable[[str], None], repeat: int = 1) -> list[Outcome]:
    results = []
    for c in cases(nodes, cpus):
        step(c.name)
        results.append(run_case(c, machine, repeat))
    return results
