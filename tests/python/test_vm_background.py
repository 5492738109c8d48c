"""The guest's background in ``numalab vm check``'s simulator side (docs/scheduler.md §10.3): the
sleeping cases carry the agent and kernel threads measured
in the guest, on the preset slowed to the guest's speed. Simulator only (deterministic: its
figures are fixed by the seed)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from numalab.runner import sim
from numalab.spec import RunSpec
from numalab.vm import check
from numalab.vm.guest_seen import GUEST_PER_BARRIER


#: The profile ``vm check`` simulates Debian's 6.1 guest with.
KERNEL = check.sim_kernel("6.1.0-56-amd64")


def _spec(case: check.Case, kernel: str = KERNEL) -> RunSpec:
    return check.sim_spec(case, kernel)


def test_the_measured_background_is_on_the_sleeping_cases_only():
    """Every layout's passive and oversubscribed cases carry their machine's measured background
    (one vCPU per node too, since threads take turns on a shared CPU: §10.3); bound and unbound
    ones, whose spinning threads the slowed preset would not spin as long as the guest's, none;
    those measured with QEMU alone on its cores with TCG's speed from there, per count of cores
    (§10.40, §10.43)."""
    idle, one_core = check.CONDITIONS["idle"].barrier_s, check.CONDITIONS["busy-loop"].barrier_s
    for machine, cpus in (("vm-4", 4), ("vm-8", 8), ("vm-4x2", 8), ("vm-2x4", 8)):
        suffix = "" if machine == "vm-4" else f"-{machine.removeprefix('vm-')}"
        for name, threads in ((f"sched-passive{suffix}", cpus), (f"sched-oversubscribed{suffix}", 2 * cpus)):
            bg = check.CASES[name].background
            speeds = tuple((cores, measured[name]) for cores, measured in ((2, idle), (1, one_core)) if name in measured)
            assert bg is not None and bg.speed_barriers_s == speeds
            assert replace(bg, speed_barriers_s=()) == check.GUEST_BACKGROUND[machine][threads]
        assert check.CASES[f"sched-bound{suffix}"].background is None
        assert check.CASES[f"sched-unbound{suffix}"].background is None


@pytest.mark.parametrize(("name", "kernel"), [("sched-oversubscribed", KERNEL), ("sched-oversubscribed", "6.13"),
                                              ("sched-oversubscribed-8", "6.13")])
def test_on_one_vcpu_per_node_oversubscribed_threads_move_at_the_guests_speed(name, kernel):
    """Two threads per vCPU taking turns (docs/scheduler.md §9): at the preset's speed a barrier
    (0.14-0.22 ms) is far shorter than a slice, so each CPU runs its two threads one after the
    other, all CPUs alike, no CPU goes idle early and 1 thread of 8 or 16 moves (the case expects
    half). At the guest's speed (10-13 ms per barrier, beyond 6.13's 2.25-3 ms slice) with its background,
    every thread moves, more per barrier than the bound run's binding move, as in the guest.
    Seen (deterministic, 2026-11-27, both runs on the guest-speed machine with one idle latency
    everywhere, as TCG's host memory is, §10.4): 0.000125 and 0.00025 migrations per thread per
    barrier without, 0.018 (vm-4, 24 times the bound run's 0.00075) and 0.0165 (vm-8, 4.7 times
    the bound run's 0.0035) with; 6.1 on vm-4 0.0091 (with the preset's remote latencies 0.039,
    0.033 and 0.033: a thread off its first-touch node kept its CPU busy, and busy CPUs pulled);
    the guest 0.004-0.074 (§10). vm-8 under 6.1: the next test. Since a newly idle CPU is not
    idle in its own group's statistics (§10.15: idle_cpu() is false before the switch to the idle
    task), vm-8 6.13 0.00925, 2.6 times the bound run's: its NUMA levels find the idle CPUs
    balanced more often. With the host model on one vCPU per node too (§10.16: the vCPUs take
    turns on the host's core and go idle as in the guest): vm-4 6.1 0.0221 (29 times the bound
    run's), 6.13 0.0839, vm-8 6.13 0.066 (19 times). Asserted: more than twice the bound run's,
    over seeds 1-4 since a BQL hold kept across its holder's switch-out (§10.54, 2026-11-28
    09:30 UTC): seed 1 alone is one draw of the model's spread, vm-8 6.13 seeds 1-4 0.006, 0.0148,
    0.0205, 0.0335 (mean 0.0187; before 0.00925, 0.00825, 0.0223, 0.013, mean 0.0132), vm-4 6.1
    0.0072 and 6.13 0.0133, against the bound runs' 0.0035 and 0.00075."""
    case = check.CASES[name]
    bound = check.sim_side(_spec(check.CASES[case.more_than or ""], kernel))
    quiet = check.sim_side(_spec(case, kernel))
    busy = [check.sim_side(replace(_spec(case, kernel), seed=s), case.background, case.interval_ms) for s in range(1, 5)]
    reps = int(case.params["reps"])
    assert case.expect(quiet) is not None, quiet.threads
    assert case.expect(busy[0]) is None, busy[0].threads
    mean = sum(b.threads.migrations_per_thread_barrier(reps) for b in busy) / len(busy)
    assert mean > 2 * bound.threads.migrations_per_thread_barrier(reps), (bound.threads, mean)


