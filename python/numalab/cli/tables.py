"""Plain-text tables for the terminal: access maps with per-node totals, summaries."""

from __future__ import annotations

from typing import Any

MIB = 1 << 20


def access_map_lines(doc: dict[str, Any], title: str | None = None) -> list[str]:
    """The access map in % of all DRAM accesses, rows CPU node, columns memory node, with row
    totals and a last row of per-memory-node totals (the concentration)."""
    am = doc["access_map"]
    nodes, m = am["nodes"], am["matrix"]
    total = sum(sum(r) for r in m) or 1
    w = 6
    corner = "cpu\\mem"
    head = f"{corner:>8}" + "".join(f"{'n' + str(n):>{w}}" for n in nodes) + f"{'total':>{w + 1}}"
    out = [title] if title else []
    out.append(head)
    for n, row in zip(nodes, m):
        cells = "".join(f"{100 * v / total:{w}.1f}" for v in row)
        out.append(f"{'n' + str(n):>8}{cells}{100 * sum(row) / total:{w + 1}.1f}")
    cols = [100 * sum(r[j] for r in m) / total for j in range(len(nodes))]
    out.append(f"{'total':>8}" + "".join(f"{c:{w}.1f}" for c in cols) + f"{100.0 if total else 0:{w + 1}.1f}")
    return out


def describe_placement(p: dict[str, Any]) -> str:
    s = p["policy"] + (f":{p['nodes']}" if p.get("nodes") else "")
    if p.get("cpubind"):
        s += f", cpus {p['cpubind']}"
    if p.get("omp_proc_bind") and p["omp_proc_bind"] != "false":
        s += f", OMP_PROC_BIND={p['omp_proc_bind']} OMP_PLACES={p['omp_places']}"
    return s


def summary(doc: dict[str, Any]) -> str:
    w = doc["workload"]
    params = ", ".join(f"{k}={v}" for k, v in w["params"].items())
    met = doc["metrics"]
    lines = [
        f"{w['name']} ({params}) on {doc['machine']['name']}: {describe_placement(doc['placement'])}; kernel {doc['kernel']}, seed {doc['seed']}",
        f"status: {doc['status']}" + (f" ({doc['error']})" if doc["error"] else "") + f"    time: {doc['time_s']:.4f} s",
    ]
    if met["local_pct"] is not None:
        lines.append(
            f"DRAM accesses: {met['local_pct']:.1f}% local, {met['remote_pct']:.1f}% remote; "
            f"busiest memory node serves {met['max_concentration_pct']:.1f}%"
        )
    page = doc["pages"]["page_size_bytes"]
    nodes = doc["access_map"]["nodes"]
    lines.append("memory per node (MiB): " + "  ".join(f"n{n} {p * page / MIB:.0f}" for n, p in zip(nodes, doc["pages"]["per_node"])))
    lines.append("")
    lines += access_map_lines(doc, "access map (% of all DRAM accesses; rows: CPU node, columns: memory node)")
    lines.append("")
    lines.append("numastat (allocations):")
    keys = ["numa_hit", "numa_miss", "numa_foreign", "interleave_hit", "local_node", "other_node"]
    lines.append(f"{'':16}" + "".join(f"{n:>16}" for n in doc["numastat"]))
    for k in keys:
        lines.append(f"{k:16}" + "".join(f"{v[k]:>16}" for v in doc["numastat"].values()))
    if doc["placement"].get("balancing", {}).get("enabled"):
        lines.append("")
        lines += balancing_lines(doc)
    if doc.get("balancing_passes") is not None:
        lines.append("")
        lines += pass_lines(doc["balancing_passes"])
    return "\n".join(lines)


VMSTAT_KEYS = (
    "numa_pte_updates",
    "numa_huge_pte_updates",
    "numa_hint_faults",
    "numa_hint_faults_local",
    "numa_pages_migrated",
    "pgmigrate_success",
    "pgmigrate_fail",
)


def balancing_lines(doc: dict[str, Any]) -> list[str]:
    """Automatic NUMA balancing: its knobs, the vmstat counters and the derived figures."""
    b, met = doc["placement"]["balancing"], doc["metrics"]
    loc = f"{met['hint_fault_locality_pct']:.1f}%" if met["hint_fault_locality_pct"] is not None else "-"
    cost = f"{met['balancing_cost_pct']:.2f}%" if met["balancing_cost_pct"] is not None else "-"
    lines = [
        f"automatic NUMA balancing (kernel {b['kernel']}): scan delay {b['scan_delay_ms']} ms, period "
        f"{b['scan_period_min_ms']}-{b['scan_period_max_ms']} ms, size {b['scan_size_mb']} MB",
        f"hint-fault locality {loc}; balancing work {cost} of thread time",
        "vmstat:",
    ]
    lines += [f"  {k:24}{doc['vmstat'][k]:>14}" for k in VMSTAT_KEYS]
    return lines


def pass_lines(passes: list[dict[str, Any]]) -> list[str]:
    """One row per completed scan pass (``--explain-balancing``)."""
    head = f"{'pid':>4}{'pass':>6}{'t_s':>9}{'period_ms':>11}{'windows':>9}{'marked':>10}{'flt_local':>11}{'flt_remote':>12}{'migrated':>10}{'moves':>7}"
    lines = ["scan passes (faults and migrations during each pass):", head]
    for p in passes:
        lines.append(
            f"{p['pid']:>4}{p['pass']:>6}{p['t_s']:>9.3f}{p['period_ms']:>11}{p['windows']:>9}{p['pages_marked']:>10}"
            f"{p['faults_local']:>11}{p['faults_remote']:>12}{p['pages_migrated']:>10}{p['task_moves']:>7}"
        )
    if not passes:
        lines.append("  (no pass completed: the run ended before the scanner covered the address space)")
    return lines
