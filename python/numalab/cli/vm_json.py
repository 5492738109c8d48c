"""``numalab vm check --json`` and ``vm setup --json``: the side-by-side tables and the guest's
files as data, one JSON document each (the text versions: ``vm/check.py: report, sched_table``)."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

#: Bump when a key changes meaning or goes away.
SCHEMA = "numalab.vm-check/1"


def check_json(results: list[Any], orderings: dict[str, str]) -> dict[str, Any]:
    """Every case run, simulator and guest side by side, and the orderings checked across cases."""
    cases = [case_json(c) for c in results]
    return {"schema": SCHEMA, "cases": cases, "orderings": orderings,
            "ok": all(c["ok"] for c in cases) and not orderings}


def case_json(c: Any) -> dict[str, Any]:
    """One comparison (``vm/check.py: Comparison``): pages per node after first touch and after
    the run, the counters, the threads, the expectation's verdict on each side."""
    from numalab.vm.check import COUNTERS, TIER_COUNTERS, outside_guest_range, profile_notes, sched_metrics

    case = c.case
    shown = COUNTERS + tuple(k for k in TIER_COUNTERS if case.tiering or c.sim.counters.get(k) or c.vm.counters.get(k))
    barriers = int(case.params.get("reps") or 0) if case.sched else 0
    return {
        "case": case.name,
        "workload": case.workload,
        "params": dict(case.params),
        "machine": case.machine,
        "config": case.config,
        "kernel_release": c.kernel_release,
        "sim_kernel": c.sim_kernel,
        "profile_notes": profile_notes(c.kernel_release),
        # anonymous 4 KiB pages, by node index as the report's node0, node1, ... rows
        "pages": {side: {"after_init": list(getattr(c, side).after_init), "after_run": list(getattr(c, side).after_run)}
                  for side in ("sim", "vm")},
        "counters": {k: {"sim": c.sim.counters.get(k, 0), "vm": c.vm.counters.get(k, 0)} for k in shown},
        "memory_tiers": {"sim": c.sim.memory_tiers, "vm": c.vm.memory_tiers},
        "threads": {side: _threads(getattr(c, side).threads, barriers) for side in ("sim", "vm")},
        # every guest run (--runs): its pages after first touch and the scheduler figures compared
        "vm_runs": [{"after_init": list(v.after_init), **_figures(sched_metrics(v, barriers))} for v in (c.vm_runs or [c.vm])],
        "outside_guest_range": outside_guest_range(c) if case.sched else [],
        "expect": case.expect.__doc__,
        "agree_pct": case.agree_pct,
        "failures": dict(c.failures),
        "ok": c.ok,
    }


def _figures(m: dict[str, float]) -> dict[str, float]:
    """``sched_metrics`` under JSON names."""
    return {"away_pct_mean": m["away %"], "migrations_per_thread_barrier": m["migrations/thread/barrier"],
            "fullest_node_pct": m["fullest node %"]}


def _threads(t: Any, barriers: int) -> dict[str, Any]:
    return {
        "threads": len(t.nr_migrations),
        "nr_migrations": list(t.nr_migrations),
        "migrations_per_thread_s": t.migrations_per_thread_s,
        "migrations_per_thread_barrier": t.migrations_per_thread_barrier(barriers) if barriers else None,
        "changed_node": t.changed_node,
        "away_pct_mean": t.mean_away_pct,
        "away_pct_max": max(t.away_pct, default=0.0),
        "time_s": t.time_s,
    }


def setup_json(guest: Any, cache: Any, agent: str | None, agent_missing: str | None, kvm: bool) -> dict[str, Any]:
    """The guest's files (paths), the kernel's version and source, the agent, and whether KVM opens."""
    return {"cache": str(cache), **asdict(guest), "agent": agent, "agent_missing": agent_missing, "kvm_usable": kvm}
