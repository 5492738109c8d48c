"""Binding a co-run: one engine run per process group (``spec/corun.py``), each resolved and
checked like a single run, handed to the engine together (``_core.simulate_corun``).

With ``pin_copies`` every process is its own group, bound (``physcpubind``) to cores of one
node, processes taking the nodes in turn (process k on node k mod N): identical copies are
placed symmetrically, as study S4's hand-tuned ``numactl --localalloc --physcpubind`` runs.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from numalab._core import Machine
from numalab.exceptions import UsageError

if TYPE_CHECKING:  # spec.run binds a co-run through this module
    from numalab.spec.run import BoundRun, RunSpec


@dataclass(frozen=True)
class Process:
    """One process of the co-run: its group's text, workload and placement label."""

    group: int
    workload: str
    start_ms: float
    placement: str
    threads: int
    alone: "RunSpec"  # the same process on the same machine and placement, alone


@dataclass(frozen=True)
class CorunBound:
    """A co-run the engine accepted: one BoundRun per engine group, and every process."""

    spec: "RunSpec"
    machine: Machine
    groups: tuple["BoundRun", ...]
    starts_ms: tuple[float, ...]
    processes: tuple[Process, ...]
    #: Per engine group, the regions its processes map from the run's segments (docs/corun.md §6).
    shared: tuple[tuple[str, ...], ...] = ()
    #: The segments whose mappers each work on their own block (``split=REGION``).
    split: tuple[str, ...] = ()

    def simulate(self) -> dict[str, Any]:
        from numalab._core import simulate_corun

        starts = [ms / 1000.0 for ms in self.starts_ms]
        if not any(self.shared):
            return simulate_corun([g.engine for g in self.groups], starts)
        if not self.split:
            return simulate_corun([g.engine for g in self.groups], starts, [list(s) for s in self.shared])
        return simulate_corun([g.engine for g in self.groups], starts, [list(s) for s in self.shared], list(self.split))


def group_spec(spec: "RunSpec", workload: str, config: str) -> "RunSpec":
    """One process of a group as a single run: the co-run's settings, the group's workload and config."""
    base = replace(spec, workload=workload, params=(), corun=(), pin_copies=False)
    return base.with_config(config) if config else base


def _copies(n: int) -> Any:
    def adjust(w: dict[str, Any]) -> None:
        w["processes"] = n  # identical processes, each with its own regions (the engine's copies)

    return adjust


def bind_corun(spec: "RunSpec", m: Machine) -> CorunBound:
    groups: list["BoundRun"] = []
    starts: list[float] = []
    procs: list[Process] = []
    shared: list[tuple[str, ...]] = []
    segments: dict[str, tuple[Any, ...]] = {}  # the first mapping of each segment
    split: dict[str, tuple[str, bool]] = {}  # per segment, the first item mapping it and whether it splits it
    layout = _cores_by_node(m) if spec.pin_copies else None
    k = 0  # processes placed so far (pinning takes the nodes in turn)
    for gi, g in enumerate(spec.corun):
        one = group_spec(spec, g.workload, g.config)
        alone = one.bind(m)
        threads = alone.engine.threads
        if g.shared:
            from numalab.workload import descriptor

            # The descriptor as written: the bound workload's regions no longer hold their policies.
            _check_shared(g.shared, descriptor.resolve(one.workload, dict(one.params), version=one.npb_version), g.text(), segments)
            _check_split(g, split)
        if layout is not None:
            for _ in range(g.copies):
                cpus = _pin(layout, k, threads)
                pinned = replace(one, placement=replace(one.placement, physcpubind=cpus, cpunodebind=None))
                groups.append(pinned.bind(m))
                shared.append(g.shared)
                starts.append(g.start_ms)
                procs.append(Process(gi, g.workload, g.start_ms, pinned.placement.label(), threads, pinned))
                k += 1
        else:
            groups.append(one.bind(m, adjust_workload=_copies(g.copies)))
            shared.append(g.shared)
            starts.append(g.start_ms)
            procs.extend(Process(gi, g.workload, g.start_ms, one.placement.label(), threads, one) for _ in range(g.copies))
            k += g.copies
    splits = tuple(name for name, (_, yes) in split.items() if yes)
    return CorunBound(spec, m, tuple(groups), tuple(starts), tuple(procs), tuple(shared), splits)


def _check_split(g: Any, split: dict[str, tuple[str, bool]]) -> None:
    """A split segment is split by every process mapping it: block k of P is process k's only
    when all P take one."""
    for name in g.shared:
        this = (g.text(), name in g.split)
        first = split.setdefault(name, this)
        if first[1] != this[1]:
            whole, parts = (first[0], this[0]) if this[1] else (this[0], first[0])
            raise UsageError(f"--corun: split={name}: item '{parts}' splits segment {name} but item '{whole}' maps it whole; give split={name} to every item that shares it")


def _check_shared(names: tuple[str, ...], workload: dict[str, Any], item: str, segments: dict[str, tuple[Any, ...]]) -> None:
    """Every region a group shares is one of its workload's, of the same size, kind and policy
    as the segment's other mappings (the engine checks it too)."""
    regions = {r["name"]: r for r in workload["regions"]}
    for name in names:
        r = regions.get(name)
        if r is None:
            raise UsageError(f"--corun item '{item}': shared={name}: workload {workload['name']} has no region {name} (its regions: {', '.join(regions)})")
        this = (item, r["bytes"], bool(r.get("file")), r.get("policy") or "default")
        first = segments.setdefault(name, this)
        if first[1:] != this[1:]:
            raise UsageError(f"--corun: shared={name}: items '{first[0]}' and '{item}' map it differently ({first[1]} vs {this[1]} bytes, file {first[2]} vs {this[2]}, policy {first[3]} vs {this[3]}); a segment is one size, kind and policy")


def _cores_by_node(m: Machine) -> list[list[int]]:
    """Per node (logical order): the first PU (OS index) of each of its cores."""
    d = json.loads(m.to_json())
    nodes = [n["os_index"] for n in d["nodes"]]
    out: list[list[int]] = [[] for _ in nodes]
    seen: set[int] = set()
    for pu in sorted(d["pus"], key=lambda p: p["os_index"]):
        if pu["core"] in seen or pu["node"] not in nodes:
            continue
        seen.add(pu["core"])
        out[nodes.index(pu["node"])].append(pu["os_index"])
    return [c for c in out if c]


def _pin(layout: list[list[int]], k: int, threads: int) -> str:
    """Process k's cores: node k mod N, the next ``threads`` cores of it (wrapping round when
    more processes than cores share the node)."""
    node = layout[k % len(layout)]
    first = (k // len(layout)) * threads
    return ",".join(str(node[(first + i) % len(node)]) for i in range(threads))
