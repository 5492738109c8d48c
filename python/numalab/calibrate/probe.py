"""The latency-balanced policy on a real host (``numalab run --policy latency-balanced``,
docs/measure.md §6): before the command starts, a short pointer chase on memory bound to each
node, run on one of that node's CPUs, measures the node's loaded latency now; the nodes are
balanced when max - min is below the threshold, and the command gets a preferred-node policy
(``--preferred``) on the node it would start on when balanced, on the lowest-latency node
otherwise (the simulator's rule, docs/allocation.md §12). It decides once, at start."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from statistics import median
from typing import Any

from numalab.calibrate.measure import kernel, run_bound
from numalab.exceptions import NumalabError, UsageError
from numalab.spec import Placement

#: A buffer well past a server's last-level cache (so loads reach DRAM) that a few ms of loads
#: sample; its first writes take most of the probe's time.
PROBE_MIB = 64
#: Dependent loads per repetition: at 70-150 ns each, 1.5-3 ms.
PROBE_LOADS = 20_000
PROBE_REPS = 3


def _cpulist(text: str) -> list[int]:
    from numalab.machine.bitmaps import parse_cpulist

    return sorted(parse_cpulist(text.strip())) if text.strip() else []


def nodes_with_cpus_and_memory(root: Path = Path("/")) -> dict[int, list[int]]:
    """Node -> the CPUs of that node this process may run on, for nodes with memory this process
    may use (sysfs ``has_memory``, ``cpulist``; its affinity and ``Mems_allowed``)."""
    from numalab.calibrate.measure import allowed_mems

    base = root / "sys/devices/system/node"
    try:
        with_memory = set(_cpulist((base / "has_memory").read_text()))
    except OSError:
        with_memory = {0}
    mems = allowed_mems(root) or with_memory
    allowed = set(os.sched_getaffinity(0))
    out: dict[int, list[int]] = {}
    for node in sorted(with_memory & mems):
        try:
            cpus = [c for c in _cpulist((base / f"node{node}/cpulist").read_text()) if c in allowed]
        except OSError:
            cpus = sorted(allowed) if node == 0 else []
        if cpus:
            out[node] = cpus
    if not out:
        raise UsageError("--policy latency-balanced: no node has both memory and a CPU this process may use")
    return out


def start_node(nodes: dict[int, list[int]]) -> int:
    """The node the command would start on: that of the first CPU it may run on (the agent
    starts it unbound, where the launching process runs)."""
    first = min(c for cpus in nodes.values() for c in cpus)
    return next(n for n, cpus in nodes.items() if first in cpus)


def probe(nodes: dict[int, list[int]]) -> dict[int, float]:
    """Node -> median ns per dependent load of a short chase on its memory from its first CPU."""
    argv = [str(kernel("chase")), "--size-mib", str(PROBE_MIB), "--loads", str(PROBE_LOADS), "--reps", str(PROBE_REPS)]
    out: dict[int, float] = {}
    for node, cpus in nodes.items():
        res = run_bound(argv, cpus[:1], node, f"latency probe of node {node}")
        try:
            out[node] = float(median(res["ns_per_load"]))
        except (KeyError, TypeError, ValueError):
            raise NumalabError(f"--policy latency-balanced: the probe of node {node} gave no ns_per_load") from None
    return out


def choose(latency_ns: dict[int, float], current: int, threshold_ns: float) -> tuple[int, bool]:
    """(node, balanced): the current node when max - min is below the threshold, else the
    lowest-latency node (the lower number on ties)."""
    spread = max(latency_ns.values()) - min(latency_ns.values())
    if spread < threshold_ns:
        return current, True
    return min(latency_ns, key=lambda n: (latency_ns[n], n)), False


def resolve(placement: Placement, threshold_ns: float) -> tuple[Placement, dict[str, Any]]:
    """The placement the command runs under (``preferred`` on the chosen node) and the record of
    the decision for the result document."""
    nodes = nodes_with_cpus_and_memory()
    current = start_node(nodes)
    latency = probe(nodes)
    node, balanced = choose(latency, current, threshold_ns)
    record = {
        "policy": "latency-balanced",
        "probe_ns": {str(n): round(v, 2) for n, v in sorted(latency.items())},
        "threshold_ns": threshold_ns,
        "start_node": current,
        "balanced": balanced,
        "node": node,
        "applied": f"--preferred={node}",
        "decided": "once, before the command starts",
    }
    return replace(placement, policy="preferred", nodes=str(node)), record
