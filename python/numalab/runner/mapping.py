"""Data mapping analysis of a simulated run (docs/mapping.md): per-page exclusivity, its
histogram and coarser page sizes, per-region summaries, numalize's mapping scores and the thread
communication matrix, worked out by the engine from the workload's access patterns with each
thread on the node the run placed it on."""

from __future__ import annotations

from typing import Any

from numalab.exceptions import UsageError
from numalab.spec import BoundRun


def thread_nodes(bound: BoundRun, doc: dict[str, Any]) -> list[int]:
    """Each thread's node (logical index) where the run started it (``first_node``)."""
    nodes = list(bound.machine.node_os_indexes)
    return [nodes.index(t.get("first_node", t["node"])) for t in doc["threads"]]


def mapping_doc(bound: BoundRun, doc: dict[str, Any], times: bool = True) -> dict[str, Any]:
    """The result document's ``mapping`` section; node lists are in the order of ``nodes``
    (OS indexes). With ``times``, each mapping's ``time_s``: the run simulated again with its
    pages placed by that mapping before the program starts (docs/mapping.md §4)."""
    if bound.spec.corun:
        return _corun_doc(bound, doc)
    tn = thread_nodes(bound, doc)
    out = bound.engine.mapping_metrics(tn)
    if times:
        for s in out["mappings"]:
            run = bound.engine.simulate_mapping(s["mapping"], tn)
            s["time_s"] = run["time_s"] if run["status"] == "ok" else None
    return {"basis": "model", "nodes": list(bound.machine.node_os_indexes), **out}


def _corun_doc(bound: Any, doc: dict[str, Any]) -> dict[str, Any]:
    """A co-run's analysis (``spec/corun_bind.py: CorunBound``): every process's pages, a segment
    several processes share counted once with all their accesses (docs/corun.md §6). The
    mappings are scored but not simulated (``time_s`` None): placing a co-run's pages ahead is
    not modelled."""
    from numalab._core import corun_mapping_metrics

    if getattr(bound, "split", ()):
        # The per-page pass gives every mapper the whole segment; the engine's split is not in it.
        raise UsageError(f"--mapping-metrics: the co-run splits segment {', '.join(bound.split)} (split=REGION); the data mapping analysis takes shared=REGION only")
    shared = [list(s) for s in bound.shared] or [[] for _ in bound.groups]
    out = corun_mapping_metrics([g.engine for g in bound.groups], thread_nodes(bound, doc), shared)
    for s in out["mappings"]:
        s["time_s"] = None
    return {"basis": "model", "nodes": list(bound.machine.node_os_indexes), **out}
