"""``numalab advise``: which regions' placement costs most, and what to change, ranked by what it
buys (docs/mapping.md §6).

The data mapping analysis (runner/mapping.py) names the regions with the most accesses away
from their node under first touch. Each remedy that applies to the workload is simulated on the
same machine and seed, giving the predicted speedup; the best few are simulated again with every
estimated number of the machine and workload at its low end and at its high end together (the
corners of ``numalab sensitivity``), giving the speedup's range."""

from __future__ import annotations

import hashlib
import json
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Callable

from numalab.runner import sim as runner
from numalab.runner.mapping import mapping_doc
from numalab.spec import BoundRun, RunSpec
from numalab.exceptions import UsageError
from numalab.results.result import Result
from numalab.spec.run import load_machine
from numalab.study import sensitivity as sens
from numalab.study import uncertainty as u

SCHEMA = "numalab.advice/1"
#: Regions whose remedies are simulated: the costliest few (the others' remedies buy less).
TOP_REGIONS = 3
#: A region is costly when its remote accesses under first touch are more than 1 % of all accesses.
COSTLY = 0.01
#: Remedies whose speedup range is simulated: the best few by nominal speedup (the range of a
#: remedy that does not pay matters less, and each range costs two runs).
RANGED = 3
#: Patterns that split a region among the threads (a parallel initialisation can follow them).
PARTITIONED = ("block", "private", "stencil", "transpose", "dynamic")
#: Tuned NUMA balancing: scanning ten times sooner and faster than the defaults (1000 ms delay,
#: 1000 ms minimum period, kernel/sched/fair.c: sysctl_numa_balancing_scan_delay and
#: sysctl_numa_balancing_scan_period_min).
TUNED = "balancing=on:scan-delay-ms=100:scan-period-min-ms=100"


@dataclass
class Remedy:
    name: str
    kind: str
    config: str = ""  # config items added to the run (placement, settings)
    region: str | None = None
    adjust: Callable[[dict[str, Any]], None] | None = None
    speedup: float | None = None
    low: float | None = None
    high: float | None = None
    time_s: float | None = None

    def to_json(self) -> dict[str, Any]:
        return {"remedy": self.name, "kind": self.kind, "region": self.region, "config": self.config or None,
                "time_s": self.time_s, "speedup": self.speedup, "speedup_low": self.low, "speedup_high": self.high}


@dataclass
class Advice:
    machine: str
    workload: str
    base_time_s: float
    regions: list[dict[str, Any]]
    remedies: list[Remedy]
    variants: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"schema": SCHEMA, "machine": self.machine, "workload": self.workload, "base_time_s": self.base_time_s,
                "regions": self.regions, "remedies": [r.to_json() for r in self.remedies], "variants": self.variants}


def costly_regions(mapping: dict[str, Any]) -> list[dict[str, Any]]:
    """Regions by accesses away from their node under first touch (largest first), with those
    accesses as a share of all the program's accesses (``remote_share``)."""
    rows = []
    total = sum(r["accesses"] for r in mapping["regions"]) or 1.0
    for r in mapping["regions"]:
        if not r["pages"]:
            continue
        remote = r["accesses"] * max(0.0, 1.0 - r["first_touch_local"])
        rows.append(dict(r, remote_accesses=remote, remote_share=remote / total))
    return sorted(rows, key=lambda r: (-r["remote_accesses"], r["pid"], r["region"]))


def _index(w: dict[str, Any], name: str) -> int:
    return next(i for i, r in enumerate(w["regions"]) if r["name"] == name)


def serial_init(w: dict[str, Any], ri: int) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """The master-only access that first writes region ``ri`` and the partitioned access that
    uses it most afterwards, if the region is initialised serially and used in parallel."""
    first_write = None
    uses: list[dict[str, Any]] = []
    for step in w["program"]:
        if not step.get("repeat"):
            continue
        for ph in step["phases"]:
            for a in w["phases"][ph]["accesses"]:
                if a["region"] != ri:
                    continue
                if first_write is None and a.get("wr", 0) > 0:
                    first_write = a
                elif a["pattern"] in PARTITIONED:
                    uses.append(a)
    if first_write is None or first_write["pattern"] != "master" or not uses:
        return None
    return first_write, max(uses, key=lambda a: (a.get("rd", 0) + a.get("wr", 0)) * a.get("passes", 1))


