"""The numbers of a calibration, from the raw document's kernel outputs (no I/O).

Every figure is the median of its samples with the lowest and highest sample as its range: the
samples are the chase's repetitions (``ns_per_load``) and the STREAM processes (``gbps``).

On CPU time where the kernel reports it (``cpu_ns_per_load``, ``cpu_s``: kernels/timing.h
``cpu_now_s``): the wall time of a run on a busy host also counts the time other programs held
its CPUs, which would calibrate the machine as slower than it is; its CPU time does not. On an
idle host the two agree. Outputs without them (older captures) count on wall time."""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import Any

#: Bytes one load of a cache line moves (x86-64 line size), for Little's law.
LINE_BYTES = 64

#: DRAM lines per line STREAM counts, as the model charges them: the triad's store also reads its
#: line first (write-allocate: 4 lines per 3 counted), a write-only loop reads and writes each line
#: (2 per 1); a written line costs as a read line (docs/contention.md §9).
LINES_PER_COUNTED = {"read": 1.0, "triad": 4.0 / 3.0, "write": 2.0}

#: Dependent adds per line of the read-only loop (kernels/stream.c --mode read, `omp simd` at
#: -march=x86-64: one `addpd` of two doubles into one accumulator per 16 B).
READ_ADDS_PER_LINE = LINE_BYTES // 16

