"""Sensitivity of conclusions to the estimated numbers (docs/studies.md §8).

A *comparison* is two runs, a baseline and another configuration of the same case; its
conclusion is which is faster and by how much (``speedup = time(baseline) / time(other)``). Each
estimated machine or workload number (``[estimates]``, study/uncertainty.py) is set to the low and
then the high end of its stated range, one at a time, with the others as written; optionally all
at their low ends and all at their high ends together (the *corners*). Every run of every
comparison is simulated under each of these variants with the same seed, so a difference comes
from the number varied alone. A comparison *flips* when some variant makes the other side win.
"""

from __future__ import annotations

import functools
import json
import os
from dataclasses import dataclass, field
from typing import Any, Callable

from numalab.console.progress import Progress
from numalab.exceptions import UsageError
from numalab.spec import RunSpec
from numalab.study import uncertainty as u
from numalab.study.uncertainty import Parameter

SCHEMA = "numalab.sensitivity/1"


@dataclass(frozen=True)
class Comparison:
    case: str
    label: str  # the other configuration
    baseline_label: str
    baseline: RunSpec
    other: RunSpec


@dataclass(frozen=True)
class Variant:
    name: str  # "nominal", "<parameter id>=low", "all-high", ...
    settings: tuple[tuple[Parameter, float], ...] = ()

    def for_run(self, spec: RunSpec) -> tuple[list[tuple[Parameter, float]], list[tuple[Parameter, float]]]:
        """(machine settings, workload settings) that apply to ``spec``'s machine and workload."""
        m = [(p, v) for p, v in self.settings if p.kind == "machine" and p.owner == spec.machine]
        w = [(p, v) for p, v in self.settings if p.kind == "workload" and p.owner == spec.workload]
        return m, w


@dataclass
class Outcome:
    """One comparison under every variant."""

    comparison: Comparison
    speedups: dict[str, float | None] = field(default_factory=dict)  # variant name -> speedup

    @property
    def nominal(self) -> float | None:
        return self.speedups.get("nominal")

    def winner(self, variant: str = "nominal") -> str:
        s = self.speedups.get(variant)
        if s is None:
            return "none"
        return self.comparison.label if s > 1 else self.comparison.baseline_label if s < 1 else "tie"

    @property
    def flips(self) -> list[str]:
        """Variants under which the winner differs from the nominal winner."""
        w0 = self.winner()
        return [v for v in self.speedups if v != "nominal" and self.winner(v) != w0]

    @property
    def range(self) -> tuple[float, float] | None:
        xs = [s for s in self.speedups.values() if s is not None]
        return (min(xs), max(xs)) if xs else None

    def to_json(self) -> dict[str, Any]:
        lo_hi = self.range
        return {
            "case": self.comparison.case,
            "baseline": self.comparison.baseline_label,
            "config": self.comparison.label,
            "speedup": self.nominal,
            "winner": self.winner(),
            "speedup_low": lo_hi[0] if lo_hi else None,
            "speedup_high": lo_hi[1] if lo_hi else None,
            "flips": bool(self.flips),
            "flipped_by": self.flips,
            "speedups": self.speedups,
        }


@dataclass
class Sensitivity:
    parameters: list[Parameter]
    variants: list[Variant]
    outcomes: list[Outcome]

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "parameters": [
                {"id": p.id, "kind": p.kind, "owner": p.owner, "path": p.path, "value": p.value,
                 "low": p.low, "high": p.high, "factor": p.factor, "source": p.source}
                for p in self.parameters
            ],
            "variants": [v.name for v in self.variants],
            "comparisons": [o.to_json() for o in self.outcomes],
        }


def parameters(specs: list[RunSpec], only: list[str] | None = None) -> list[Parameter]:
    """The estimates of every machine and workload the runs use (in first-use order), or just the
    ones ``only`` names (by id ``owner:path``, or by path alone when one owner has it)."""
    found: dict[str, Parameter] = {}
    seen: set[tuple[str, str]] = set()
    for s in specs:
        if ("machine", s.machine) not in seen:
            seen.add(("machine", s.machine))
            for p in u.machine_estimates(s.machine):
                found.setdefault(p.id, p)
        if ("workload", s.workload) not in seen:
            seen.add(("workload", s.workload))
            for p in u.workload_estimates(s.workload):
                found.setdefault(p.id, p)
    if only is None:
        return list(found.values())
    out = []
    for name in only:
        hits = [p for p in found.values() if name in (p.id, p.path)]
        if not hits:
            known = ", ".join(found) or "none (no machine or workload of these runs states an estimate)"
            raise UsageError(f"--param: '{name}' is not an estimated number of these runs (known: {known})")
        if len(hits) > 1:
            raise UsageError(f"--param: '{name}' is estimated for several machines or workloads; give one of: {', '.join(p.id for p in hits)}")
        if hits[0] not in out:
            out.append(hits[0])
    return out


def variants(params: list[Parameter], corners: bool = True) -> list[Variant]:
    out = [Variant("nominal")]
    for p in params:
        out.append(Variant(f"{p.id}=low", ((p, p.low),)))
        out.append(Variant(f"{p.id}=high", ((p, p.high),)))
    if corners and len(params) > 1:
        out.append(Variant("all-low", tuple((p, p.low) for p in params)))
        out.append(Variant("all-high", tuple((p, p.high) for p in params)))
    return out


def _key(spec: RunSpec) -> str:
    return json.dumps(spec.canonical(), sort_keys=True, default=str)


