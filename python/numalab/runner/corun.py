"""Run a co-run (``spec/corun_bind.py``) and build its result document: the single-run document
(``runner/sim.py``) with every process's group, placement, pages and time, and its fairness
against each process's time alone (``results/fairness.py``), the alone runs cached."""

from __future__ import annotations

import hashlib
import json
import os
import time
from dataclasses import dataclass
from typing import Any, Callable

from numalab.results.fairness import AloneCache, apply
from numalab.results.metrics import derived_metrics
from numalab.results.result import Result
from numalab.results.text import document_text
from numalab.results.store import ALONE_STORE_ENV as STORE_ENV  # the store alone runs are cached in (set by the study's client)
from numalab.spec.corun_bind import CorunBound
from numalab.spec.run import BoundRun


@dataclass(frozen=True)
class AloneRun:
    """What the store needs of a run: its configuration, sorted JSON and hash."""

    hash: str
    config: dict[str, Any]
    config_json: str


Document = Callable[[BoundRun, dict[str, Any]], dict[str, Any]]
Single = Callable[[BoundRun], Result]


def run(bound: CorunBound, document: Document, single: Single, cache: AloneCache | None = None, alone: bool = True) -> Result:
    """``document`` and ``single``: runner/sim.py's, for the whole document and the alone runs."""
    out = bound.simulate()
    first = bound.groups[0]
    doc = document(BoundRun(bound.spec, bound.machine, first.workload, first.engine), out)
    doc["workload"] = workload_doc(bound)
    doc["placement"]["corun"] = [g.engine.placement_doc() for g in bound.groups]
    for p, proc in zip(doc["processes"], bound.processes):
        p["group"], p["placement"] = proc.group, proc.placement
    doc["metrics"] = derived_metrics(doc)
    if alone:
        apply(doc, alone_times(bound, single, cache or default_cache()))
    return Result(doc)


def workload_doc(bound: CorunBound) -> dict[str, Any]:
    """The co-run's text and each group, with the instructions of all its processes (MAPKI)."""
    from numalab.workload.descriptor import total_instructions

    parts = [total_instructions(g.workload) for g in bound.groups]
    return {
        "name": "corun",
        "params": {"corun": bound.spec.corun_text(), "pin_copies": bound.spec.pin_copies},
        "groups": [{"workload": g.workload, "copies": g.copies, "start_ms": g.start_ms, "config": g.config} for g in bound.spec.corun],
        "instructions": None if any(p is None for p in parts) else sum(parts),
    }


def alone_times(bound: CorunBound, single: Single, cache: AloneCache) -> list[float | None]:
    """Each process's time alone on the same machine and placement; one run per distinct
    alone configuration, taken from the cache when it has it."""
    out = []
    for proc in bound.processes:
        config = proc.alone.canonical()
        text = json.dumps(config, sort_keys=True, separators=(",", ":"))
        key = hashlib.sha256(text.encode()).hexdigest()
        t = cache.get(key)
        if t is None:
            t = _run_alone(single, proc.alone, AloneRun(key, config, text), cache, bound)
        out.append(t)
    return out


def _run_alone(single: Single, spec: Any, run_: AloneRun, cache: AloneCache, bound: CorunBound) -> float | None:
    from numalab.results.derived import columns

    start = time.perf_counter()
    doc = single(spec.bind(bound.machine)).doc
    if doc["status"] != "ok":
        return None
    text = document_text(doc)
    cache.put(run_, {"status": "ok", "error": None, "wall_s": time.perf_counter() - start, "result": text, "columns": columns(doc)})
    return float(doc["processes"][0]["time_s"])


_STORES: dict[str, Any] = {}


def default_cache() -> AloneCache:
    """This process's cache, backed by the store ``$NUMALAB_ALONE_STORE`` names (if any)."""
    path = os.environ.get(STORE_ENV)
    if not path:
        return AloneCache()
    if path not in _STORES:
        from numalab.results.store import Store

        _STORES[path] = Store(path)
    return AloneCache(store=_STORES[path])
