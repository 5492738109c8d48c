"""Options shared by the commands that place a workload (``sim``, ``compare``): numactl's
placement options, engine settings, and free-form workload parameters (``--class C``)."""

from __future__ import annotations

from typing import Any, Optional

import typer

from numalab.exceptions import UsageError
from numalab.placement import PlacementOptions
from numalab.runner.sim import Balancing, Settings, on_off

# Typer option declarations, reused by every placing command.
MACHINE = typer.Option(..., "--machine", "-m", help="Machine preset (numalab topo --list), preset .toml or hwloc .xml.")
WORKLOAD = typer.Option(..., "--workload", "-w", help="Workload name (numalab workloads) or a descriptor .toml file.")
INTERLEAVE = typer.Option(None, "--interleave", "-i", help="Interleave memory over NODES (numactl -i).")
WEIGHTED = typer.Option(None, "--weighted-interleave", help="Weighted interleave over NODES (numactl -w).")
WEIGHTS = typer.Option(None, "--weights", help="Weighted-interleave weights, e.g. 0:5,1:2 (default 1 each).")
MEMBIND = typer.Option(None, "--membind", help="Allocate only on NODES (numactl -m).")
PREFERRED = typer.Option(None, "--preferred", help="Prefer NODE, fall back by distance (numactl -p).")
PREFERRED_MANY = typer.Option(None, "--preferred-many", help="Prefer NODES, fall back elsewhere (numactl -P).")
LOCALALLOC = typer.Option(False, "--localalloc", help="Always allocate on the local node (numactl -l).")
CPUNODEBIND = typer.Option(None, "--cpunodebind", help="Run only on the CPUs of NODES (numactl -N).")
PHYSCPUBIND = typer.Option(None, "--physcpubind", help="Run only on CPUS (numactl -C).")
PROC_BIND = typer.Option("false", "--omp-proc-bind", help="OMP_PROC_BIND: false (unbound, the default), close, spread, primary.")
PLACES = typer.Option("cores", "--omp-places", help="OMP_PLACES: threads, cores, sockets.")
SEED = typer.Option(1, "--seed", help="Random seed (same inputs and seed: same output, bit for bit).")
SAMPLE_RATE = typer.Option(1.0, "--sample-rate", help="Fraction of page visits simulated (0 < r <= 1).")
KERNEL = typer.Option("6.13", "--kernel", help="Kernel rules to follow: 3.13 or 6.13.")
THP = typer.Option(None, "--thp", help="Transparent huge pages for every region: always or never (default: as the workload says).")
JSON = typer.Option(False, "--json", help="Print the result document(s) as JSON.")
BALANCING = typer.Option("off", "--balancing", help="Automatic NUMA balancing (kernel.numa_balancing): on or off (default off, as in numactl runs).")
SCAN_DELAY = typer.Option(None, "--scan-delay-ms", help="numa_balancing_scan_delay_ms: first scan of a process after this long (default 1000).")
SCAN_MIN = typer.Option(None, "--scan-period-min-ms", help="numa_balancing_scan_period_min_ms (default 1000).")
SCAN_MAX = typer.Option(None, "--scan-period-max-ms", help="numa_balancing_scan_period_max_ms (default 60000).")
SCAN_SIZE = typer.Option(None, "--scan-size-mb", help="numa_balancing_scan_size_mb: address space marked per scan (default 256).")
EXPLAIN = typer.Option(False, "--explain-balancing", help="Print a summary of every NUMA-balancing scan pass.")


def placement(
    interleave: Optional[str],
    weighted_interleave: Optional[str],
    weights: Optional[str],
    membind: Optional[str],
    preferred: Optional[str],
    preferred_many: Optional[str],
    localalloc: bool,
    cpunodebind: Optional[str],
    physcpubind: Optional[str],
    omp_proc_bind: str,
    omp_places: str,
) -> PlacementOptions:
    return PlacementOptions(
        interleave=interleave,
        weighted_interleave=weighted_interleave,
        membind=membind,
        preferred=preferred,
        preferred_many=preferred_many,
        localalloc=localalloc,
        cpunodebind=cpunodebind,
        physcpubind=physcpubind,
        omp_proc_bind=omp_proc_bind,
        omp_places=omp_places,
        weights=parse_weights(weights),
    )


def parse_weights(text: Optional[str]) -> dict[int, int]:
    if not text:
        return {}
    out = {}
    for item in text.split(","):
        node, sep, w = item.partition(":")
        if not sep or not node.strip().isdigit() or not w.strip().isdigit():
            raise UsageError(f"--weights: bad item '{item}' (expected NODE:WEIGHT, e.g. 0:5,1:2)")
        out[int(node)] = int(w)
    return out


def settings(
    seed: int,
    sample_rate: float,
    kernel: str,
    thp: Optional[str],
    balancing: str = "off",
    scan_delay_ms: Optional[int] = None,
    scan_period_min_ms: Optional[int] = None,
    scan_period_max_ms: Optional[int] = None,
    scan_size_mb: Optional[int] = None,
    explain: bool = False,
) -> Settings:
    if thp not in (None, "always", "never"):
        raise UsageError(f"--thp: '{thp}' is not one of always, never")
    knobs = {
        "scan_delay_ms": scan_delay_ms,
        "scan_period_min_ms": scan_period_min_ms,
        "scan_period_max_ms": scan_period_max_ms,
        "scan_size_mb": scan_size_mb,
    }
    bal = Balancing(enabled=on_off(balancing, "--balancing"), explain=explain, **{k: v for k, v in knobs.items() if v is not None})
    return Settings(seed=seed, sample_rate=sample_rate, kernel=kernel, thp=None if thp is None else thp == "always", balancing=bal)


def workload_params(extra: list[str]) -> dict[str, Any]:
    """``--class C --threads 64 --init=serial`` -> {"class": "C", "threads": "64", "init": "serial"}."""
    out: dict[str, Any] = {}
    i = 0
    while i < len(extra):
        arg = extra[i]
        if not arg.startswith("--"):
            raise UsageError(f"unexpected argument '{arg}' (workload parameters are given as --name value)")
        key, eq, value = arg[2:].partition("=")
        if not eq:
            if i + 1 >= len(extra) or extra[i + 1].startswith("--"):
                raise UsageError(f"workload parameter --{key} needs a value")
            value = extra[i + 1]
            i += 1
        out[key.replace("-", "_")] = value
        i += 1
    return out