def _parallel_init(ri: int) -> Callable[[dict[str, Any]], None]:
    def adjust(w: dict[str, Any]) -> None:
        found = serial_init(w, ri)
        if found is None:
            return
        init, use = found
        # The initialising loop takes the compute loop's schedule (same split, same rows).
        init["pattern"] = "block" if use["pattern"] == "transpose" else use["pattern"]
        for k in ("rows", "halo", "chunk"):
            if k in use:
                init[k] = use[k]
    return adjust


def _region_policy(ri: int, policy: str) -> Callable[[dict[str, Any]], None]:
    def adjust(w: dict[str, Any]) -> None:
        w["regions"][ri]["policy"] = policy
    return adjust


def _alloc_each_thread(ri: int) -> Callable[[dict[str, Any]], None]:
    def adjust(w: dict[str, Any]) -> None:
        w["regions"][ri]["alloc"]["by"] = "each-thread"
    return adjust


def remedies(spec: RunSpec, w: dict[str, Any], regions: list[dict[str, Any]], unequal_bandwidth: bool) -> list[Remedy]:
    """Every remedy that applies: per costly region, then for the whole run."""
    out: list[Remedy] = []
    for r in [r for r in regions if r["remote_share"] > COSTLY][:TOP_REGIONS]:
        ri, name = _index(w, r["region"]), r["region"]
        if serial_init(w, ri) is not None:
            out.append(Remedy(f"initialise {name} in parallel (first touch by its users)", "parallel-init", region=name,
                              adjust=_parallel_init(ri)))
        alloc = w["regions"][ri].get("alloc")
        if alloc and alloc.get("by") != "each-thread" and alloc.get("kind") in ("malloc", "calloc"):
            out.append(Remedy(f"malloc {name} in each thread, not the master", "malloc", region=name,
                              adjust=_alloc_each_thread(ri)))
        out.append(Remedy(f"interleave {name} (mbind MPOL_INTERLEAVE)", "region-interleave", region=name,
                          adjust=_region_policy(ri, "interleave=all")))
        if unequal_bandwidth:
            out.append(Remedy(f"weighted-interleave {name} by node bandwidth", "region-weighted-interleave", region=name,
                              config="weighted-interleave-auto=on", adjust=_region_policy(ri, "weighted-interleave=all")))
    label = spec.label()
    if "interleave" not in label:
        out.append(Remedy("interleave everything (numactl --interleave=all)", "interleave", config="interleave=all"))
    pl = spec.placement
    if pl.omp_proc_bind == "false" and not pl.cpunodebind and not pl.physcpubind:
        out.append(Remedy("bind threads to cores (OMP_PROC_BIND=close, OMP_PLACES=cores)", "bind",
                          config="omp-proc-bind=close:omp-places=cores"))
    if not spec.balancing.scanning:
        out.append(Remedy("turn NUMA balancing on", "balancing", config="balancing=on"))
        out.append(Remedy("turn NUMA balancing on, scanning 10x sooner and faster", "balancing-tuned", config=TUNED))
    thp = spec.thp or "madvise"
    for mode in ("always", "never"):
        if mode != thp:
            out.append(Remedy(f"transparent huge pages {mode}", "thp", config=f"thp={mode}"))
    return out


def _with(spec: RunSpec, config: str) -> RunSpec:
    """``spec`` with the remedy's config items on top (its own placement and settings kept)."""
    return spec.with_config(config) if config else spec


def _bound(spec: RunSpec, adjust: Callable[[dict[str, Any]], None] | None, variant: sens.Variant) -> tuple[str, BoundRun]:
    """The run of ``spec`` with ``adjust`` under ``variant``, and a key of everything the engine
    is given: runs with equal keys have equal results, so each is simulated once (a remedy that
    changes nothing the engine sees, such as THP never when no region is marked MADV_HUGEPAGE)."""
    m_set, w_set = variant.for_run(spec)
    machine = u.varied_machine(spec.machine, m_set) if m_set else load_machine(spec.machine)
    vary = u.workload_adjuster(w_set)

    def both(w: dict[str, Any]) -> None:
        if vary is not None:
            vary(w)
        if adjust is not None:
            adjust(w)

    inputs = spec.engine_inputs(machine, both)
    m, rest = inputs[0], inputs[1:]
    key = hashlib.sha256(json.dumps([m.to_json(), *rest], sort_keys=True, default=repr).encode()).hexdigest()
    return key, spec.bind_inputs(*inputs)


