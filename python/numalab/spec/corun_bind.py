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

    def simulate(self) -> dict[str, Any]:
        from numalab._core import simulate_corun

        return simulate_corun([g.engine for g in self.groups], [ms / 1000.0 for ms in self.starts_ms])


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
    layout = _cores_by_node(m) if spec.pin_copies else None
    k = 0  # processes placed so far (pinning takes the nodes in turn)
    for gi, g in enumerate(spec.corun):
        one = group_spec(spec, g.workload, g.config)
        threads = one.bind(m).engine.threads
        if layout is not None:
            for _ in range(g.copies):
                cpus = _pin(layout, k, threads)
                pinned = replace(one, placement=replace(one.placement, physcpubind=cpus, cpunodebind=None))
                groups.append(pinned.bind(m))
                starts.append(g.start_ms)
                procs.append(Process(gi, g.workload, g.start_ms, pinned.placement.label(), threads, pinned))
                k += 1
        else:
            groups.append(one.bind(m, adjust_workload=_copies(g.copies)))
            starts.append(g.start_ms)
            procs.extend(Process(gi, g.workload, g.start_ms, one.placement.label(), threads, one) for _ in range(g.copies))
            k += g.copies
    return CorunBound(spec, m, tuple(groups), tuple(starts), tuple(procs))


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