def test_on_vm_8_cfs_slices_longer_than_a_barriers_work_move_fewer_threads_than_eevdf():
    """vm-8's oversubscribed case at the guest's speed, 6.1 against 6.13 (docs/scheduler.md §14).
    With 8 vCPUs update_sysctl()'s factor is 4: 6.1's sched_slice() gives each of two threads 12 ms
    (24 ms latency), more than its share of a 10-13 ms barrier, so check_preempt_tick() does not
    end a turn before the thread reaches the barrier, and a woken thread preempts only after
    wakeup_gran() (4 ms); 6.13's EEVDF turns are 3 ms under RUN_TO_PARITY (2026-11-26: swapping
    only those two rules into the 6.1 profile gave 6.13's figures, so the CFS rules, not the
    balancer's, made the difference). Seen (deterministic, 2026-11-27, both runs on the
    guest-speed machine with one idle latency everywhere, §10.4): 6.1 0.00325 migrations per
    thread per barrier, 5 of 16 threads change node, 6.13 0.0275 (16 of 16), the bound run
    0.0035; the guest 0.017-0.034 (§10, §10.4). Under 6.1 the simulator stays below the guest's
    range and short of the case's own expectation (half the team moves): without the host that
    leaves the guest's vCPUs idle (§10.5), which with one vCPU per node is not modelled, a CPU
    going idle mostly finds the other CPUs running one thread each (nothing to pull), and the
    waiting thread of a CPU running two ran within sysctl_sched_migration_cost (task_hot(); a
    newly idle balance never counts a failure, so cache_nice_tries never lets it go). The
    kernel's imb_numa_nr (1 on one-CPU nodes; it was 5, the nodes of the first NUMA level) does
    not change how many moves that leaves (13 either way): adjust_numa_imbalance() sees a
    one-CPU group of 2 tasks as an imbalance of 2, which NUMA_IMBALANCE_MIN keeps whatever
    imb_numa_nr is; the 13 moves fell on 9 threads before and on 5 now (docs/scheduler.md §10.6).
    That was without the host model; with it (vm-8 too since §10.16) the host leaves vCPUs
    unrun, their threads reach each barrier one after the other and idle vCPUs pull: 6.1 0.0325
    (14 of 16, inside the guest's range), 6.13 0.066 (16 of 16), the order of the kernels kept
    (2026-11-27, 6.13 twice 6.1's). With TCG's slowdown from the idle host (§10.40; a 17.3 ms
    simulated barrier) every thread changes node under both, 6.13 still moving three times as often.
    Since a BQL hold kept across its holder's switch-out (§10.54, 2026-11-28 09:30 UTC) the kernels
    are compared over seeds 1-4: seed 1 alone turned over (6.1 0.01125, 6.13 0.006), the means
    keep the order, 6.1 0.0099 (seeds 0.01125, 0.0105, 0.00775, 0.01) and 6.13 0.0187, 1.9 times
    (before: 0.00675 and 0.0132, 1.95 times); seed 1 changes node on 9 and 10 threads."""
    case = check.CASES["sched-oversubscribed-8"]
    reps = int(case.params["reps"])
    bound = check.sim_side(_spec(check.CASES[case.more_than or ""], "6.1")).threads.migrations_per_thread_barrier(reps)

    def seeds(kernel: str) -> list[check.Side]:
        return [check.sim_side(replace(_spec(case, kernel), seed=s), case.background, case.interval_ms) for s in range(1, 5)]

    cfs, eevdf = seeds("6.1"), seeds("6.13")
    assert case.expect(eevdf[0]) is None, eevdf[0].threads
    mean_cfs, mean_eevdf = (sum(x.threads.migrations_per_thread_barrier(reps) for x in xs) / 4 for xs in (cfs, eevdf))
    assert bound < mean_eevdf, (bound, mean_eevdf)
    assert mean_eevdf > 1.5 * mean_cfs, (mean_cfs, mean_eevdf)
    assert eevdf[0].threads.changed_node >= cfs[0].threads.changed_node


def test_the_background_is_the_guests_in_guest_seconds():
    bg = check.GuestBackground(barrier_s=0.015, agent_cost_s=0.1, kthread_hz=6.0, kthread_mean_s=0.7e-3)
    assert bg.engine(1000) == {"kthread_hz": 6.0, "kthread_mean_s": 0.7e-3, "daemon_hz": 0.0, "daemon_mean_s": 0.0,
                               "agent_period_s": 1.0, "agent_cost_s": 0.1}
    # A numa_maps read measured apart goes with the guest's budget (vm/guest.py runs the agent
    # with --maps-budget-pct=100): the simulator adds it to each sample that reads it.
    maps = replace(bg, agent_maps_cost_s=0.005).engine(1000)
    assert (maps["agent_cost_s"], maps["agent_maps_cost_s"], maps["agent_maps_budget"]) == (0.1, 0.005, 1.0)
    # The first sample's extra where measured apart (§10.38): the simulator's first periodic run
    # only is longer by it; where not, the engine is given none (its default, 0).
    first = replace(bg, agent_first_extra_s=0.03).engine(1000)
    assert (first["agent_cost_s"], first["agent_first_extra_s"]) == (0.1, 0.03)
    assert "agent_first_extra_s" not in maps


def test_the_guest_speed_machine_runs_the_barrier_loop_that_many_times_slower():
    case = check.CASES["sched-bound-4x2"]
    spec = _spec(case).updated(noise=False)
    fast = sim.run(spec).doc["time_s"]
    m, w, placement, policies, config = spec.engine_inputs(check.guest_speed_machine("vm-4x2", 20.0))
    slow = sim.run(spec.bind_inputs(m, w, placement, policies, config)).doc["time_s"]
    assert 15.0 < slow / fast < 25.0, (fast, slow)