#: Instructions per line of the read-only loop (kernels/stream.c --mode read as gcc 12 compiles it
#: at -O2 -march=x86-64, `objdump -d kernels/stream`, main._omp_fn.1: `movupd`, `add`, `addpd`,
#: `cmp`, `jne` per 16 B): 5 x 4.
READ_INSTRUCTIONS_PER_LINE = 5 * (LINE_BYTES // 16)

#: kernels/window's points at the smallest nop counts, all far inside any current core's window:
#: their median is the time of a pair of loads that overlap (one memory latency).
WINDOW_BASE_POINTS = 8
#: A pair of loads that no longer overlap takes two latencies; the knee is where the time crosses
#: half way, 1.5 times the overlapped pair's, and stays there for WINDOW_RUN points (one disturbed
#: sample does not make a knee).
WINDOW_KNEE_FACTOR = 1.5
WINDOW_RUN = 3


@dataclass(frozen=True)
class Figure:
    value: float  # median of the samples
    low: float
    high: float
    samples: int

    def as_json(self) -> dict[str, float | int]:
        return {"median": self.value, "low": self.low, "high": self.high, "samples": self.samples}


def figure(samples: list[float]) -> Figure:
    if not samples:
        raise ValueError("a figure needs at least one sample")
    bad = [x for x in samples if not (isinstance(x, (int, float)) and math.isfinite(x) and x > 0)]
    if bad:
        raise ValueError(f"a kernel output holds {bad[0]!r} where a positive time or bandwidth belongs")
    return Figure(statistics.median(samples), min(samples), max(samples), len(samples))


def chase_ns(out: dict[str, Any]) -> list[float]:
    """The chase's ns per load per repetition: on CPU time where reported (one thread)."""
    return list(out.get("cpu_ns_per_load") or out["ns_per_load"])


def stream_gbps(out: dict[str, Any]) -> float:
    """A STREAM process's GB/s over its loop's CPU time per thread where reported, else wall."""
    cpu = out.get("cpu_s")
    if cpu is None:
        return float(out["gbps"])
    if not (isinstance(cpu, (int, float)) and math.isfinite(cpu) and cpu > 0):
        raise ValueError(f"a kernel output holds {cpu!r} where a positive time or bandwidth belongs")
    return float(out["gbps"]) * float(out["time_s"]) * int(out["threads"]) / cpu


def add_latency(runs: list[dict[str, Any]]) -> Figure | None:
    """ns per dependent add: the in-cache read-only loop's time (CPU time where reported) per
    ``addpd``, one per 16 B; None when the document has no such run (older captures)."""
    samples = []
    for r in runs:
        if r["kind"] == "add":
            out = r["output"]
            secs = out.get("cpu_s") or out["time_s"]
            samples.append(float(secs) * 1e9 / (int(out["n"]) * int(out["reps"]) / 2))
    return figure(samples) if samples else None


def clock_ghz(runs: list[dict[str, Any]]) -> Figure | None:
    """The core clock in GHz: one over the ns per add of kernels/clock's dependent chain of
    integer adds, one cycle each (CPU time where reported), a sample per repetition; None when the
    document has no such run (older captures)."""
    samples = []
    for r in runs:
        if r["kind"] == "clock":
            out = r["output"]
            for ns in out.get("cpu_ns_per_add") or out["ns_per_add"]:
                if not (isinstance(ns, (int, float)) and math.isfinite(ns) and ns > 0):
                    raise ValueError(f"a kernel output holds {ns!r} where a positive time per add belongs")
                samples.append(1.0 / float(ns))
    return figure(samples) if samples else None


def window_knee(nops: list[int], ns: list[float]) -> float | None:
    """One sweep of kernels/window: the instructions from the first chase's load to the second's
    (N nops and the load, N + 1) at the first nop count N whose pair takes 1.5 times the
    overlapped pair's time, as do the next ones (``WINDOW_RUN`` points); None without a knee."""
    if len(ns) != len(nops) or len(ns) < WINDOW_BASE_POINTS + WINDOW_RUN:
        raise ValueError(f"a window sweep has {len(ns)} times for {len(nops)} nop counts; "
                         f"at least {WINDOW_BASE_POINTS + WINDOW_RUN} of each are needed")
    bad = [x for x in ns if not (isinstance(x, (int, float)) and math.isfinite(x) and x > 0)]
    if bad:
        raise ValueError(f"a kernel output holds {bad[0]!r} where a positive time per load pair belongs")
    limit = WINDOW_KNEE_FACTOR * statistics.median(ns[:WINDOW_BASE_POINTS])
    for k in range(WINDOW_BASE_POINTS, len(ns) - WINDOW_RUN + 1):
        if all(x > limit for x in ns[k:k + WINDOW_RUN]):
            return float(nops[k] + 1)
    return None


def window(runs: list[dict[str, Any]]) -> Figure | None:
    """The core's instruction window: one knee per sweep of kernels/window (CPU time where
    reported); None when the document has no such run (older captures) or no sweep has a knee."""
    samples = []
    for r in runs:
        if r["kind"] == "window":
            out = r["output"]
            for sweep in out.get("cpu_ns_per_pair") or out["ns_per_pair"]:
                knee = window_knee(list(out["nops"]), list(sweep))
                if knee is not None:
                    samples.append(knee)
    return figure(samples) if samples else None


def memory_gbps(read_gbps: float, add_ns: float | None) -> float:
    """The read-only loop's bandwidth without its reduction chain: its time per line less the
    ``READ_ADDS_PER_LINE`` dependent adds, which do not overlap the line's memory time
    (docs/contention.md §4). Uncorrected when the chain would take most of the line (the
    in-cache figure then is not a chain's)."""
    line_ns = LINE_BYTES / read_gbps
    mem_ns = line_ns - READ_ADDS_PER_LINE * (add_ns or 0.0)
    return LINE_BYTES / mem_ns if mem_ns >= 0.25 * line_ns else read_gbps


def latencies(runs: list[dict[str, Any]]) -> dict[tuple[int, int, str], Figure]:
    """(CPU node, memory node, pages "4k"/"2m") -> ns per dependent load. A run that asked for
    2 MiB pages and got none (THP "never", or no THP in the kernel: the chase's ``anon_huge_kib``
    is 0) counts as a 4 KiB run."""
    samples: dict[tuple[int, int, str], list[float]] = {}
    for r in runs:
        if r["kind"] == "latency":
            pages = "4k" if r["output"].get("anon_huge_kib", 1) == 0 else r["pages"]
            samples.setdefault((r["cpu_node"], r["mem_node"], pages), []).extend(chase_ns(r["output"]))
    return {k: figure(v) for k, v in sorted(samples.items())}


def bandwidths(runs: list[dict[str, Any]]) -> dict[tuple[int, int, str, int], Figure]:
    """(CPU node, memory node, mode, threads) -> GB/s (STREAM's byte counting)."""
    samples: dict[tuple[int, int, str, int], list[float]] = {}
    for r in runs:
        if r["kind"] == "bandwidth":
            samples.setdefault((r["cpu_node"], r["mem_node"], r["mode"], r["threads"]), []).append(stream_gbps(r["output"]))
    return {k: figure(v) for k, v in sorted(samples.items())}


@dataclass(frozen=True)
class LoadedPoint:
    load_threads: int
    load_gbps: float  # the STREAM load's median bandwidth (0 with no load)
    latency: Figure  # the probe's ns per load meanwhile


def loaded(runs: list[dict[str, Any]]) -> dict[int, list[LoadedPoint]]:
    """Memory node -> the probe's latency at each load level, by rising load."""
    probe: dict[tuple[int, int], list[float]] = {}
    load: dict[tuple[int, int], list[float]] = {}
    for r in runs:
        if r["kind"] == "loaded":
            key = (r["mem_node"], r["load_threads"])
            probe.setdefault(key, []).extend(chase_ns(r["probe"]))
            load.setdefault(key, []).append(stream_gbps(r["load"]) if r.get("load") else 0.0)
    out: dict[int, list[LoadedPoint]] = {}
    for (m, k), ns in sorted(probe.items()):
        out.setdefault(m, []).append(LoadedPoint(k, statistics.median(load[(m, k)]), figure(ns)))
    return out


def idle_latency(lat: dict[tuple[int, int, str], Figure], cpu: int, mem: int) -> tuple[Figure, str] | None:
    """The pair's idle latency: with 2 MiB pages when measured (few TLB misses, as the model's
    latency means), else with 4 KiB pages."""
    for pages in ("2m", "4k"):
        if (cpu, mem, pages) in lat:
            return lat[(cpu, mem, pages)], pages
    return None


def curve(points: list[LoadedPoint], node_gbps: float) -> list[tuple[float, float]]:
    """``[utilisation, latency / idle]`` from the loaded points: utilisation is the load's bandwidth
    plus the probe's own (one line per load) over the node's bandwidth, capped at 1; the factor is
    relative to the point with no load, at least 1 (a lower reading is noise: the model's curve
    never goes below idle). Starts at ``[0, 1]``; utilisation rises."""
    if not points:
        return [(0.0, 1.0)]
    idle = points[0].latency.value
    out = [(0.0, 1.0)]
    for p in points[1:]:
        probe_gbps = LINE_BYTES / p.latency.value  # bytes per ns = GB/s
        u = min(1.0, (p.load_gbps + probe_gbps) / node_gbps)
        f = max(1.0, p.latency.value / idle)
        if u > out[-1][0]:
            out.append((u, max(f, out[-1][1])))
    return out


def loaded_latency_at(points: list[LoadedPoint], gbps: float) -> float:
    """The probe's latency at a load of ``gbps``: linear between the measured loads, flat beyond."""
    xs = [(p.load_gbps, p.latency.value) for p in points]
    if gbps <= xs[0][0]:
        return xs[0][1]
    for (x0, y0), (x1, y1) in zip(xs, xs[1:]):
        if x0 <= gbps <= x1 and x1 > x0:
            return y0 + (y1 - y0) * (gbps - x0) / (x1 - x0)
    return xs[-1][1]


def concurrency(one_core_gbps: float, latency_ns: float) -> float:
    """Little's law: lines in flight = bandwidth x latency / line size (GB/s x ns = bytes)."""
    return one_core_gbps * latency_ns / LINE_BYTES
