"""Derived metrics, computed once from a result document (docs/architecture.md, "Result"):
access-map percentages, local/remote shares, per-node concentration, balancing figures and
speedup. The CLI, the report and the API all take them from here."""

from __future__ import annotations

from typing import Any


def access_map_percent(matrix: list[list[float]]) -> list[list[float]]:
    """Each cell as % of all DRAM accesses (all zeros when there were none)."""
    total = sum(sum(r) for r in matrix)
    return [[100.0 * v / total if total else 0.0 for v in row] for row in matrix]


def derived_metrics(doc: dict[str, Any]) -> dict[str, Any]:
    """Every metric a result document carries in ``metrics``."""
    am = doc["access_map"]
    return {**access_metrics(am["matrix"], am["nodes"]), **balancing_metrics(doc), "mapki": mapki(doc)}


def mapki(doc: dict[str, Any]) -> float | None:
    """Memory accesses per kilo-instruction: DRAM line transfers (the access map's total) per
    1000 instructions the workload executes (its descriptor's per-phase estimates,
    docs/workloads.md §4.4). The memory-intensity measure of study S1, which reads it from
    hardware counters (LLC misses per 1000 retired instructions). None without an instruction
    count (a measured program, a descriptor without estimates) or when no access reached DRAM."""
    instructions = (doc.get("workload") or {}).get("instructions")
    am = doc.get("access_map") or {}
    if not instructions or am.get("unit") != "dram_transfers_64b":
        return None
    total = sum(sum(r) for r in am["matrix"])
    return 1000.0 * total / instructions if total else None


def access_metrics(matrix: list[list[float]], nodes: list[int]) -> dict[str, Any]:
    """``local_pct``/``remote_pct`` of all DRAM accesses, and per memory node the share of
    accesses it served (``concentration_pct``) with its maximum."""
    total = sum(sum(r) for r in matrix)
    if total == 0:
        return {"local_pct": None, "remote_pct": None, "concentration_pct": {}, "max_concentration_pct": None}
    local = sum(matrix[i][i] for i in range(len(matrix)))
    conc = {f"node{n}": 100.0 * sum(r[j] for r in matrix) / total for j, n in enumerate(nodes)}
    return {
        "local_pct": 100.0 * local / total,
        "remote_pct": 100.0 * (total - local) / total,
        "concentration_pct": conc,
        "max_concentration_pct": max(conc.values()),
    }


def balancing_metrics(doc: dict[str, Any]) -> dict[str, Any]:
    """Automatic NUMA balancing: ``hint_fault_locality_pct`` = numa_hint_faults_local /
    numa_hint_faults (the kernel's convergence figure, docs/balancing.md) and
    ``balancing_cost_pct`` = thread time charged to scanning, hinting faults, migrations and
    NUMA task moves over all threads' run time. Both None when balancing is off."""
    bal = doc["placement"].get("balancing", {})
    if not (bal.get("enabled") or bal.get("numa_balancing")):  # numa_balancing = 2: the scanner runs too
        return {"hint_fault_locality_pct": None, "balancing_cost_pct": None}
    vm = doc["vmstat"]
    faults = vm["numa_hint_faults"]
    locality = 100.0 * vm["numa_hint_faults_local"] / faults if faults else None
    cost = doc.get("balancing_cost") or {}
    charged = sum(cost.values())
    run = sum(t["time_s"] for t in doc["threads"])
    return {"hint_fault_locality_pct": locality, "balancing_cost_pct": 100.0 * charged / run if run else None}


def speedup(baseline_time_s: float, time_s: float) -> float | None:
    """time(baseline) / time(config): above 1 is faster than the baseline."""
    if not baseline_time_s or not time_s:
        return None
    return baseline_time_s / time_s