def run_time(spec: RunSpec, variant: Variant, time: str = "reported_time_s") -> float | None:
    """Simulated time of ``spec`` under ``variant`` (None when the run did not finish): the time
    the program reports, as ``numalab compare`` compares, or ``time = "time_s"``, the whole run."""
    from numalab.runner import sim as runner

    m_set, w_set = variant.for_run(spec)
    machine = u.varied_machine(spec.machine, m_set) if m_set else None
    r = runner.run(spec.bind(machine=machine, adjust_workload=u.workload_adjuster(w_set)))
    if r.status != "ok":
        return None
    return r.time_s if time == "time_s" else r.reported_time_s


def relevant(variant: Variant, spec: RunSpec) -> bool:
    m, w = variant.for_run(spec)
    return bool(m or w)


def check(comparisons: list[Comparison], params: list[Parameter]) -> None:
    """Fail before anything runs: every workload estimate must name a number of its workload, and
    every variant's machine must be a valid machine."""
    from numalab.workload import descriptor

    specs = _specs(comparisons)
    for s in specs:
        wp = [p for p in params if p.kind == "workload" and p.owner == s.workload]
        if wp:
            u.check_workload_paths(wp, descriptor.resolve(s.workload, dict(s.params)))
    for p in params:
        if p.kind == "machine":
            for v in (p.low, p.high):
                u.varied_machine(p.owner, [(p, v)])


def _specs(comparisons: list[Comparison]) -> list[RunSpec]:
    out: dict[str, RunSpec] = {}
    for c in comparisons:
        out.setdefault(_key(c.baseline), c.baseline)
        out.setdefault(_key(c.other), c.other)
    return list(out.values())


def plan(comparisons: list[Comparison], vs: list[Variant]) -> list[tuple[Variant, RunSpec]]:
    """The simulations to do: every run nominally, and under each variant that touches it."""
    return [(v, s) for v in vs for s in _specs(comparisons) if v.name == "nominal" or relevant(v, s)]


def analyse(
    comparisons: list[Comparison],
    params: list[Parameter],
    corners: bool = True,
    advance: Callable[[], None] | None = None,
    runner: Callable[[RunSpec, Variant], float | None] = run_time,
    jobs: int = 1,
) -> Sensitivity:
    """Simulate every run under every variant (``jobs`` at once, as ``numalab compare`` does)
    and give each comparison's speedups."""
    import threading
    from concurrent.futures import ThreadPoolExecutor

    vs = variants(params, corners)
    todo = plan(comparisons, vs)
    lock = threading.Lock()

    def one(item: tuple[Variant, RunSpec]) -> float | None:
        t = runner(item[1], item[0])
        if advance:
            with lock:
                advance()
        return t

    with ThreadPoolExecutor(max_workers=max(1, min(jobs, len(todo)))) as pool:
        results = list(pool.map(one, todo))
    times = {(v.name, _key(s)): t for (v, s), t in zip(todo, results)}
    outcomes = []
    for c in comparisons:
        o = Outcome(c)
        kb, ko = _key(c.baseline), _key(c.other)
        for v in vs:
            tb = times.get((v.name, kb), times[("nominal", kb)])
            to = times.get((v.name, ko), times[("nominal", ko)])
            o.speedups[v.name] = tb / to if tb and to else None
        outcomes.append(o)
    return Sensitivity(params, vs, outcomes)


# ---------------------------------------------------------------- studies


def study_comparisons(resolved: Any) -> list[Comparison]:
    """A study's comparisons: each run of the first seed against its baseline."""
    by_hash = {r.hash: r for r in resolved.runs}
    first = min((r.config["seed"] for r in resolved.runs), default=1)
    out = []
    for r in resolved.runs:
        if r.config["seed"] != first or r.role != "run" or not r.baseline_hash or r.baseline_hash == r.hash:
            continue
        b = by_hash.get(r.baseline_hash)
        if b is None:
            continue
        out.append(Comparison(r.case, r.label, b.label, RunSpec.from_canonical(b.config), RunSpec.from_canonical(r.config)))
    return out


def study_path(results: Any, study: str) -> Any:
    """Where ``numalab study`` keeps a study's sensitivity (beside the store), for the report."""
    from pathlib import Path

    return Path(results) / f"{study}.sensitivity.json"


def run_for_study(resolved: Any, results: Any) -> str:
    """A study's sensitivity (``sensitivity = true``): every comparison with its baseline under
    every variant, written beside the store for ``numalab report``; returns a one-line summary."""
    from numalab.results.outfile import write_text_atomic

    comparisons = study_comparisons(resolved)
    params = parameters(_specs(comparisons)) if comparisons else []
    out = study_path(results, resolved.name)
    if not comparisons or not params:
        why = "no run has a baseline to compare with" if not comparisons else "no machine or workload of the study states an estimate"
        doc = {"schema": SCHEMA, "study": resolved.name, "parameters": [], "variants": [], "comparisons": [], "note": why}
        write_text_atomic(out, json.dumps(doc, indent=2, sort_keys=True), "sensitivity")
        return f"sensitivity: nothing to vary ({why})"
    check(comparisons, params)
    vs = variants(params)
    with Progress("sensitivity", len(plan(comparisons, vs)), unit="runs") as progress:
        # The time the study's own speedups compare (compare_time, docs/studies.md §4).
        time = resolved.study.compare_time
        result = analyse(comparisons, params, advance=progress.step, runner=functools.partial(run_time, time=time),
                         jobs=os.cpu_count() or 1)
    doc = dict(result.to_json(), study=resolved.name)
    write_text_atomic(out, json.dumps(doc, indent=2, sort_keys=True), "sensitivity")
    flips = sum(1 for o in result.outcomes if o.flips)
    return (f"sensitivity: {flips} of {len(result.outcomes)} conclusions flip within the stated ranges of "
            f"{len(params)} estimates ({len(vs) - 1} variants); written to {out}")
