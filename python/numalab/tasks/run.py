"""Run the task-graph simulator and make its result document (``numalab.taskgraph/1``).

``simulate(machine, graph, balancer, settings)`` runs one balancer on one graph;
``migration_cost(machine, objects, state_bytes)`` times the migration of ``objects`` objects
of ``state_bytes`` each from PE 0 to one PE of every distance class (same node, then each other
node), the first of study S3's migration-cost experiments. Both return a plain dict whose
``time_s`` and ``metrics`` become the results store's columns (results/derived.py).
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from typing import Any

from numalab.exceptions import UsageError
from numalab.tasks import balancers as lb
from numalab.tasks.graphs import GraphSpec, build, coerce

SCHEMA = "numalab.taskgraph/1"
COMM_LAYERS = ("shm", "net")
#: The LB database's timers (Charm++'s default wall clock; +LBUseCpuTime: CPU time).
LB_TIMERS = ("wall", "cpu")
CLASSES = ("same_pe", "same_node", "remote")
#: Study S3's setting (Pilla et al.'s scripts): 50 steps, balancing every 10.
DEFAULT_ITERATIONS = 50
DEFAULT_LB_PERIOD = 10
MIGRATE = "migrate"  # the migration-cost experiment, in study files where a graph goes
#: The simulator's own parameters (crates/numalab-tasks/src/platform.rs ``CostParams``,
#: simulate.rs ``load_noise``): name -> (minimum, maximum or None). Unset ones keep the core's
#: defaults, which docs/taskgraph.md §1 lists with their sources.
SIM_PARAMS: dict[str, tuple[float, float | None]] = {
    "shm_msg_ns": (0.0, None),
    "net_dgram_ns": (0.0, None),
    "net_dgram_bytes": (1.0, None),
    "net_window": (2.0, None),
    "migration_fixed_ns": (0.0, None),
    "strategy_op_ns": (0.0, None),
    "metis_unit_ns": (0.0, None),
    "scotch_unit_ns": (0.0, None),
    "load_noise": (0.0, 1.0),
}


@dataclass(frozen=True)
class Settings:
    """How the graph runs: iterations, balancing period (0: never), communication layer, PEs
    (None: one per core of the machine), the seed of the graph generator, the load noise, the
    measurement noise and the randomised balancers, the simulator parameters given
    (``SIM_PARAMS``), whether the LB database's measurements carry the machine's noise (timer
    resolution and background work, as ``numalab sim --noise``) and which timer it reads."""

    iterations: int = DEFAULT_ITERATIONS
    lb_period: int = DEFAULT_LB_PERIOD
    comm_layer: str = "shm"
    pes: int | None = None
    seed: int = 1
    params: tuple[tuple[str, float], ...] = ()
    noise: bool = True
    lb_timer: str = "wall"

    @staticmethod
    def create(iterations: Any = DEFAULT_ITERATIONS, lb_period: Any = DEFAULT_LB_PERIOD, comm_layer: Any = "shm", pes: Any = None,
               seed: Any = 1, params: dict[str, Any] | None = None, noise: Any = True, lb_timer: Any = "wall") -> "Settings":
        it = coerce("--iterations", iterations, int, 1)
        period = coerce("--lb-period", lb_period, int, 0)
        layer = str(comm_layer)
        layer = "net" if layer == "udp" else layer  # Charm++'s UDP build is the net layer
        if layer not in COMM_LAYERS:
            raise UsageError(f"--comm-layer: '{layer}' is not one of {', '.join(COMM_LAYERS)} (shm: shared-memory pointer passing, "
                             "net or udp: network datagrams)")
        n_pes = None if pes in (None, "", "all") else coerce("--pes", pes, int, 1)
        s = coerce("--seed", seed, int, 0)
        if s >= 1 << 64:
            raise UsageError(f"--seed: must be < 2^64, got {s}")
        timer = str(lb_timer)
        if timer not in LB_TIMERS:
            raise UsageError(f"--lb-timer: '{timer}' is not one of wall, cpu (wall: Charm++'s default wall clock, cpu: +LBUseCpuTime)")
        return Settings(it, period, layer, n_pes, s, sim_params(params or {}), on_off("--noise", noise), timer)


def on_off(option: str, value: Any) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).lower()
    if text in ("on", "true", "1", "yes"):
        return True
    if text in ("off", "false", "0", "no"):
        return False
    raise UsageError(f"{option}: expected on or off, got '{value}'")


def sim_params(given: dict[str, Any]) -> tuple[tuple[str, float], ...]:
    out = []
    for key in sorted(given):
        if key not in SIM_PARAMS:
            raise UsageError(f"unknown simulator parameter {key} (accepted: {', '.join(SIM_PARAMS)})")
        low, high = SIM_PARAMS[key]
        v = coerce(f"--{key.replace('_', '-')}", given[key], float, low)
        if high is not None and v >= high:
            raise UsageError(f"--{key.replace('_', '-')}: must be < {high:g}, got {v:g}")
        out.append((key, v))
    return tuple(out)


def check_pes(machine: Any, settings: Settings) -> None:
    if settings.pes is not None and settings.pes > machine.nr_pus:
        raise UsageError(f"--pes: {settings.pes} PEs on {machine.name}, which has {machine.nr_pus} CPUs (expected 1..{machine.nr_pus})")


def simulate(machine: Any, graph_spec: GraphSpec, balancer: lb.BalancerSpec, settings: Settings, graph: Any = None) -> dict[str, Any]:
    """One balancer on one graph; ``graph`` reuses an already built ``_core.TaskGraph``."""
    from numalab import _core

    check_pes(machine, settings)
    g = graph if graph is not None else build(graph_spec, settings.seed)
    how, lb_params = lb.resolve(balancer, settings.seed)
    params = {**dict(settings.params), **(lb_params or {}), "os_noise": 1.0 if settings.noise else 0.0, "lb_timer": settings.lb_timer}
    start = time.perf_counter()
    raw = _core.taskgraph_simulate(g, machine, how, iterations=settings.iterations, lb_period=settings.lb_period,
                                   comm_layer=settings.comm_layer, pes=settings.pes, seed=settings.seed, params=params or None)
    wall = time.perf_counter() - start
    return document(machine, graph_spec, g, balancer, settings, raw, wall)


def document(machine: Any, graph_spec: GraphSpec, g: Any, balancer: lb.BalancerSpec, settings: Settings, raw: dict[str, Any],
             wall_s: float) -> dict[str, Any]:
    calls = list(raw.get("lb_calls") or [])
    comm_bytes = {k: float((raw.get("comm_bytes") or {}).get(k, 0)) for k in CLASSES}
    comm_msgs = {k: float((raw.get("comm_msgs") or {}).get(k, 0)) for k in CLASSES}
    total_bytes = sum(comm_bytes.values())
    n_calls = len(calls)

    def mean(key: str) -> float:
        return sum(float(c[key]) for c in calls) / n_calls if n_calls else 0.0

    metrics = {
        "iteration_time_ns": float(raw["iteration_time_ns"]),
        "total_time_ns": float(raw["total_time_ns"]),
        "efficiency": float(raw["efficiency"]),
        "lb_calls": n_calls,
        "migrations_per_call": mean("migrations"),
        "migrated_pct_per_call": mean("migrated_pct"),
        "migrated_bytes_per_call": mean("migrated_bytes"),
        "migration_time_ns": sum(float(c["migration_time_ns"]) for c in calls),
        "atsync_ns": sum(float(c.get("atsync_ns", 0.0)) for c in calls),
        "stats_ns": sum(float(c.get("stats_ns", 0.0)) for c in calls),
        "strategy_ns": sum(float(c.get("strategy_ns", 0.0)) for c in calls),
        "decision_ns": sum(float(c.get("decision_ns", 0.0)) for c in calls),
        "resume_ns": sum(float(c.get("resume_ns", 0.0)) for c in calls),
        "lb_step_ns_per_call": mean("step_ns") if n_calls and "step_ns" in calls[0] else 0.0,
        # The run's time per iteration with its balancing steps: what the balancing costs the program.
        "time_per_iteration_ns": float(raw["total_time_ns"]) / max(1, len(raw.get("iterations") or [])),
        "balancer_wall_s": sum(float(c["balancer_wall_s"]) for c in calls),
        "predicted_makespan_ns": mean("predicted_makespan_ns"),
        "actual_makespan_ns": mean("actual_makespan_ns"),
        **{f"comm_{k}_bytes": v for k, v in comm_bytes.items()},
        **{f"comm_{k}_msgs": v for k, v in comm_msgs.items()},
        "comm_remote_pct": 100.0 * comm_bytes["remote"] / total_bytes if total_bytes else 0.0,
    }
    return {
        "schema": SCHEMA,
        "source": "sim",
        "status": "ok",
        "kind": "taskgraph",
        "machine": machine.name,
        "graph": {"name": graph_spec.name, "params": graph_spec.as_dict(), "n_objects": int(g.n_objects), "n_edges": int(g.n_edges),
                  "total_load_ns": float(sum(g.loads_ns)), "state_bytes": int(sum(g.state_bytes))},
        "balancer": {"name": balancer.name, "params": dict(balancer.params), "label": balancer.label()},
        "settings": {**asdict(settings), "params": dict(settings.params)},
        "n_pes": int(raw["n_pes"]),
        "time_s": float(raw["total_time_ns"]) / 1e9,
        # A task graph has no timer of its own: what it reports is the whole run.
        "reported_time_s": float(raw["total_time_ns"]) / 1e9,
        "reported_time_source": "whole-run",
        "metrics": metrics,
        "iterations": list(raw.get("iterations") or []),
        "lb_calls": calls,
        "comm_bytes": comm_bytes,
        "comm_msgs": comm_msgs,
        "mapping_initial": list(raw.get("mapping_initial") or []),
        "mapping_final": list(raw.get("mapping_final") or []),
        "wall_s": wall_s,
    }


def pe_layout(machine: Any, pes: int | None = None) -> tuple[list[int], list[list[float]]]:
    """The node of every PE and the node distances, as the simulator hands them to balancers
    (asked of it, so the PE numbering is the simulator's own)."""
    key = (machine.to_json(), pes)
    if key not in _LAYOUTS:
        _LAYOUTS[key] = _probe_layout(machine, pes)
    return _LAYOUTS[key]


_LAYOUTS: dict[tuple[str, int | None], tuple[list[int], list[list[float]]]] = {}


def _probe_layout(machine: Any, pes: int | None) -> tuple[list[int], list[list[float]]]:
    from numalab import _core

    seen: dict[str, Any] = {}

    def probe(state: dict[str, Any]) -> list[int]:
        seen.update(state)
        return list(state["mapping"])

    g = _core.TaskGraph.lb_test(2, 0)
    _core.taskgraph_simulate(g, machine, probe, iterations=2, lb_period=1, pes=pes)
    return [int(n) for n in seen["pe_nodes"]], [list(map(float, r)) for r in seen["distances"]]


def destinations(machine: Any) -> list[tuple[str, int]]:
    """(name, PE) of one destination per distance class from PE 0: another PE of its node
    (``same_node``), then the first PE of every other node (``node<N>``)."""
    pe_nodes, _ = pe_layout(machine)
    home = pe_nodes[0]
    out = []
    same = next((pe for pe in range(1, len(pe_nodes)) if pe_nodes[pe] == home), None)
    if same is not None:
        out.append(("same_node", same))
    for node in sorted(set(pe_nodes)):
        if node != home:
            out.append((f"node{node}", pe_nodes.index(node)))
    return out


def migration_cost(machine: Any, objects: int, state_bytes: int, params: dict[str, Any] | None = None) -> dict[str, Any]:
    """Time to migrate ``objects`` objects of ``state_bytes`` from PE 0 to each destination class
    (``params``: ``migration_fixed_ns``)."""
    from numalab import _core

    objects = coerce("migrate: objects", objects, int, 1)
    state_bytes = coerce("migrate: state_bytes", state_bytes, int, 0)
    pe_nodes, distances = pe_layout(machine)
    times = {}
    dist = {}
    for name, pe in destinations(machine):
        costs = {k: v for k, v in sim_params(params or {}) if k == "migration_fixed_ns"}
        times[name] = float(_core.taskgraph_migration_time_ns(machine, 0, pe, state_bytes, objects, params=costs or None))
        dist[name] = distances[pe_nodes[0]][pe_nodes[pe]]
    metrics: dict[str, Any] = {f"migration_ns_{k}": v for k, v in times.items()}
    metrics["migration_ns_max"] = max(times.values(), default=0.0)
    metrics["state_bytes"] = state_bytes
    metrics["objects"] = objects
    return {
        "schema": SCHEMA,
        "source": "sim",
        "status": "ok",
        "kind": "migration-cost",
        "machine": machine.name,
        "graph": {"name": MIGRATE, "params": {"objects": objects, "state_bytes": state_bytes}},
        "destinations": [{"name": k, "distance": dist[k], "migration_time_ns": v} for k, v in times.items()],
        "time_s": metrics["migration_ns_max"] / 1e9,
        "reported_time_s": metrics["migration_ns_max"] / 1e9,
        "reported_time_source": "whole-run",
        "metrics": metrics,
    }
