"""Run the simulator: resolve workload, placement and settings, call the engine, and build the
result document (design/README.md §3.1)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from numalab import __version__
from numalab._core import Machine, simulate as _simulate
from numalab.exceptions import UsageError
from numalab.machine.bitmaps import parse_cpulist
from numalab.placement import PlacementOptions, parse_config, resolve as resolve_placement
from numalab.results.metrics import access_metrics
from numalab.results.result import SCHEMA, Result
from numalab.workload import descriptor

KERNELS = ("3.13", "6.13")


@dataclass(frozen=True)
class Settings:
    """Engine settings that are not placement: seed, sample rate, kernel profile, THP."""

    seed: int = 1
    sample_rate: float = 1.0
    kernel: str = "6.13"
    thp: bool | None = None  # None: as the descriptor says

    def check(self) -> None:
        if self.kernel not in KERNELS:
            raise UsageError(f"--kernel: '{self.kernel}' is not one of {', '.join(KERNELS)}")
        if not 0 < self.sample_rate <= 1:
            raise UsageError(f"--sample-rate must be in (0, 1], got {self.sample_rate}")
        if self.seed < 0:
            raise UsageError(f"--seed must be >= 0, got {self.seed}")


def _region_policies(workload: dict[str, Any], machine: Machine) -> None:
    """Per-region policies are written like config items (``interleave=all``)."""
    for r in workload["regions"]:
        text = r.get("policy")
        if not text:
            r["policy"] = None
            continue
        opts, params, _ = parse_config(text)
        if params or opts.cpunodebind or opts.physcpubind:
            raise UsageError(f"region '{r['name']}': policy '{text}' must be a memory policy only")
        engine, _doc = resolve_placement(opts, machine)
        r["policy"] = engine["policy"]


def run(
    machine: Machine,
    workload: str,
    params: dict[str, Any] | None = None,
    placement: PlacementOptions | None = None,
    settings: Settings | None = None,
) -> Result:
    settings = settings or Settings()
    settings.check()
    w = descriptor.resolve(workload, params or {})
    _region_policies(w, machine)
    if settings.thp is not None:
        for r in w["regions"]:
            r["thp"] = settings.thp
    engine_placement, placement_doc = resolve_placement(placement or PlacementOptions(), machine)
    _check_bound_threads(machine, engine_placement, int(w["threads"]))
    config = {"seed": settings.seed, "sample_rate": settings.sample_rate, "kernel": settings.kernel}
    out = json.loads(_simulate(machine, json.dumps(w), json.dumps(engine_placement), json.dumps(config)))
    return Result(_document(machine, w, placement_doc, settings, out))


def _check_bound_threads(machine: Machine, placement: dict[str, Any], threads: int) -> None:
    """With OpenMP binding, each thread needs a place of its own."""
    if placement["proc_bind"] == "false":
        return
    m = json.loads(machine.to_json())
    allowed = parse_cpulist(placement["cpus"]) if placement["cpus"] else {p["os_index"] for p in m["pus"]}
    kind = placement["places"]
    if kind == "threads":
        places = len(allowed)
    else:
        groups = m["cores"] if kind == "cores" else m["packages"]
        places = sum(1 for g in groups if allowed & parse_cpulist(g["cpuset"]))
    if threads > places:
        raise UsageError(
            f"{threads} threads cannot be bound one per place: OMP_PLACES={kind} gives {places} places "
            f"on the allowed CPUs (use fewer threads, finer places, or --omp-proc-bind=false)"
        )


def _document(machine: Machine, w: dict[str, Any], placement: dict[str, Any], s: Settings, out: dict[str, Any]) -> dict[str, Any]:
    m = json.loads(machine.to_json())
    nodes = [n["os_index"] for n in m["nodes"]]
    placement = dict(placement, balancing={"enabled": False})
    doc = {
        "schema": SCHEMA,
        "source": "sim",
        "status": out["status"],
        "error": out["error"],
        "machine": {"name": m["name"], "nodes": len(nodes), "cpus": len(m["pus"]), "distances": m["distances"]},
        "workload": {"name": w["name"], "params": w["params"]},
        "placement": placement,
        "kernel": s.kernel,
        "seed": s.seed,
        "time_s": out["time_s"],
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
    doc["metrics"] = access_metrics(out["access_map"], nodes)
    return doc
