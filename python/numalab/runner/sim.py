"""Run the simulator on a ``RunSpec`` and build the result document (``numalab.result/1``,
docs/architecture.md)."""

from __future__ import annotations

from typing import Any

from numalab._core import __version__
from numalab.results.metrics import derived_metrics
from numalab.results.result import SCHEMA, Result
from numalab.spec import BoundRun, RunSpec


def run(spec: RunSpec | BoundRun) -> Result:
    bound = spec.bind() if isinstance(spec, RunSpec) else spec
    if not isinstance(bound, BoundRun):  # a co-run (RunSpec.corun)
        from numalab.runner import corun

        return corun.run(bound, document, run)
    out = bound.engine.simulate()
    return Result(document(bound, out))


def document(bound: BoundRun, out: dict[str, Any]) -> dict[str, Any]:
    s, m, w = bound.spec, bound.machine, bound.workload
    nodes = m.node_os_indexes
    placement = dict(bound.engine.placement_doc(), balancing=s.balancing.describe(s.kernel))
    doc = {
        "schema": SCHEMA,
        "source": "sim",
        "status": out["status"],
        "error": out["error"],
        "machine": {"name": m.name, "nodes": len(nodes), "cpus": m.nr_pus, "distances": m.distances},
        "workload": workload_doc(w),
        "placement": placement,
        "kernel": s.kernel,
        "seed": s.seed,
        "time_s": out["time_s"],
        # What the program prints as its time: its timed steps, or the whole run (docs/workloads.md §1.2).
        "reported_time_s": out["reported_time_s"],
        "reported_time_source": out["reported_time_source"],
        "processes": [dict(p, alone_time_s=None) for p in out["processes"]],
        "threads": out["threads"],
        "pages": {"per_node": out["pages_per_node"], "page_size_bytes": out["page_size_bytes"]},
        "access_map": {
            "basis": "model",
            "unit": "dram_transfers_64b",
            "rows": "cpu_node",
            "cols": "memory_node",
            "nodes": nodes,
            "matrix": out["access_map"],
        },
        "numastat": out["numastat"],
        "vmstat": out["vmstat"],
        "timeline": out["timeline"],
        "engine": dict(out["engine"], numalab_version=__version__),
    }
    if s.balancing.scanning:
        doc["balancing_cost"] = out["balancing_cost"]
    if out.get("memory_tiers"):
        doc["memory_tiers"] = out["memory_tiers"]
    if s.balancing.explain:
        doc["balancing_passes"] = out.get("balancing_passes", [])
    if s.explain_sched:
        doc["sched_events"] = out.get("sched_events", [])
        doc["sched_cpus"] = out.get("sched_cpus", [])
        if out.get("sched_host_main_loop"):
            doc["sched_host_main_loop"] = out["sched_host_main_loop"]
        if out.get("sched_host_others_s"):
            doc["sched_host_others_s"] = out["sched_host_others_s"]
        if out.get("sched_host_idle"):
            doc["sched_host_idle"] = out["sched_host_idle"]
        if out.get("sched_wake_chain"):
            doc["sched_wake_chain"] = out["sched_wake_chain"]
        if out.get("sched_host_spells"):
            doc["sched_host_spells"] = out["sched_host_spells"]
        if out.get("sched_rq"):
            doc["sched_rq"] = out["sched_rq"]
    if out.get("thp"):
        doc["thp"] = thp_doc(s, nodes, out["thp"])
    if out.get("alloc"):
        doc["alloc"] = alloc_doc(nodes, out["alloc"])
    if out.get("latency_balanced"):
        doc["latency_balanced"] = out["latency_balanced"]
    doc["metrics"] = derived_metrics(doc)
    return doc


def workload_doc(w: dict[str, Any]) -> dict[str, Any]:
    """The workload's name and parameters, the release it follows (NPB) and the instructions it
    executes, all processes together (None when a phase gives no estimate), for MAPKI."""
    from numalab.workload.descriptor import total_instructions

    out: dict[str, Any] = {"name": w["name"], "params": w["params"]}
    if w.get("version"):
        out["version"] = w["version"]
    out["instructions"] = total_instructions(w)
    return out


def thp_doc(s: Any, nodes: list[int], regions: list[dict[str, Any]]) -> dict[str, Any]:
    """Transparent huge pages: the mode in force and, per region with huge pages, the 2 MiB
    ranges first-touch faults placed as huge pages, those that fell back to 4 KiB pages and
    those khugepaged collapsed, by node (docs/allocation.md §3.2)."""
    from numalab.spec.run import THP_DEFAULT

    def by_node(v: list[int]) -> dict[str, int]:
        return {f"node{n}": c for n, c in zip(nodes, v) if c}

    return {
        "enabled": s.thp or THP_DEFAULT.get(s.kernel, "madvise"),
        "default": s.thp is None,
        "regions": [
            {"pid": r["pid"], "region": r["region"], "fault_alloc": by_node(r["fault_alloc"]),
             "fault_fallback": by_node(r["fault_fallback"]), "collapse_alloc": by_node(r["collapse_alloc"]),
             "collapse_alloc_failed": r["collapse_alloc_failed"]}
            for r in regions
        ],
    }


def alloc_doc(nodes: list[int], regions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per region allocated through the C library: its chunks, and the pages each thread wrote
    while allocating, by node (docs/allocation.md §3.5)."""
    return [
        dict(r, touched=[dict(t, per_node={f"node{n}": c for n, c in zip(nodes, t["per_node"]) if c}) for t in r["touched"]])
        for r in regions
    ]
