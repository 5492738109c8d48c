"""Where a guest case's simulated vCPUs' busy time goes under a host condition
(docs/scheduler.md §10.33): ``check.sim_doc``'s two runs (the first, with the host model and no
background, sets the slowdown; the second is the case as ``vm check`` runs it) and three beside
them: no host and not slowed, the second without its background, the second without the host.
Per run the seconds per barrier and, over its vCPUs (range), the share of the run each held a
thread (``rq_cpu_time_s``), the host ran it (``host_s``), it held a thread the host had
preempted (``host_preempted_wait_s``), it waited for a host core at all (``host_wait_s``) and its
host preemptions per barrier (``host_involuntary``); then the host cores the second run's
threads used (vCPUs and QEMU's main loop). Deterministic.

    .venv/bin/python bench/vm_busy_share.py [--case sched-passive] [--condition idle] [--seeds 4]
"""

from __future__ import annotations

import argparse
from dataclasses import replace
from typing import Any

from numalab.runner import sim
from numalab.spec import RunSpec
from numalab.vm import check


def run(spec: RunSpec, slowdown: float, host: dict[str, Any] | None, background: Any, interval_ms: int) -> dict[str, Any]:
    """One run as ``check.sim_doc`` makes its own: the preset at ``slowdown``, with the host model
    and the guest's background where given."""
    m, w, placement, policies, config = spec.engine_inputs(check.guest_speed_machine(spec.machine, slowdown))
    if host is not None:
        config["vcpu_host"] = host
    if background is not None:
        config["background"] = background.engine(interval_ms)
    return dict(sim.run(spec.bind_inputs(m, w, placement, policies, config)).doc)


def span(values: list[float]) -> str:
    return f"{min(values):.3f}-{max(values):.3f}"


def line(tag: str, doc: dict[str, Any], reps: int) -> str:
    t = float(doc["time_s"])
    cpus = doc["sched_cpus"]
    share = {k: [float(c.get(k) or 0.0) / t for c in cpus]
             for k in ("rq_cpu_time_s", "host_s", "host_preempted_wait_s", "host_wait_s")}
    inv = [float(c.get("host_involuntary") or 0) / reps for c in cpus]
    return (f"  {tag:34} {t / reps * 1e3:7.4f} ms/barrier  held {span(share['rq_cpu_time_s'])}  host ran "
            f"{span(share['host_s'])}  held preempted {span(share['host_preempted_wait_s'])}  waited for a core "
            f"{span(share['host_wait_s'])}  preemptions/barrier {span(inv)}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--case", default="sched-passive", help="a scheduler case of check.CASES")
    ap.add_argument("--condition", default="idle", choices=sorted(check.CONDITIONS), help="the host condition")
    ap.add_argument("--seeds", type=int, default=4, help="seeds 1..N")
    args = ap.parse_args()
    case = check.CASES[args.case]
    cond = check.CONDITIONS[args.condition]
    if args.case not in cond.barrier_s:
        ap.error(f"no barrier length for {args.case} under {args.condition}")
    background = cond.background(args.case)
    host = check.HOSTS[cond.host]
    base = check.sim_spec(case)
    reps = int(case.params["reps"])
    print(f"{args.case} under {args.condition}: guest barrier {background.barrier_s * 1e3:.3f} ms, host {host}")
    for seed in range(1, args.seeds + 1):
        spec = replace(base, seed=seed).updated(explain_sched=True)
        first = run(spec, 1.0, host, None, case.interval_ms)
        slowdown = background.barrier_s / (float(first["time_s"]) / reps)
        alone = run(spec, 1.0, None, None, case.interval_ms)
        second = run(spec, slowdown, host, background, case.interval_ms)
        print(f"seed {seed}: slowdown {slowdown:.4f} (from the run without the host it would be "
              f"{background.barrier_s / (float(alone['time_s']) / reps):.4f})")
        print(line("no host, not slowed", alone, reps))
        print(line("host, not slowed (sim_doc's first)", first, reps))
        print(line("host, slowed, no background", run(spec, slowdown, host, None, case.interval_ms), reps))
        print(line("host, slowed, background (second)", second, reps))
        print(line("second without the host", run(spec, slowdown, None, background, case.interval_ms), reps))
        used = sum(float(c["host_s"]) for c in second["sched_cpus"]) + float(second["sched_host_main_loop"]["host_s"])
        print(f"  second run's host cores used: {used / float(second['time_s']):.3f}")


if __name__ == "__main__":
    main()
