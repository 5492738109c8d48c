"""Load balancers by name: the Rust core's (``none``, ``greedy``, ``greedy-refine``, ``refine``,
``treematch``, ``numalab``) and the ones written here as callables (``metis``, ``scotch``,
``random``). docs/taskgraph.md §3 describes each one's algorithm, complexity and parameters.

A balancer is written ``name`` or ``name:key=value:key=value`` (``random:migrate_pct=25``,
``greedy-refine:tolerance=1.05``, ``numalab:gain_margin=2``).
"""

from __future__ import annotations

import random as _random
from dataclasses import dataclass
from typing import Any, Callable

from numalab.exceptions import UsageError
from numalab.tasks import partition
from numalab.tasks.graphs import coerce

NATIVE = ("none", "greedy", "greedy-refine", "refine", "treematch", "numalab")
#: Parameters of the core's balancers (crates/numalab-tasks/src/balance/): name -> {parameter:
#: (type, default, minimum)}; the core receives them as ``<name>_<parameter>``.
NATIVE_PARAMS: dict[str, dict[str, tuple[type, Any, float | None]]] = {
    "greedy-refine": {"tolerance": (float, 1.0, 1.0)},
    "refine": {"overload": (float, 1.05, 1.0)},
    "numalab": {"tolerance": (float, 1.02, 1.0), "gain_margin": (float, 1.0, 0.0), "locality": (bool, True, None)},
}
#: Python balancers: name -> {parameter: (type, default, minimum)}.
PYTHON: dict[str, dict[str, tuple[type, Any, float | None]]] = {
    "metis": {},
    "scotch": {},
    "random": {"migrate_pct": (float, 100.0, 0.0)},
}
NAMES = NATIVE + tuple(PYTHON)
DEFAULT_LIST = "none,greedy,refine,metis,scotch,treematch,numalab"


@dataclass(frozen=True)
class BalancerSpec:
    name: str
    params: tuple[tuple[str, Any], ...] = ()

    def label(self) -> str:
        return self.name + "".join(f":{k}={_text(v)}" for k, v in self.params)


def _text(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return f"{v:g}" if isinstance(v, float) else str(v)


def parse(text: str) -> BalancerSpec:
    """``name[:key=value...]`` -> BalancerSpec; an unknown name lists the accepted ones."""
    name, *items = [s.strip() for s in str(text).split(":")]
    if name not in NAMES:
        raise UsageError(f"unknown balancer '{name}' (expected one of: {', '.join(NAMES)})")
    params: dict[str, Any] = {}
    for item in items:
        key, eq, value = item.partition("=")
        key = key.strip().replace("-", "_")
        if not eq or not key:
            raise UsageError(f"balancer '{text}': '{item}' is not key=value")
        if key in params:
            raise UsageError(f"balancer '{text}': {key} is given twice")
        params[key] = value.strip()
    return spec(name, params)


def spec(name: str, params: dict[str, Any] | None = None) -> BalancerSpec:
    """A balancer with its parameters checked and typed; only those given are kept (the label
    names them, the defaults are the balancer's)."""
    params = dict(params or {})
    if name not in NAMES:
        raise UsageError(f"unknown balancer '{name}' (expected one of: {', '.join(NAMES)})")
    table = PYTHON.get(name, NATIVE_PARAMS.get(name, {}))
    unknown = sorted(set(params) - set(table))
    if unknown:
        raise UsageError(f"balancer {name}: unknown parameter {', '.join(unknown)} (accepted: {', '.join(table) or 'none'})")
    typed = {k: _typed(name, k, params[k], *table[k]) for k in table if k in params}
    if name == "random" and typed.get("migrate_pct", 0) > 100:
        raise UsageError(f"balancer random: migrate_pct must be <= 100, got {typed['migrate_pct']:g}")
    return BalancerSpec(name, tuple(typed.items()))


def _typed(name: str, key: str, value: Any, kind: type, _default: Any, minimum: float | None) -> Any:
    if kind is bool:
        v = str(value).strip().lower()
        if v in ("true", "1", "on", "yes"):
            return True
        if v in ("false", "0", "off", "no"):
            return False
        raise UsageError(f"balancer {name}: {key}: expected true or false, got '{value}'")
    return coerce(f"balancer {name}: {key}", value, kind, minimum)


def parse_list(text: str) -> list[BalancerSpec]:
    out = [parse(s) for s in (x.strip() for x in str(text).split(",")) if s]
    if not out:
        raise UsageError("--balancers is empty (expected a comma-separated list such as " + DEFAULT_LIST + ")")
    labels = [b.label() for b in out]
    dup = next((x for x in labels if labels.count(x) > 1), None)
    if dup:
        raise UsageError(f"--balancers names '{dup}' twice")
    return out


def check_available(b: BalancerSpec) -> None:
    """A balancer that needs an outside program fails before any simulation starts."""
    if b.name == "scotch":
        partition.require_gpart()


def resolve(b: BalancerSpec, seed: int) -> tuple[Any, dict[str, Any] | None]:
    """What ``taskgraph_simulate`` takes: (a name or a callable, the core balancer's params)."""
    if b.name not in PYTHON:
        prefix = b.name.replace("-", "_")
        return b.name, {f"{prefix}_{k}": v for k, v in b.params} or None
    p = dict(b.params)
    if b.name == "metis":
        return _partitioner("metis", partition.metis_parts, seed), None
    if b.name == "scotch":
        check_available(b)
        return _partitioner("scotch", partition.scotch_parts, seed), None
    return _random_balancer(p.get("migrate_pct", PYTHON["random"]["migrate_pct"][1]), seed), None


def _partitioner(name: str, parts: Callable[..., list[int]], seed: int) -> Callable[[dict[str, Any]], list[int]]:
    """A partition into n_pes parts becomes the mapping: object i -> PE parts[i] (MetisLB.C's
    ``to_proc = part``)."""

    def balance(state: dict[str, Any]) -> list[int]:
        return parts(state["loads_ns"], state["edges"], int(state["n_pes"]), seed)

    # The core models a strategy's run time by its name (crates/numalab-tasks/src/strategy_time.rs).
    balance.__name__ = name
    return balance


def _random_balancer(migrate_pct: float, seed: int) -> Callable[[dict[str, Any]], list[int]]:
    """``random``: each call moves ``migrate_pct`` % of the objects (rounded), drawn at random, each
    to a random other PE (RandCentLB.C moves every object to a random PE; here the share is a
    parameter, for the migration-cost experiments)."""
    rng = _random.Random(seed)

    def balance(state: dict[str, Any]) -> list[int]:
        mapping = [int(p) for p in state["mapping"]]
        n, pes = len(mapping), int(state["n_pes"])
        if pes < 2:
            return mapping
        for o in rng.sample(range(n), round(n * migrate_pct / 100)):
            dst = rng.randrange(pes - 1)
            mapping[o] = dst if dst < mapping[o] else dst + 1
        return mapping

    balance.__name__ = "random"
    return balance
