"""The guest's background in ``numalab vm check``'s simulator side (docs/scheduler.md §10.3): the
sleeping cases on guests with several vCPUs per node carry the agent and kernel threads measured
in the guest, on the preset slowed to the guest's speed. Simulator only (deterministic: its
figures are fixed by the seed)."""

from __future__ import annotations

import pytest

from numalab.machine import load as load_machine
from numalab.runner import sim
from numalab.spec import RunSpec
from numalab.vm import check


def _spec(case: check.Case) -> RunSpec:
    params = {"threads": load_machine(case.machine).nr_pus, **case.params}
    return RunSpec.create(case.machine, case.workload, params=params, kernel="6.13", thp="never").with_config(case.config)


def test_the_measured_background_is_on_the_sleeping_cases_only():
    """Every layout's passive and oversubscribed cases carry their machine's measured background
    (one vCPU per node too, since threads take turns on a shared CPU: §10.3); bound and unbound
    ones, whose spinning threads the slowed preset would not spin as long as the guest's, none."""
    for machine, cpus in (("vm-4", 4), ("vm-8", 8), ("vm-4x2", 8), ("vm-2x4", 8)):
        suffix = "" if machine == "vm-4" else f"-{machine.removeprefix('vm-')}"
        assert check.CASES[f"sched-passive{suffix}"].background is check.GUEST_BACKGROUND[machine][cpus]
        assert check.CASES[f"sched-oversubscribed{suffix}"].background is check.GUEST_BACKGROUND[machine][2 * cpus]
        assert check.CASES[f"sched-bound{suffix}"].background is None
        assert check.CASES[f"sched-unbound{suffix}"].background is None


@pytest.mark.parametrize("name", ["sched-oversubscribed", "sched-oversubscribed-8"])
def test_on_one_vcpu_per_node_oversubscribed_threads_move_at_the_guests_speed(name):
    """Two threads per vCPU taking turns (docs/scheduler.md §9): at the preset's speed a barrier
    (0.14-0.22 ms) is far shorter than a slice, so each CPU runs its two threads one after the
    other, all CPUs alike, no CPU goes idle early and 1 thread of 8 or 16 moves (the case expects
    half). At the guest's speed (10-13 ms per barrier, beyond a 3 ms slice) with its background,
    every thread moves, more per barrier than the bound run's binding move, as in the guest.
    Seen (deterministic): 0.000125 migrations per thread per barrier without, 0.060 and 0.064 with;
    the guest 0.004-0.074 (§10)."""
    case = check.CASES[name]
    bound = check.sim_side(_spec(check.CASES[case.more_than or ""]))
    quiet = check.sim_side(_spec(case))
    busy = check.sim_side(_spec(case), case.background, case.interval_ms)
    reps = int(case.params["reps"])
    assert case.expect(quiet) is not None, quiet.threads
    assert case.expect(busy) is None, busy.threads
    assert busy.threads.migrations_per_thread_barrier(reps) > 10 * bound.threads.migrations_per_thread_barrier(reps), (bound.threads, busy.threads)


def test_the_background_is_the_guests_in_guest_seconds():
    bg = check.GuestBackground(barrier_s=0.015, agent_cost_s=0.1, kthread_hz=6.0, kthread_mean_s=0.7e-3)
    assert bg.engine(1000) == {"kthread_hz": 6.0, "kthread_mean_s": 0.7e-3, "daemon_hz": 0.0, "daemon_mean_s": 0.0,
                               "agent_period_s": 1.0, "agent_cost_s": 0.1}


def test_the_guest_speed_machine_runs_the_barrier_loop_that_many_times_slower():
    case = check.CASES["sched-bound-4x2"]
    spec = _spec(case).updated(noise=False)
    fast = sim.run(spec).doc["time_s"]
    m, w, placement, policies, config = spec.engine_inputs(check.guest_speed_machine("vm-4x2", 20.0))
    slow = sim.run(spec.bind_inputs(m, w, placement, policies, config)).doc["time_s"]
    assert 15.0 < slow / fast < 25.0, (fast, slow)


@pytest.mark.parametrize("name", ["sched-passive-4x2", "sched-oversubscribed-4x2", "sched-passive-2x4", "sched-oversubscribed-2x4"])
def test_with_the_guests_background_the_simulator_moves_sleeping_threads_across_nodes(name):
    """Without it (§6's estimates, a simulated barrier 25-30 times shorter than the guest's) a
    passive team that started evenly stays home and an oversubscribed one barely moves (§10.2);
    with the agent's samples and the kernel threads the guest ran, idle and newly-idle balancing
    pull threads across nodes, as the guest's sched_migrate_task trace shows (§10.3). Seen
    (deterministic): away 26.0 and 26.5 % without the background on the oversubscribed cases
    (``recent_used_cpu`` moves them inside a node at the preset's speed too), 21.2-55.6 % with it;
    with threads taking turns on a shared CPU (§9) the passive ``vm-2x4`` team moves 4 of 8 threads
    across (the guest 3-7 of 8 in eight runs), the others 8/8 and 16/16."""
    case = check.CASES[name]
    spec = _spec(case)
    quiet = check.sim_side(spec)
    busy = check.sim_side(spec, case.background, case.interval_ms)
    assert busy.threads.changed_node >= len(busy.threads.away_pct) // 3, busy.threads
    assert busy.threads.mean_away_pct > quiet.threads.mean_away_pct + 10.0, (quiet.threads, busy.threads)
    assert sum(busy.threads.nr_migrations) > 5 * max(1, sum(quiet.threads.nr_migrations)), (quiet.threads, busy.threads)
    # The first touch comes before the agent's first sample: still an even share per node.
    assert busy.after_init == [busy.total // len(busy.after_init)] * len(busy.after_init)
