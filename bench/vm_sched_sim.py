"""The simulator's side of ``numalab vm check``'s sleeping scheduler cases, without a guest.

For every passive and oversubscribed case (``vm-4``, ``vm-8``, ``vm-4x2``, ``vm-2x4``) runs the
simulator as the check does (``check.sim_side``: the guest's speed, background and the host
running the vCPUs) for seeds 1..N and prints migrations per thread per
barrier: seed 1's (what ``vm check`` shows), the mean over the seeds and their range (the
simulator's own run-to-run spread: its background and wake-up order change with the seed, as the
guest's change from boot to boot), beside the guest's range over its recorded runs
(``numalab.vm.guest_seen``) and where the mean falls; then the mean time away from the first
node, seed 1's threads that changed node, the simulated ms per barrier (mean over the seeds)
beside the guest's under the condition, and seed 1's moves by kernel path (all/across nodes).
With ``--idle`` also each case's idle entries per CPU per barrier (``sched_goidle``, mean over the
seeds and their range; ``vm check --moves`` shows the guest's) and newly idle balances per run
(calls, pulls; where the host stopped a vCPU inside one, levels balanced newly idle and how many
of them it stopped, docs/scheduler.md §10.27) and the idle ticks on a CPU with nothing queued per idle
entry (§10.50), from the runs with their decisions kept (``--explain-sched``, which changes no
decision). With ``--rq`` also each case's run queues as ``vm check --moves`` prints the guest's
(``sched_trace.rq_line``: CPU-time at 0 / 1 / 2 / 3+ runnable threads, idle ticks by the
longest run queue, the share of the run some CPU held 2+ while another held none and those
stretches by length, idle ticks by jiffies since their CPU's last thread left), the mean over
the seeds (docs/scheduler.md §10.25). Deterministic; about three seconds per seed for all eight
cases.

``--host NAME`` models one of ``check.HOSTS`` instead of ``check.GUEST_HOST``; ``--condition
NAME`` one of the host conditions the guest was measured under (``check.CONDITIONS``,
docs/scheduler.md §10.18: its host and the guest's barrier length then) and judges the mean
against the guest's runs under it (``guest_seen.GUEST_BY_CONDITION``) where recorded, the cases
without a barrier length under it left out; otherwise against every run.

``--per-run`` replays every guest run recorded with its own condition (``guest_seen.GUEST_RUNS``:
QEMU's cores, the guest's ms per barrier) through ``run_condition.replay``, as ``vm check --moves``
judges a run (seeds 1..4, ``--seeds`` to change): per run the guest's value and moves (k), the
condition, the simulator's mean and how far it lies in the run's counting spread sqrt(k); then per
case how many runs it is within one and two sqrt(k) of, and over all runs the factor simulator and
guest lie apart (geometric mean). docs/scheduler.md §10.20. Where a case was measured on the idle
host the slowdown is the idle host's under every condition and run (§10.40): the ms per barrier
printed is then the guest's, which the simulator's is checked against, not set to.

    .venv/bin/python bench/vm_sched_sim.py [--kernel 6.1|6.13] [--seeds N] [--idle] [--rq] [--host NAME | --condition NAME | --per-run]
"""

from __future__ import annotations

import argparse
import math
import statistics
from dataclasses import replace