class _Runs:
    """Simulations on a pool of ``jobs`` threads (the engine releases the GIL), each distinct run
    once; ``time`` waits for one run's time (None when the run failed)."""

    def __init__(self, jobs: int, advance: Callable[[], None] | None, on_plan: Callable[[int], None] | None):
        self.pool = ThreadPoolExecutor(max_workers=max(1, jobs))
        self.by_key: dict[str, Future[Result]] = {}
        self.items: dict[tuple[int, str], Future[Result]] = {}
        self.advance, self.on_plan = advance, on_plan
        self.lock = threading.Lock()  # the progress bar is advanced from the pool's threads

    def _done(self, _fut: "Future[Result]") -> None:
        if self.advance:
            with self.lock:
                self.advance()

    def submit(self, spec: RunSpec, r: Remedy | None, v: sens.Variant) -> None:
        key, bound = _bound(_with(spec, r.config) if r is not None else spec, r.adjust if r is not None else None, v)
        fut = self.by_key.get(key)
        if fut is None:
            fut = self.by_key[key] = self.pool.submit(runner.run, bound)
            if self.on_plan:
                self.on_plan(1)
            fut.add_done_callback(self._done)
        self.items[(id(r), v.name)] = fut

    def result(self, r: Remedy | None, v: str) -> Result:
        return self.items[(id(r), v)].result()

    def time(self, r: Remedy | None, v: str) -> float | None:
        fut = self.items.get((id(r), v))
        if fut is None:
            return None
        res = fut.result()
        return res.time_s if res.status == "ok" else None


def advise(spec: RunSpec, corners: bool = True, jobs: int = 1, advance: Callable[[], None] | None = None,
           on_plan: Callable[[int], None] | None = None) -> Advice:
    """Analyse ``spec``'s data mapping, simulate every remedy and rank them by speedup.

    Runs that need nothing from others (the run as given, its corners and the whole-run remedies)
    start together; the region remedies follow the analysis of the run as given, and the ranges
    of the best remedies follow their nominal runs."""
    if spec.corun:
        raise UsageError("numalab advise takes one workload; a co-run (--corun) has several: advise on each workload alone")
    bound = spec.bind()
    bw = [n.get("bandwidth_gbps") for n in json.loads(bound.machine.to_json())["nodes"]]
    unequal = len({round(x, 3) for x in bw if x}) > 1
    whole = remedies(spec, bound.workload, [], unequal)
    params = sens.parameters([spec]) if corners else []
    nominal = sens.Variant("nominal")
    vs = [nominal]
    if params:
        vs += [sens.Variant("all-low", tuple((p, p.low) for p in params)), sens.Variant("all-high", tuple((p, p.high) for p in params))]
    runs = _Runs(jobs, advance, on_plan)
    try:
        for v in vs:
            runs.submit(spec, None, v)
        for r in whole:
            runs.submit(spec, r, nominal)
        base = runs.result(None, "nominal")
        mapping = mapping_doc(bound, base.doc, times=False)
        regions = costly_regions(mapping)
        found = remedies(spec, bound.workload, regions, unequal)
        # The whole-run remedies already started are the same objects in ``found``.
        found = [r for r in found if r.region is not None] + whole
        for r in found:
            if r.region is not None:
                runs.submit(spec, r, nominal)

        def speedup(r: Remedy | None, v: str) -> float | None:
            tb, tr = runs.time(None, v), runs.time(r, v)
            return tb / tr if tb and tr else None

        for r in found:
            r.time_s, r.speedup = runs.time(r, "nominal"), speedup(r, "nominal")
        best = sorted(found, key=lambda r: (-(r.speedup or 0.0), r.name))[:RANGED]
        for v in vs[1:]:
            for r in best:
                runs.submit(spec, r, v)
        for r in found:
            ups = [x for x in (speedup(r, v.name) for v in vs) if x is not None]
            if any(r is b for b in best) and ups:
                r.low, r.high = min(ups), max(ups)
    finally:
        runs.pool.shutdown(wait=True, cancel_futures=True)
    ranked = sorted(found, key=lambda r: (-(r.speedup or 0.0), r.name))
    return Advice(spec.machine, spec.workload, base.time_s, regions, ranked, [v.name for v in vs])
