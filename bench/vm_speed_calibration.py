"""Issue 22 probe (docs/scheduler.md §10.40): the guest's speed taken from under a loaded host, as
``check.sim_doc`` took it before §10.40, beside the speed taken on the idle host, as it takes it now.

``check.sim_doc`` timed a first run on the unslowed preset with the host model of the condition
(``check.HOSTS``), then slowed the preset by the guest's barrier over that run's
(``guest_speed_machine``): the slowdown stands for TCG's translated code being slower than the
preset's timing. Under ``group-loops-N`` the first run's barrier already carries the host's
waits (N always-runnable threads on the host model's queue), which do not scale with the guest's
speed, so the slowdown left for TCG shrinks with N. For each case under each condition, seeds
1..N, this prints both: the slowdown taken under the condition and the model's barrier, moves per
thread per barrier and share of the run with a vCPU holding 2+ workers beside an idle one
(``sched_rq``, as ``vm check --moves`` prints the guest's); then the same with the slowdown taken
under ``CONDITIONS["idle"]`` (two host cores, nothing else: the host adds least there), the
condition's host, barrier and agent otherwise unchanged. Nothing is fitted: the idle condition's
barrier is its own measured one. Deterministic.

    PYTHONPATH=python python bench/vm_speed_calibration.py [--condition group-loops-8 ...] [--case sched-passive ...] [--seeds 4]
"""

from __future__ import annotations

import argparse
import statistics
from dataclasses import replace
from typing import Any

from numalab.runner import sim
from numalab.spec import RunSpec
from numalab.vm import check, guest_seen


def first_barrier_s(spec: RunSpec, host: dict[str, Any], reps: int) -> float:
    """``sim_doc``'s first run: the unslowed preset, the host model, no background; s per barrier."""
    m, w, placement, policies, config = spec.engine_inputs(check.guest_speed_machine(spec.machine, 1.0))
    config["vcpu_host"] = host
    return float(sim.run(spec.bind_inputs(m, w, placement, policies, config)).doc["time_s"]) / reps


def slowed_run(spec: RunSpec, slowdown: float, cond: check.HostCondition, name: str, interval_ms: int) -> dict[str, Any]:
    """``sim_doc``'s second run with a given slowdown: the condition's host and background."""
    m, w, placement, policies, config = spec.engine_inputs(check.guest_speed_machine(spec.machine, slowdown))
    config["background"] = cond.background(name).engine(interval_ms)
    config["vcpu_host"] = check.HOSTS[cond.host]
    return dict(sim.run(spec.bind_inputs(m, w, placement, policies, config)).doc)


def stack_share(doc: dict[str, Any]) -> float:
    """Share of the run some vCPU held 2+ workers while another held none (``sched_rq``)."""
    rq = doc.get("sched_rq") or {}
    return float(rq.get("imbalanced_s", 0.0)) / float(rq["span_s"]) if rq.get("span_s") else 0.0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--condition", action="append", help="a check.CONDITIONS name (default: every group-loops-N)")
    ap.add_argument("--case", action="append", help="a vm check case (default: those with a barrier under the condition)")
    ap.add_argument("--seeds", type=int, default=4, help="seeds 1..N")
    a = ap.parse_args()
    if a.seeds < 1:
        ap.error(f"--seeds must be at least 1, got {a.seeds}")
    conds = a.condition or [c for c in check.CONDITIONS if c.startswith("group-loops-")]
    idle = check.CONDITIONS["idle"]
    print("condition       case                  speed from  slowdown  ms/barrier (guest)   moves/thread/barrier mean (range)  "
          "guest range          stack share")
    for cn in conds:
        cond = check.CONDITIONS[cn]
        seen = guest_seen.ranges(cn)
        for name in a.case or list(cond.barrier_s):
            if name not in cond.barrier_s or name not in idle.barrier_s:
                continue
            case = check.CASES[name]
            reps = int(case.params["reps"])
            base = check.sim_spec(case)
            for label, speed_cond in (("condition", cond), ("idle", idle)):
                slow, per, vals, stacks = [], [], [], []
                for seed in range(1, a.seeds + 1):
                    spec = replace(base, seed=seed).updated(explain_sched=True)
                    s = speed_cond.barrier_s[name] / first_barrier_s(spec, check.HOSTS[speed_cond.host], reps)
                    doc = slowed_run(spec, s, cond, name, case.interval_ms)
                    slow.append(s)
                    per.append(float(doc["time_s"]) / reps)
                    vals.append(check.threads_of(doc).migrations_per_thread_barrier(reps))
                    stacks.append(stack_share(doc))
                low, high = seen[name]
                print(f"{cn:15s} {name:21s} {label:10s} {statistics.mean(slow):8.3f}  {1e3 * statistics.mean(per):7.3f} "
                      f"({1e3 * cond.barrier_s[name]:6.3f})   {statistics.mean(vals):.5f} ({min(vals):.5f}-{max(vals):.5f})"
                      f"      {low:.5f}-{high:.5f}  {statistics.mean(stacks):.3f}", flush=True)
    print(f"\nseeds 1-{a.seeds}; speed from: the condition (check.sim_doc before §10.40) or CONDITIONS['idle'] "
          "(the slowdown with two host cores and nothing else)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