def _moves_across_nodes(spec: RunSpec, *args, **kwargs) -> int:
    """The simulator's moves of a thread to another node (``--explain-sched``'s events)."""
    doc = check.sim_doc(spec.updated(explain_sched=True), *args, **kwargs)
    return sum(e["from_cpu"] is not None and e["from_node"] != e["to_node"] for e in doc.get("sched_events", []))


@pytest.mark.parametrize(("name", "kernel"), [(n, "6.13") for n in ("sched-passive-4x2", "sched-oversubscribed-4x2", "sched-passive-2x4",
                                                                  "sched-oversubscribed-2x4")])
def test_with_the_guests_background_the_simulator_moves_sleeping_threads_across_nodes(name, kernel):
    """Without it (§6's estimates, a simulated barrier 25-30 times shorter than the guest's) a
    passive team that started evenly stays home and an oversubscribed one barely moves (§10.2);
    with the agent's samples and the kernel threads the guest ran, idle and newly-idle balancing
    pull threads across nodes, as the guest's sched_migrate_task trace shows (§10.3). Seen
    (deterministic): away 26.0 and 26.5 % without the background on the oversubscribed cases
    (``recent_used_cpu`` moves them inside a node at the preset's speed too), 18.6-52.5 % with it
    (2026-11-27, one idle latency everywhere, §10.4; 21.2-74.8 % with the preset's remote
    latencies); the passive teams move 4 of 8 threads across (the guest 3-7 of 8 in eight runs),
    the oversubscribed 16/16. These figures are 6.13's; under 6.1 (the guest's own kernel)
    oversubscribed-2x4 holds (15 of 16 threads change node, 13.9 % away; 13 of 16, 29 %, with the
    preset's latencies), the passive ones are the next test.
    Since a release wakes its sleepers in the order they slept (``futex_wake()``'s FIFO,
    2026-11-27 §10.4): passive-2x4 under 6.13 3 of 8 threads change node, 5.5 % away (18.6 %
    before), passive-4x2 4/8, 19.2 %, the oversubscribed 16/16, 33.0 and 43.2 %; hence a 5-point
    margin over the quiet side (0.0 % on all four).
    The background's own effect: without the host model (§10.5), which also changes the first
    touch (the vCPUs take turns on the host).
    With imb_numa_nr as build_sched_domains() sets it (1 on nodes of 2 or 4 CPUs: an eighth of
    the node, at least 1; docs/scheduler.md §3) the oversubscribed teams' forks no longer split
    evenly: a fork leaves the parent's node as soon as the parent's node runs a task and has
    fewer idle CPUs (local running + 1 = 2 > 1), and past the vCPUs' count the split follows the
    nodes' loads (quiet: 3/5/4/4 threads on vm-4x2, 7/9 on vm-2x4). A node holding more threads
    than twice its vCPUs passes one between its vCPUs at every barrier (quiet vm-2x4: one thread
    479 times, inside its node), so the moves compared are those across nodes (quiet 1 and 5,
    busy 283 and 266; passive 0 and 15, 0 and 10). Under 6.1 (the guest's kernel) without the
    host model vm-2x4 oversubscribed no longer moves its team (2 of 16, 3 moves across nodes):
    6.1's 12 ms slices keep a CPU's two threads back to back (the next test); the 15 of 16 seen
    before came from one pile-up in that run's course (4 threads runnable on one vCPU at 1.39 s,
    then 80 idle pulls across nodes), which the new fork order does not meet; with the host model
    it moves 16 of 16, as the guest (test_with_the_host_running_the_vcpus_...).
    Since a balanced newly idle balance resets nr_balance_failed (load_balance()'s out_balanced,
    docs/scheduler.md §10.8), periodic failures no longer pile up past cache_nice_tries and
    release cache-hot threads: passive-2x4 moves 4 times across nodes with the background (0
    quiet; 2 of 8 threads, 10.8 % away), where it moved 15, so the background is asserted to
    move threads across nodes where the quiet run moves none, not five times as often.
    With rebalance_domains()'s SD_SERIALIZE lock held for the background's balance time
    (docs/scheduler.md §10.22; 6.13's sched_balance_running), passive-2x4 under 6.13 has 2 of 8
    threads change node, 2.55 % away (14.0 % before; its 4 moves across nodes stay),
    passive-4x2 4/8, 27.2 %, the oversubscribed 11/16 and 15/16, 32.5 and 38.3 % (held for the
    guest's typical balance; 9/16 and 16/16, 22.2 and 35.8 % for its newly idle maximum); hence a
    2-point margin over the quiet side (0.0, 4.85, 0.0 and 12.95 %).
    With the agent's first sample one interval after the start and its later ones on that grid
    (docs/scheduler.md §10.31; 22:03 UTC): passive-2x4 2 of 8 threads change node, 4 moves across
    nodes, but each comes back at once: 0.075 % away; passive-4x2 5/8, 37.9 %, 14 moves across;
    the oversubscribed 14/16 and 14/16, 31.6 and 31.4 %, 39 and 35 across (quiet 0.0, 4.85, 0.0
    and 6.15 %, 0, 1, 0, 1 across). The time away is asserted above the quiet side's, by 2
    points where the team stays away (every case but passive-2x4)."""
    case = check.CASES[name]
    spec = _spec(case, kernel)
    quiet = check.sim_side(spec)
    busy = check.sim_side(spec, case.background, case.interval_ms, host=False)
    assert busy.threads.changed_node >= len(busy.threads.away_pct) // 3, busy.threads
    margin = 0.0 if name == "sched-passive-2x4" else 2.0
    assert busy.threads.mean_away_pct > quiet.threads.mean_away_pct + margin, (quiet.threads, busy.threads)
    across = (_moves_across_nodes(spec), _moves_across_nodes(spec, case.background, case.interval_ms, host=False))
    assert across[0] == 0 < across[1] if "threads" not in case.params else across[1] > 5 * max(1, across[0]), across
    if "threads" not in case.params:
        # One thread per vCPU (passive): each fork takes the node with more idle CPUs unless the
        # idle-CPU difference is 0, so the team alternates between the nodes, an even share each;
        # the first touch comes before the agent's first sample.
        assert busy.after_init == [busy.total // len(busy.after_init)] * len(busy.after_init)


@pytest.mark.parametrize("name", ["sched-passive-4x2", "sched-passive-2x4"])
def test_under_6_1_cfs_wakeup_preemption_keeps_woken_threads_home(name):
    """The layout where 6.1's simulator moves threads across nodes far less than 6.13's and
    than the guest (docs/scheduler.md §10, §14; oversubscribed-4x2 was another until the host
    running the vCPUs was modelled: the next test). The background still makes threads move, mostly
    within their node. The rules that differ are CFS's: check_preempt_wakeup() lets a woken
    thread preempt the running task (the agent, a kernel thread, a sibling) once that task leads
    its vruntime by wakeup_gran() (4 ms on 8 vCPUs; place_entity() credits a sleeper up to half
    the 24 ms latency), where 6.13's RUN_TO_PARITY makes it wait out the running slice, a wait
    in which an idle CPU of another node may pull it; and sched_slice()'s 12 ms turns keep an
    oversubscribed CPU's two threads back to back. Swapping EEVDF's wake-up rule alone into the
    6.1 profile gives 38.8 % away on oversubscribed-4x2, both rules 6.13's figures.
    Seen (deterministic): oversubscribed-4x2 6.1 5/16 threads changed node, 0.4 % away (6.13
    16/16, 45.7 %; the guest 62-66 %), passive-2x4 1/8, 0.0 % (6.13 4/8, 21.2 %; the guest
    19-38 %); 2026-11-27, with util_est and one idle latency everywhere (§10.4): passive-2x4 0/8,
    0.0 % (6.13 4/8, 18.6 %), passive-4x2 2/8, 0.2 % (6.13 4/8, 19.2 %; with the preset's remote
    latencies 1/8, 0.1 % and 8/8, 74.8 %). The guest's moves on these layouts are not explained by the modelled background.
    Woken in sleep order (``futex_wake()``'s FIFO, §10.4): passive-2x4 6.1 0/8, 0.0 % (6.13 3/8,
    5.5 %), passive-4x2 2/8, 0.2 % (6.13 4/8, 19.2 %).
    With imb_numa_nr 1 (build_sched_domains(): an eighth of the node, at least 1) 6.1 also pulls
    across nodes once on passive-2x4: at 0.34 s a vCPU of node 0, running 1 thread, goes newly
    idle while node 1 runs 3; calculate_imbalance() takes the task difference 2 (prefer_sibling
    at the first NUMA level), and adjust_numa_imbalance(2, 1 + 1, 1) keeps it (2 > imb_numa_nr),
    where imb_numa_nr 2 zeroed it: 1 task moves, and an idle pull sends another back. Those two
    stay away most of the run (6.1 2/8 threads, 19.2 % away; 6.13 4/8, 14.1 %), so the time away
    no longer orders the kernels; the count of threads and of migrations does (6.1 25 and 28
    migrations against 6.13's 75 and 45).
    The CFS rules' own effect: without the host model (§10.5), with which 6.1 moves 6-8 of 8.
    With a balanced newly idle balance resetting nr_balance_failed (§10.8) 6.13's passive-2x4
    moves 2 of 8 threads (42 migrations, 10.8 % away), as many as 6.1's 2 (25, 19.2 %): on that
    layout the kernels now differ in how often threads move, not in how many leave their node.
    With the guest's 6.1.192 NI_RANDOM (§10.15) 6.1's newly idle balance skips MC on the die's
    throw and balances the NUMA level: passive-4x2 5/8 threads, 20 migrations, 45.0 % away, until
    the newly idle CPU no longer counted itself idle (idle_cpu(), §10.15): 1/8, 13, 0.1 % (6.13
    4/8, 37, 22.5 %). On passive-2x4, whose NUMA level spreads tasks to the sibling node
    (prefer_sibling: "busiest->sum_nr_running > local->sum_nr_running + 1" forces the balance,
    whatever the idle CPUs), 6.1 moves 7/8 threads, 48 migrations, 10.4 % away (6.13 3/8, 40,
    14.0 %): there the kernels' order was reversed. With the agent's own ``util_est`` counted in
    its vCPU's utilisation (docs/scheduler.md §10.30) passive-2x4 6.1 1/8 threads, 32
    migrations, 0.2 % away (6.13 2/8, 62, 2.6 %), passive-4x2 0/8, 11, 0.0 % (6.13 3/8, 28,
    19.4 %): the order is 6.13's above 6.1's on both again, asserted as such."""
    case = check.CASES[name]
    cfs, eevdf = _spec(case, KERNEL), _spec(case, "6.13")
    quiet = check.sim_side(cfs).threads
    busy = check.sim_side(cfs, case.background, case.interval_ms, host=False).threads
    other = check.sim_side(eevdf, case.background, case.interval_ms, host=False).threads
    assert sum(busy.nr_migrations) > sum(quiet.nr_migrations), (quiet, busy)
    assert busy.changed_node <= other.changed_node, (busy, other)
    assert sum(busy.nr_migrations) < sum(other.nr_migrations), (busy, other)


#: Cases whose time away falls short of the guest's (19-38 % on passive-2x4) for a stated reason,
#: asserted as stated. Since the NOHZ balance waits for the host to run the kicked vCPU
#: (docs/scheduler.md §10.9) the simulated idle vCPUs barely pull (kicks mostly find the kicked
#: vCPU busy by the time the host runs it) and the moves are newly idle ones and wake-ups: the
#: team moves as often as the guest's (0.051 per thread per barrier) but 5 of 8 threads, 5.4 %
#: of the time away. The guest's idle pulls come from what the model lacks (idle vCPUs keeping
#: their tick, or QEMU running two vCPUs at once on two host cores). Empty since a running vCPU
#: thread waits for QEMU's BQL at each guest tick (§10.13): passive-2x4 16.0 % away (6/8 changed
#: node; 11.9 % before). NI_RANDOM alone (§10.15) made it 14.6 % (5/8), with §10.14's QEMU main
#: loop 23.2 % (8/8). Since a balance the host stops costs one of its waits, not their mean
#: (§10.28), seed 1's passive-2x4 is 12.8 % away (6/8 changed node; seeds 1-8 21.6 %, 1-4 14.0
#: %): the stops' draws move seed 1's team less; asserted below 15 % until that changes. Empty
#: again since the agent's first sample comes one interval after the start (§10.31): 23.3 % away
#: (5/8 changed node, 0.0425 per thread per barrier).
AWAY_SHORT: dict[str, float] = {}


@pytest.mark.parametrize("name", sorted(name for name in GUEST_PER_BARRIER if name.endswith(("-4x2", "-2x4"))))
def test_with_the_host_running_the_vcpus_6_1_moves_the_team_within_a_factor_of_two_of_the_guest(name):
    """The host model (``check.GUEST_HOST``, ``numalab_sim::vhost``, docs/scheduler.md §10.5):
    QEMU's vCPU threads on one host core, each kept for a host tick, so the threads reach each
    barrier one after the other as their vCPUs get the host and the others' vCPUs halt; idle
    balancing and wake-ups onto idle vCPUs then move them, as in the guest (§10.4). Nothing of it
    is fitted to the guest's moves. Seen (deterministic, 6.1, with the host's EEVDF: a halted
    vCPU's thread keeps its lag and its wake-up may preempt, 2026-11-27 §10.5; one idle latency
    everywhere, §10.4): oversubscribed-4x2 0.353 migrations per thread per barrier (16/16 changed
    node), passive-4x2 0.0183 (8/8), oversubscribed-2x4 0.327, passive-2x4 0.040; without the
    host 0.0070, 0.00625, 0.049, 0.0060. With the preset's remote latencies 0.363, 0.0243, 0.337,
    0.044, and before that 0.374, 0.0293 (7/8), 0.347, 0.0415.
    With the earlier least-runtime host 0.148 (15/16), 0.0135 (3/8), 0.177, 0.050, and before a
    thread woken onto a halted vCPU waited for the host's next run of it (the woken thread's turn
    began at the wake-up, so the halted vCPU looked busy to the balancer) 0.120, 0.101 (5/8),
    0.206, 0.0498. Since a release wakes its sleepers in the order they slept (``futex_wake()``'s
    FIFO, §10.4): 0.3975 (16/16, 40.5 % away), 0.0225 (6/8, 16.2 %), 0.393, 0.0493 (8/8, 30.1 %);
    without the host 0.0129, 0.0063, 0.039, 0.0075. With imb_numa_nr from the node as
    build_sched_domains() sets it (1 here, was 3 and 2) and NUMA_IMBALANCE_MIN in
    adjust_numa_imbalance() (§10.6): 0.27, 0.0255 (7/8), 0.3596, 0.05075; without the host 0.012,
    0.007, 0.0119, 0.00625. Since a running vCPU thread waits for QEMU's BQL at each guest tick
    (§10.13): 0.2781, 0.0248, 0.4159, 0.0668 (16.0 % away). With the guest kernel's NI_RANDOM
    (§10.15): 0.2412 (16/16), 0.0205 (6/8), 0.3574, 0.032 (5/8, 14.6 % away); without the host
    0.0069, 0.005, 0.0349, 0.012; and a newly idle CPU not idle in its own statistics (§10.15):
    0.2392, 0.043 (8/8), 0.3574, 0.032; without the host 0.0069, 0.0033, 0.0349, 0.012; with
    §10.14's QEMU main loop 0.2106, 0.043 (7/8), 0.328, 0.0675 (7/8, 23.2 % away). Asserted:
    within a factor of two of the guest's runs (``GUEST_PER_BARRIER``), more than the side without the host, and a quarter
    of the team or more changing node, over 15 % of the time away (passive-2x4: see
    ``AWAY_SHORT``)."""
    case = check.CASES[name]
    reps = int(case.params["reps"])
    spec = _spec(case, KERNEL)
    host = check.threads_of(check.sim_doc(spec, case.background, case.interval_ms))
    without = check.threads_of(check.sim_doc(spec, case.background, case.interval_ms, host=False))
    per_barrier = host.migrations_per_thread_barrier(reps)
    low, high = GUEST_PER_BARRIER[name]
    assert low / 2 < per_barrier < 2 * high, host
    assert per_barrier > without.migrations_per_thread_barrier(reps), (without, host)
    assert host.changed_node >= len(host.away_pct) // 4, host
    if name in AWAY_SHORT:
        assert 0.0 < host.mean_away_pct < AWAY_SHORT[name], f"the known shortfall is gone: remove {name} from AWAY_SHORT; {host}"
    else:
        assert host.mean_away_pct > 15.0, host


@pytest.mark.parametrize("name", ["sched-passive", "sched-passive-8", "sched-passive-4x2"])
def test_the_host_is_simulated_on_every_guest_with_its_background(name):
    """The same host runs every guest's vCPUs (docs/scheduler.md §10.16): one vCPU per node
    (vm-4, vm-8) as several (vm-4x2), so a sleeping case's side differs with and without the
    host model (the vCPUs take turns on its core, the barrier is longer); without the guest's
    background (the bound and unbound cases, the quiet runs) there is no host model to leave out."""
    case = check.CASES[name]
    spec = _spec(case, KERNEL)
    assert check.sim_doc(spec, case.background)["time_s"] != check.sim_doc(spec, case.background, host=False)["time_s"]
    assert check.sim_doc(spec)["threads"] == check.sim_doc(spec, host=False)["threads"]


def test_the_guests_newly_idle_balancing_cost_reaches_the_engine_and_cuts_newly_idle_balances_short(monkeypatch: pytest.MonkeyPatch):
    """``GuestBackground.newidle_lb_cost_s`` (the guest's ``max_newidle_lb_cost`` per level,
    docs/scheduler.md §10.4) goes to the engine only when measured; on ``vm-4`` oversubscribed
    (costs 3.0 and 0.78 ms under TCG) 6.1's newly idle cut-off (``newidle_balance()``: ``avg_idle
    < curr_cost + max_newidle_lb_cost``) stops newly idle balances short of the higher levels, which
    nothing stops without the cost. It used to take newly idle pulls outright and leave them to
    idle balancing (2026-11-27: 208 newly idle and 17 idle-CPU pulls without the cost, 49 and 99
    with; with util_est and a busy CPU's interval a jiffy shorter, §10.4, 147 and 23 without, 74
    and 97 with; with one idle latency everywhere, §10.4, 33 and 11 without, 3 and 48 with; since
    NI_RANDOM, §10.15, 9 and 17 without, 0 and 24 with). Since the host model runs vm-4 too
    (§10.16) the cut-off skips few balances and the pulls barely differ: seed 1 90 and 55 without,
    81 and 76 with, seeds 1-8 735 and 508 without, 770 and 505 with; with the idle entry after
    background work (§10.19) seed 1 90 and 55 without, 101 and 83 with, seeds 1-8 835 and 591
    without, 839 and 568 with, 133 of the 23,264 calls cut off: 110 at the lowest attached level
    (``NUMA16``, ``newidle_balance()``'s ``avg_idle`` test on ``this_rq->sd``; counted as a higher
    level's break until §10.21, the model's ``MC`` of one CPU coming first) and 23 at ``NUMA22``
    (seed 1: 14 and 4). Since the cost is the kernel's state (§10.26: the value at the command's
    start, raised to each balance's time, decayed; ``curr_cost`` each balance's time, not the
    maximum), a 3 / 1 ms start cuts 14 of seed 1's 2,883 calls off at ``NUMA16`` and none at
    ``NUMA22``; without a start none, until the host stopping a vCPU inside a newly idle balance
    (§10.27) raised a level from 0 to the balance's time plus the host's wait: now 5 cut off at
    ``NUMA16`` and 2 at ``NUMA22`` after 5 stopped balances (the 3 / 1 ms start: still 14 and 0,
    6 stopped; 2026-11-27 20:11 UTC). A stopped balance costing one of the host's waits rather
    than their mean (§10.28; up to several ms): 79 and 1 after 6 stopped (the 3 / 1 ms start:
    124 and 1, 9 stopped; 21:12 UTC). With the agent's own ``util_est`` (§10.30): 4 and 1
    after 6 stopped (the 3 / 1 ms start: 194 and 2, 9 stopped; 21:28 UTC). With the agent's
    first sample one interval after the start (§10.31): 3 and 27 after 8 stopped (the 3 / 1 ms
    start: 13 and 0, 9 stopped; 22:03 UTC). With QEMU's big lock in the host model (§10.37): 2 and
    1 after 7 stopped (2026-11-28 00:05 UTC). With TCG's slowdown from the idle host (§10.40):
    none cut off after 7 stopped. With a run queue per host core (§10.41; the slowdown comes from
    the two-core idle host): 2 cut off after 7 stopped (01:05 UTC). With the slowdown from the
    one-core host's own runs (§10.47): 633 and 1 after 6 stopped (02:55 UTC). With the host's
    1.4 ms request (its own ``se.slice``, §10.50): 464 and 18 after 8 stopped (2026-11-28 05:26 UTC).
    With a BQL hold kept across its holder's switch-out (§10.54): 7 and 1 after 9 stopped
    (2026-11-28 09:30 UTC). With a device write's hold kept across the wake-up preemption it
    causes (§10.58): none cut off after 6 stopped (12:10 UTC). With the main loop's hold at 16 µs
    (§10.58): 39 and 2 after 11 stopped (12:36 UTC). With a vCPU's halt inside a round giving up its
    host core there (§10.60): none cut off after 7 stopped (13:03 UTC)."""
    from dataclasses import replace

    from numalab.vm import sched_trace

    bg = check.GuestBackground(barrier_s=0.015, agent_cost_s=0.1, kthread_hz=6.0, kthread_mean_s=0.7e-3,
                               newidle_lb_cost_s=(3e-3, 1e-3))
    assert bg.engine(1000)["newidle_lb_cost_s"] == [3e-3, 1e-3]
    assert "newidle_lb_cost_s" not in replace(bg, newidle_lb_cost_s=()).engine(1000)
    case = check.CASES["sched-oversubscribed"]
    assert case.background is not None and case.background.newidle_lb_cost_s == check.NEWIDLE_COST_4_OVER
    monkeypatch.setitem(check.CASES, "sched-oversubscribed", replace(case, background=replace(case.background, newidle_lb_cost_s=(3e-3, 1e-3))))
    with_cost = sched_trace.sim_sched("sched-oversubscribed").newidle_gate
    monkeypatch.setitem(check.CASES, "sched-oversubscribed", replace(case, background=replace(case.background, newidle_lb_cost_s=())))
    without = sched_trace.sim_sched("sched-oversubscribed").newidle_gate
    assert with_cost["avg_idle"] > without["avg_idle"], (with_cost, without)
    # Without a start only the host's stops raise the cost: as measured.
    assert (without["avg_idle"], without["cost_break"], without.get("host_stopped", 0)) == (0, 0, 7), without


def test_the_guests_share_of_stopped_ticks_reaches_the_engine_and_idle_cpus_balance_at_their_own_ticks():
    """Each sleeping case carries the guest's measured share of the idle loop's tries that
    stopped the tick (``check.TICK_STOP_*``, docs/scheduler.md §10.10). An idle CPU keeps its tick
    to the next jiffy and balances itself there (``idle-tick-balance``), out of
    ``nohz.idle_cpus_mask`` until a try stops it; taken as tickless (no share) it has no tick of
    its own, and only the NOHZ balance (``idle-balance``) balances it. 2026-11-27: 13 own-tick
    pulls and 10 NOHZ ones on ``vm-4`` oversubscribed with the share, 0 and 34 without (with the
    host model on vm-4 too, §10.16: 70 and 6 with the share, 0 and 80 without)."""
    from dataclasses import replace

    bg = check.GuestBackground(barrier_s=0.015, agent_cost_s=0.1, kthread_hz=6.0, kthread_mean_s=0.7e-3)
    assert "tick_stop_share" not in bg.engine(1000)
    assert replace(bg, tick_stop_share=0.9).engine(1000)["tick_stop_share"] == 0.9
    for name, case in check.CASES.items():
        if case.sched and case.background is not None:
            assert case.background.tick_stop_share is not None and 0.8 < case.background.tick_stop_share <= 1.0, name
    case = check.CASES["sched-oversubscribed"]

    def pulls(share: float | None) -> dict[str, int]:
        spec = check.sim_spec(case)
        doc = check.sim_doc(spec.updated(explain_sched=True), replace(case.background, tick_stop_share=share), case.interval_ms)
        out: dict[str, int] = {}
        for e in doc["sched_events"]:
            if e["from_cpu"] is not None:
                out[e["path"]] = out.get(e["path"], 0) + 1
        return out

    tickless, ticking = pulls(None), pulls(case.background.tick_stop_share)
    assert tickless.get("idle-tick-balance", 0) == 0 and tickless["idle-balance"] > 0, tickless
    assert ticking["idle-tick-balance"] > 0, ticking


def _host_cores(doc: dict) -> tuple[float, float]:
    """The host model's QEMU threads (vCPUs and main loop) and its other threads, in host cores
    over the run (as ``vm check --moves`` sums QEMU's threads' shares)."""
    run_s = float(doc["time_s"])
    qemu = sum(float(c["host_s"]) for c in doc["sched_cpus"]) + float((doc.get("sched_host_main_loop") or {}).get("host_s", 0.0))
    return qemu / run_s, sum(doc.get("sched_host_others_s", [])) / run_s


def test_a_named_host_is_the_one_modelled_with_its_cores_and_its_other_thread():
    """``check.HOSTS`` (docs/scheduler.md §10.18), on ``vm-4`` passive: ``one-core`` is
    ``GUEST_HOST`` (QEMU's threads together at most one core); ``two-cores`` gives them more than
    1.5 (the guest's got 1.73-1.88 on the idle host); ``two-cores-loop``'s always-runnable thread
    takes host time from them, the two cores never overcommitted."""
    case = check.CASES["sched-passive"]
    spec = _spec(case, KERNEL).updated(explain_sched=True)
    default = check.sim_doc(spec, case.background, case.interval_ms)
    one = check.sim_doc(spec, case.background, case.interval_ms, check.HOSTS["one-core"])
    two = _host_cores(check.sim_doc(spec, case.background, case.interval_ms, check.HOSTS["two-cores"]))
    loop = _host_cores(check.sim_doc(spec, case.background, case.interval_ms, check.HOSTS["two-cores-loop"]))
    assert one == default
    # The host's last round may end a little after the run's last thread (1e-3 of the run).
    qemu, other = _host_cores(one)
    assert qemu <= 1.001 and other == 0.0, (qemu, other)
    assert two[0] > 1.5 and two[1] == 0.0, two
    assert loop[1] > 0.2 and loop[0] < two[0] and loop[0] + loop[1] <= 2.001, (loop, two)


def test_the_host_models_idle_time_is_all_split_into_its_classes():
    """``sched_host_idle`` (docs/scheduler.md §10.46, compared with ``bench/host_idle.py``'s split
    of the measured host): its classes (a thread queued while a core idles; none queued, by the
    vCPUs halted) add up to the cores QEMU's threads leave idle, and with four vCPUs a class's
    index never passes four."""
    case = check.CASES["sched-passive"]
    spec = _spec(case, KERNEL).updated(explain_sched=True)
    doc = check.sim_doc(spec, case.background, case.interval_ms, check.HOSTS["two-cores"])
    qemu, other = _host_cores(doc)
    idle = doc["sched_host_idle"]
    split = (float(idle["queued_s"]) + sum(idle["none_queued_s_by_halted"])) / float(doc["time_s"])
    assert len(idle["none_queued_s_by_halted"]) == 5 and other == 0.0
    # The host's last round may end a little after the run's last thread (1e-3 of the run).
    assert split > 0.0 and abs(qemu + split - 2.0) < 2e-3, (qemu, split)


def test_the_wake_chain_counts_each_sleepers_wake_up_once_with_ordered_quantiles():
    """``sched_wake_chain`` (docs/scheduler.md §10.48, ``bench/vm_idle_spells.py model`` beside
    the guest's ``sched_waking`` to switch-in): on ``vm-4`` passive, per wake-up of a sleeping
    team thread, the time until it runs, the host's wait to run its vCPU included. Those onto a
    halted vCPU are a part of all, split by what gave the vCPU a core; the quantiles are ordered,
    the tails nested, no wait is shorter than the wake-up's own latency or longer than the run;
    without ``explain_sched`` it is left out."""
    case = check.CASES["sched-passive"]
    spec = _spec(case, KERNEL)
    doc = check.sim_doc(spec.updated(explain_sched=True), case.background, case.interval_ms, check.HOSTS["two-cores"])
    chain = doc["sched_wake_chain"]
    everyone, halted = chain["all"], chain["onto_halted"]
    assert 0 < halted["n"] <= everyone["n"], chain
    for d in (everyone, halted):
        assert 5e-6 <= d["median_s"] <= d["p90_s"] <= d["p99_s"] <= d["max_s"] <= float(doc["time_s"]), d
        assert d["over_4ms"] <= d["over_2ms"] <= d["n"], d
    assert halted["over_2ms"] <= everyone["over_2ms"] and halted["max_s"] <= everyone["max_s"], chain
    # Each wake-up onto a halted vCPU is put under exactly one thing that gave its vCPU a core
    # (docs/scheduler.md §10.52).
    by = chain["onto_halted_by_freed"]
    assert set(by) == {"first_plan", "runner_halted", "main_loop", "bql", "preempted", "other"}, by
    assert sum(d["n"] for d in by.values()) == halted["n"], by
    # Its barriers' releases wake the three sleepers at one time; per release the k-th to run
    # waited no longer than the (k+1)-th, so each place's quantiles are no lower than the last's.
    order = chain["by_order"]
    assert chain["release_size"] == 3 and len(order) == 3, chain
    assert 0 < chain["releases"] * 3 <= everyone["n"], chain
    for a, b in zip(order, order[1:]):
        assert a["p10_s"] <= b["p10_s"] and a["median_s"] <= b["median_s"] and a["p90_s"] <= b["p90_s"], order
    assert "sched_wake_chain" not in check.sim_doc(spec, case.background, case.interval_ms, check.HOSTS["two-cores"])


def test_the_host_spells_account_for_each_vcpu_threads_runs_and_waits():
    """``sched_host_spells`` (docs/scheduler.md §10.51, ``bench/host_trace.py model`` beside the
    measured host's ``report``): on ``vm-4`` passive, per vCPU thread its runs add up to the host
    time it received (less the run still open at the end), its waits after a preemption are those
    ``host_preempted_waits`` counts (less any its vCPU halted before running again), the pooled
    counts are the threads' sums, the quantiles ordered and the tails nested; without
    ``explain_sched`` it is left out."""
    case = check.CASES["sched-passive"]
    spec = _spec(case, KERNEL)
    doc = check.sim_doc(spec.updated(explain_sched=True), case.background, case.interval_ms, check.HOSTS["two-cores"])
    sp = doc["sched_host_spells"]
    assert len(sp["vcpus"]) == len(doc["sched_cpus"]) == 4
    for c, cpu in zip(sp["vcpus"], doc["sched_cpus"]):
        ran = c["run"]["mean_s"] * c["run"]["n"]
        assert float(cpu["host_s"]) - 0.01 < ran <= float(cpu["host_s"]) + 1e-9, (ran, cpu["host_s"])
        assert 0 < c["preempted"]["n"] <= int(cpu["host_preempted_waits"]), (c["preempted"], cpu)
        assert c["preempted"]["mean_s"] * c["preempted"]["n"] <= float(cpu["host_preempted_wait_s"]) + 1e-9
        assert c["woken_after_halt"]["n"] > 0
    for k, d in sp["all"].items():
        assert d["n"] == sum(c[k]["n"] for c in sp["vcpus"]), k
        if d["n"]:
            assert 0.0 <= d["median_s"] <= d["p90_s"] <= d["p99_s"] <= d["max_s"] <= float(doc["time_s"]), d
            assert d["over_4ms"] <= d["over_2ms"] <= d["over_1ms"] <= d["n"], d
    assert "sched_host_spells" not in check.sim_doc(spec, case.background, case.interval_ms, check.HOSTS["two-cores"])
