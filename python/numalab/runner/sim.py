"""Run the simulator: resolve workload, placement and settings, call the engine, and build the
result document (design/README.md §3.1)."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from numalab import __version__
from numalab._core import Machine, simulate as _simulate
from numalab.exceptions import UsageError
from numalab.machine.bitmaps import parse_cpulist
from numalab.placement import PlacementOptions, parse_config, resolve as resolve_placement
from numalab.results.metrics import access_metrics, balancing_metrics
from numalab.results.result import SCHEMA, Result
from numalab.workload import descriptor

KERNELS = ("3.13", "6.13")


# The scanner knobs with the kernel's names and defaults (linux-numa.md §4.1).
BALANCING_KNOBS = {"scan_delay_ms": 1000, "scan_period_min_ms": 1000, "scan_period_max_ms": 60000, "scan_size_mb": 256}


@dataclass(frozen=True)
class Balancing:
    """Automatic NUMA balancing: ``kernel.numa_balancing`` and its scan knobs. Off by default,
    as in numactl runs; ``explain`` records a summary of every scan pass."""

    enabled: bool = False
    scan_delay_ms: int = 1000
    scan_period_min_ms: int = 1000
    scan_period_max_ms: int = 60000
    scan_size_mb: int = 256
    explain: bool = False

    def check(self) -> None:
        for name in BALANCING_KNOBS:
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise UsageError(f"--{name.replace('_', '-')} must be a whole number >= 0, got {value!r}")
        if self.scan_size_mb < 1:
            raise UsageError(f"--scan-size-mb must be at least 1, got {self.scan_size_mb}")
        changed = [n for n, d in BALANCING_KNOBS.items() if getattr(self, n) != d]
        if not self.enabled and (changed or self.explain):
            what = "--explain-balancing" if not changed else f"--{changed[0].replace('_', '-')}"
            raise UsageError(f"{what} needs --balancing on")

    def engine(self) -> dict[str, Any]:
        return asdict(self)

    def describe(self, kernel: str) -> dict[str, Any]:
        """The result document's ``placement.balancing``."""
        if not self.enabled:
            return {"enabled": False}
        return {"enabled": True, "kernel": kernel, **{n: getattr(self, n) for n in BALANCING_KNOBS}}


@dataclass(frozen=True)
class Settings:
    """Engine settings that are not placement: seed, sample rate, kernel profile, THP, balancing."""

    seed: int = 1
    sample_rate: float = 1.0
    kernel: str = "6.13"
    thp: bool | None = None  # None: as the descriptor says
    balancing: Balancing = field(default_factory=Balancing)

    def check(self) -> None:
        if self.kernel not in KERNELS:
            raise UsageError(f"--kernel: '{self.kernel}' is not one of {', '.join(KERNELS)}")
        if not 0 < self.sample_rate <= 1:
            raise UsageError(f"--sample-rate must be in (0, 1], got {self.sample_rate}")
        if self.seed < 0:
            raise UsageError(f"--seed must be >= 0, got {self.seed}")
        balancing = self.balancing if isinstance(self.balancing, Balancing) else Balancing(**self.balancing)
        balancing.check()


TIERING_KNOBS = ("hot-threshold-ms", "promote-rate-limit-mbps")


def on_off(value: str, what: str) -> bool:
    v = value.strip().lower()
    if v in ("on", "true", "yes", "1"):
        return True
    if v in ("off", "false", "no", "0"):
        return False
    raise UsageError(f"{what}: '{value}' is not on or off")


def whole(value: str, what: str) -> int:
    try:
        n = int(value.strip())
    except ValueError:
        raise UsageError(f"{what}: '{value}' is not a whole number") from None
    if n < 0:
        raise UsageError(f"{what}: must be >= 0, got {n}")
    return n


def apply_items(s: Settings, items: dict[str, str], where: str) -> Settings:
    """Settings written as config items (``balancing:scan-size-mb=128:kernel=3.13``) on top of
    ``s``; ``where`` names the config in errors."""
    bal = s.balancing if isinstance(s.balancing, Balancing) else Balancing(**s.balancing)
    for key, value in items.items():
        name = key.replace("-", "_")
        if key == "kernel":
            s = replace(s, kernel=value)
        elif key == "thp":
            s = replace(s, thp=value in ("on", "always"))
        elif key == "balancing":
            bal = replace(bal, enabled=on_off(value, f"{where}: balancing"))
        elif name in BALANCING_KNOBS:
            bal = replace(bal, **{name: whole(value, f"{where}: {key}")})
        elif key in TIERING_KNOBS:
            raise UsageError(f"{where}: '{key}' is a memory-tiering knob (numa_balancing=2), which the simulator does not model")
        else:
            raise UsageError(f"{where}: '{key}' is not available in the simulator yet")
    return replace(s, balancing=bal)


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
    balancing = settings.balancing if isinstance(settings.balancing, Balancing) else Balancing(**settings.balancing)
    config = {"seed": settings.seed, "sample_rate": settings.sample_rate, "kernel": settings.kernel, "balancing": balancing.engine()}
    out = json.loads(_simulate(machine, json.dumps(w), json.dumps(engine_placement), json.dumps(config)))
    return Result(_document(machine, w, placement_doc, settings, balancing, out))


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


def _document(
    machine: Machine, w: dict[str, Any], placement: dict[str, Any], s: Settings, balancing: Balancing, out: dict[str, Any]
) -> dict[str, Any]:
    m = json.loads(machine.to_json())
    nodes = [n["os_index"] for n in m["nodes"]]
    placement = dict(placement, balancing=balancing.describe(s.kernel))
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
    if balancing.enabled:
        doc["balancing_cost"] = out["balancing_cost"]
    if balancing.explain:
        doc["balancing_passes"] = out.get("balancing_passes", [])
    doc["metrics"] = {**access_metrics(out["access_map"], nodes), **balancing_metrics(doc)}
    return doc