from numalab.vm import check, guest_seen, run_condition, sched_trace


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kernel", default="6.1", help="the simulated kernel profile (vm check simulates Debian's 6.1 guest)")
    ap.add_argument("--seeds", type=int, default=None, help="seeds 1..N per case (default 8; 4 with --per-run)")
    ap.add_argument("--idle", action="store_true", help="also idle entries per CPU per barrier and newly idle balances per run")
    ap.add_argument("--rq", action="store_true", help="also the run queues as vm check --moves prints the guest's, mean over the seeds")
    pick = ap.add_mutually_exclusive_group()
    pick.add_argument("--host", choices=sorted(check.HOSTS), help="the host model (default check.GUEST_HOST)")
    pick.add_argument("--condition", choices=sorted(check.CONDITIONS), help="a measured host condition: its host and barrier length")
    pick.add_argument("--per-run", action="store_true", help="replay every recorded guest run under its own condition (seeds 1..4 unless --seeds)")
    args = ap.parse_args()
    if args.seeds is not None and args.seeds < 1:
        ap.error(f"--seeds must be at least 1, got {args.seeds}")
    if args.per_run:
        per_run(args.kernel, args.seeds or run_condition.SEEDS)
        return
    args.seeds = args.seeds or 8
    cond = check.CONDITIONS[args.condition] if args.condition else None
    print(f"{'case':26} {'seed 1':>8} {'mean':>8} {'seeds min-max':>17} {'guest':>15}  {'mean is':12} {'away %':>6} {'changed':>7} {'ms/barrier':>13}  moves by path, seed 1 (all/across nodes)")
    for name, case in check.CASES.items():
        if not case.sched or case.background is None or (cond is not None and name not in cond.barrier_s):
            continue
        spec = check.sim_spec(case, args.kernel)
        reps = int(case.params["reps"])
        host = check.HOSTS[cond.host if cond else args.host] if cond or args.host else True
        background = cond.background(name) if cond else case.background
        docs = [check.sim_doc(replace(spec, seed=s).updated(explain_sched=args.idle or args.rq), background, case.interval_ms, host)
                for s in range(1, args.seeds + 1)]
        runs = [check.threads_of(d) for d in docs]
        per = [t.migrations_per_thread_barrier(reps) for t in runs]
        mean = statistics.mean(per)
        seen = guest_seen.ranges(args.condition)
        low, high = seen[name]
        away = statistics.mean(t.mean_away_pct for t in runs)
        # The simulated barrier beside the guest's under the condition: an input where the
        # slowdown is taken under this host, a check where it is the idle host's (§10.40).
        barrier_ms = statistics.mean(float(d["time_s"]) for d in docs) / reps * 1e3
        first = runs[0]
        moves = sched_trace.sim_moves(name, args.kernel, host, background)
        paths = ", ".join(f"{p} {a}/{b}" for p, (a, b) in sorted(moves.items()))
        print(f"{name:26} {per[0]:>8.4g} {mean:>8.4g} {min(per):>8.4g}-{max(per):<8.4g} {low:>7.4g}-{high:<7.4g}  "
              f"{guest_seen.verdict(mean, name, seen):12} {away:>6.1f} {first.changed_node:>3}/{len(first.nr_migrations):<3} "
              f"{barrier_ms:>6.3g}/{background.barrier_s * 1e3:<6.3g}  {paths}")
        if args.idle:
            print(f"{'':26} {idle_entries(docs, reps)}")
        if args.rq:
            rqs = [rq for rq in map(sched_trace.sim_rq, docs) if rq is not None]
            print(f"{'':26} {sched_trace.rq_line(f'sim (seeds 1-{args.seeds})', sched_trace.mean_rq(rqs))}")


def per_run(kernel: str, seeds: int) -> None:
    """Every recorded run under its own condition (``run_condition.replay``), and per case how
    many runs the simulator's mean is within the run's counting spread of."""
    replayed = run_condition.replay(guest_seen.GUEST_RUNS, guest_seen.RUNS_HOST_CPUS,
                                    lambda name, cond: run_condition.sim_under(name, cond, kernel, seeds))
    print(f"{'case':26} {'UTC':19} {'load':>5} {'guest':>9} {'k':>5} {'QEMU':>5} {'cores':>5} {'ms/barrier':>10} "
          f"{'sim mean':>9} {'seeds min-max':>17} {'sim/guest':>9} {'sd':>6} {'sd both':>7}")
    for r in replayed:
        v, c = r.verdict, r.condition
        ratio = f"{v.ratio:.3g}" if v.ratio is not None else "-"
        print(f"{r.case:26} {r.run.utc:19} {r.run.load:>5.2f} {v.guest:>9.4g} {v.moves:>5} {r.run.cores:>5.2f} {c.cores:>5} "
              f"{c.barrier_s * 1e3:>10.3f} {v.mean:>9.4g} {min(v.sim):>8.4g}-{max(v.sim):<8.4g} {ratio:>9} {v.z:>+6.1f} {v.z_both:>+7.1f}")
    print(f"\nseeds 1-{seeds}; sd: (simulator's mean as moves in the run - k) / sqrt(k); sd both: over sqrt(k + the "
          "mean's standard error over the seeds, in moves, squared)")
    for name, (n, one, two, both) in run_condition.summary(replayed).items():
        print(f"{name:26} {n} runs: within one sqrt(k) of {one}, within two of {two}; within two sd both of {both}")
    # How far apart, whatever the counting spread: the geometric mean of max(r, 1/r) over the
    # runs where both sides moved (a run of 5 moves and one of 150 weigh alike).
    ratios = [r.verdict.ratio for r in replayed if r.verdict.ratio]
    if ratios:
        factor = math.exp(statistics.mean(abs(math.log(x)) for x in ratios))
        print(f"all {len(replayed)} runs: simulator and guest a factor {factor:.2f} apart (geometric mean over the {len(ratios)} "
              "where both moved)")


def idle_entries(docs: list[dict], reps: int) -> str:
    """Idle entries per CPU per barrier over the runs (mean, range) and newly idle calls and pulls
    per run, from documents with their decisions kept."""
    per = [statistics.mean(int(c["sched_goidle"]) / reps for c in d["sched_cpus"]) for d in docs]
    gate = [sum(int(c["newidle_gate"].get(k, 0)) for d in docs for c in d["sched_cpus"]) / len(docs)
            for k in ("calls", "pulled", "host_stopped")]
    # Levels balanced newly idle: CPU_NEWLY_IDLE's lb_count (the third idle type, the first counter).
    levels = sum(int(dom["lb"][2][0]) for d in docs for c in d["sched_cpus"] for dom in c["domains"]) / len(docs)
    stopped = f", levels balanced {levels:.0f}, the host stopped {gate[2]:.1f} ({gate[2] / levels:.2%})" if gate[2] else ""
    # Idle ticks with nothing queued on the ticking CPU per idle entry, over all the runs
    # (``vm check --moves`` prints the guest's; docs/scheduler.md §10.50).
    ticks = sum(sum(rq.longest_at_ticks()) for rq in map(sched_trace.sim_rq, docs) if rq is not None)
    entries = sum(int(c["sched_goidle"]) for d in docs for c in d["sched_cpus"])
    ticked = f", idle ticks on an empty CPU per idle entry {ticks / entries:.2f}" if entries else ""
    return (f"idle entries per CPU per barrier {statistics.mean(per):.3f} ({min(per):.3f}-{max(per):.3f}), "
            f"newly idle balances per run {gate[0]:.0f}, pulls {gate[1]:.1f}{stopped}{ticked}")


if __name__ == "__main__":
    main()
