"""Sensitivity of task-graph comparisons to the simulator's estimated constants
(``numalab sensitivity --graph``, docs/taskgraph.md §5).

The estimates are the core's (``_core.TASKGRAPH_ESTIMATES``, crates/numalab-tasks/src/platform.rs
``ESTIMATES``): per-message costs of the shared-memory and datagram layers, the fixed migration
cost and the strategies' costs per unit of work, each with its stated range. As for machines and
workloads (docs/studies.md §8), each is set to its low and its high end, one at a time, then all
low and all high together; every balancer runs on the same graph and seed under each variant,
and a comparison (a balancer against the first) *flips* when the other side wins.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Callable

from numalab.exceptions import UsageError
from numalab.study.sensitivity import Variant, variants
from numalab.study.uncertainty import Parameter

OWNER = "taskgraph"
#: What a comparison compares: the run's time per iteration with its balancing steps.
METRIC = "time_per_iteration_ns"


def parameters(only: list[str] | None = None) -> list[Parameter]:
    """The estimated constants (all, or those ``only`` names by name or ``taskgraph:name``)."""
    from numalab import _core

    found = [Parameter("taskgraph", OWNER, k, float(lo), float(hi), src, float(v)) for k, v, lo, hi, src in _core.TASKGRAPH_ESTIMATES]
    if only is None:
        return found
    out = []
    for name in only:
        hit = next((p for p in found if name in (p.id, p.path)), None)
        if hit is None:
            raise UsageError(f"--param: '{name}' is not an estimated task-graph constant (known: {', '.join(p.path for p in found)})")
        if hit not in out:
            out.append(hit)
    return out


@dataclass
class Outcome:
    """One balancer against the baseline under every variant: speedup = time(baseline) / time(it)."""

    label: str
    baseline: str
    speedups: dict[str, float] = field(default_factory=dict)

    def winner(self, variant: str = "nominal") -> str:
        s = self.speedups[variant]
        return self.label if s > 1 else self.baseline if s < 1 else "tie"

    @property
    def flips(self) -> list[str]:
        w0 = self.winner()
        return [v for v in self.speedups if v != "nominal" and self.winner(v) != w0]

    def to_json(self) -> dict[str, Any]:
        xs = list(self.speedups.values())
        return {"baseline": self.baseline, "config": self.label, "speedup": self.speedups["nominal"], "winner": self.winner(),
                "speedup_low": min(xs), "speedup_high": max(xs), "flips": bool(self.flips), "flipped_by": self.flips,
                "speedups": self.speedups}


def analyse(machine: Any, gspec: Any, balancer_specs: list[Any], settings: Any, params: list[Parameter], corners: bool,
            step: Callable[[str], None]) -> tuple[list[Variant], list[Outcome]]:
    """Every balancer under every variant (one graph, one seed); outcomes against the first."""
    from numalab.tasks.graphs import build
    from numalab.tasks.run import simulate

    g = build(gspec, settings.seed)
    vs = variants(params, corners)
    times: dict[str, list[float]] = {}
    for v in vs:
        given = dict(settings.params)
        given.update({p.path: value for p, value in v.settings})
        st = replace(settings, params=tuple(sorted(given.items())))
        times[v.name] = []
        for b in balancer_specs:
            times[v.name].append(float(simulate(machine, gspec, b, st, graph=g)["metrics"][METRIC]))
            step(f"{v.name} {b.label()}")
    base = balancer_specs[0].label()
    outcomes = []
    for i, b in enumerate(balancer_specs[1:], start=1):
        o = Outcome(b.label(), base)
        for v in vs:
            t0, t = times[v.name][0], times[v.name][i]
            o.speedups[v.name] = t0 / t if t > 0 else 1.0
        outcomes.append(o)
    return vs, outcomes
