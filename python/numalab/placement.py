"""Placement in numactl's words: one memory policy option, CPU binding, OpenMP binding.

The same options serve ``sim``, ``compare`` and (later) ``run`` and ``vm run``. A *config string*
(``compare --configs``, study files) writes them compactly, items joined by ``:``::

    default                      interleave=all             membind=0
    preferred=1                  preferred-many=0-1         weighted-interleave=0,1
    localalloc                   cpunodebind=0-3            physcpubind=0-15
    omp-proc-bind=spread         omp-places=cores           interleave=all:init=serial

Items that are not placement options are workload parameters (``init=serial``, ``threads=16``).
Node strings follow numactl's grammar (``all``, ``0-3,5``, ``!1``, ``+0-1``), checked against the
machine.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field, fields, replace
from typing import Any

from numalab._core import Machine
from numalab.exceptions import UsageError
from numalab.machine.bitmaps import format_cpulist, parse_cpulist

POLICY_OPTIONS = ("interleave", "weighted_interleave", "membind", "preferred", "preferred_many", "localalloc")
PROC_BIND = ("false", "close", "spread", "primary", "master")
PLACES = ("threads", "cores", "sockets")


@dataclass(frozen=True)
class PlacementOptions:
    """Unresolved options, as the user wrote them."""

    interleave: str | None = None
    weighted_interleave: str | None = None
    membind: str | None = None
    preferred: str | None = None
    preferred_many: str | None = None
    localalloc: bool = False
    cpunodebind: str | None = None
    physcpubind: str | None = None
    omp_proc_bind: str = "false"
    omp_places: str = "cores"
    weights: dict[int, int] = field(default_factory=dict)

    def policy_option(self) -> tuple[str, Any] | None:
        given = [(f, getattr(self, f)) for f in POLICY_OPTIONS if getattr(self, f) not in (None, False)]
        if len(given) > 1:
            names = ", ".join("--" + f.replace("_", "-") for f, _ in given)
            raise UsageError(f"give at most one memory policy option, got {names}")
        return given[0] if given else None


def _nodes(machine: Machine, s: str, option: str) -> list[int]:
    from numalab._core import PolicyError

    try:
        return machine.parse_nodes(s)
    except PolicyError as e:
        raise UsageError(f"--{option}: {e}") from None


def _nodestring(nodes: list[int]) -> str:
    return format_cpulist(nodes)


def resolve(opts: PlacementOptions, machine: Machine) -> tuple[dict[str, Any], dict[str, Any]]:
    """Return (engine placement JSON, the result document's ``placement`` description)."""
    mode, nodes = "default", []
    chosen = opts.policy_option()
    if chosen:
        name, value = chosen
        option = name.replace("_", "-")
        if name == "localalloc":
            mode = "local"
        else:
            nodes = _nodes(machine, value, option)
            mode = {
                "interleave": "interleave",
                "weighted_interleave": "weighted-interleave",
                "membind": "bind",
                "preferred": "preferred",
                "preferred_many": "preferred-many",
            }[name]
            if mode == "preferred" and len(nodes) != 1:
                raise UsageError(f"--preferred takes exactly one node, got '{value}' ({len(nodes)} nodes)")
    for n in opts.weights:
        if n not in nodes:
            raise UsageError(f"weight given for node {n}, which is not in the weighted-interleave nodes")
        if not 1 <= opts.weights[n] <= 255:
            raise UsageError(f"weight of node {n} must be 1..255, got {opts.weights[n]}")
    if opts.cpunodebind and opts.physcpubind:
        raise UsageError("give --cpunodebind or --physcpubind, not both")
    cpus: list[int] | None = None
    if opts.cpunodebind:
        bind_nodes = _nodes(machine, opts.cpunodebind, "cpunodebind")
        import json

        doc = json.loads(machine.to_json())
        cpus = sorted(
            c for n in doc["nodes"] if n["os_index"] in bind_nodes for c in parse_cpulist(n["cpuset"])
        )
        if not cpus:
            raise UsageError(f"--cpunodebind={opts.cpunodebind}: those nodes have no CPUs")
    elif opts.physcpubind:
        from numalab._core import PolicyError

        try:
            cpus = machine.parse_cpus(opts.physcpubind)
        except PolicyError as e:
            raise UsageError(f"--physcpubind: {e}") from None
    bind = opts.omp_proc_bind.lower()
    if bind == "master":
        bind = "primary"  # OpenMP 5.1 renamed master to primary
    if bind == "true":
        bind = "spread"
    if bind not in ("false", "close", "spread", "primary"):
        raise UsageError(f"--omp-proc-bind: '{opts.omp_proc_bind}' is not one of {', '.join(PROC_BIND)}, true")
    places = opts.omp_places.lower()
    if places not in PLACES:
        raise UsageError(f"--omp-places: '{opts.omp_places}' is not one of {', '.join(PLACES)}")
    engine = {
        "policy": {"mode": mode, "nodes": _nodestring(nodes), "weights": {str(k): v for k, v in opts.weights.items()}},
        "cpus": _nodestring(cpus) if cpus is not None else None,
        "proc_bind": bind,
        "places": places,
    }
    all_nodes = sorted(json_nodes(machine))
    described_nodes = "all" if nodes and nodes == all_nodes else (_nodestring(nodes) or None)
    doc = {
        "policy": mode,
        "nodes": described_nodes,
        "cpubind": engine["cpus"],
        "omp_proc_bind": bind,
        "omp_places": places if bind != "false" else None,
    }
    return engine, doc


def json_nodes(machine: Machine) -> list[int]:
    import json

    return [n["os_index"] for n in json.loads(machine.to_json())["nodes"]]


_CONFIG_KEYS = {f.name.replace("_", "-"): f.name for f in fields(PlacementOptions) if f.name != "weights"}


def parse_config(text: str) -> tuple[PlacementOptions, dict[str, str], dict[str, str]]:
    """Split a config string into placement options, workload parameters and other settings
    (``balancing``, ``kernel``, ``thp``, ... returned as raw strings for the caller to check)."""
    opts = PlacementOptions()
    params: dict[str, str] = {}
    settings: dict[str, str] = {}
    items = [i.strip() for i in text.split(":") if i.strip()]
    if not items:
        raise UsageError("empty config (expected e.g. default, interleave=all, membind=0)")
    for item in items:
        key, eq, value = item.partition("=")
        key = key.strip().lstrip("-")
        if key in ("default", "first-touch"):
            continue
        if key in ("localalloc", "local"):
            opts = replace(opts, localalloc=True)
        elif key in _CONFIG_KEYS and key != "localalloc":
            if not eq:
                raise UsageError(f"config '{text}': {key} needs a value ({key}=...)")
            opts = replace(opts, **{_CONFIG_KEYS[key]: value.strip()})
        elif key in ("balancing", "kernel", "thp", "seed", "sample-rate", "hot-threshold-ms", "promote-rate-limit-mbps") or key.startswith("scan-"):
            settings[key] = value.strip() if eq else "on"
        elif eq:
            close = difflib.get_close_matches(key, list(_CONFIG_KEYS), n=1, cutoff=0.8)
            if close:
                raise UsageError(f"config '{text}': unknown placement option '{key}' (did you mean {close[0]}?)")
            params[key.replace("-", "_")] = value.strip()
        else:
            raise UsageError(
                f"config '{text}': unknown item '{item}' (expected a placement such as interleave=all, or name=value)"
            )
    opts.policy_option()
    return opts, params, settings
