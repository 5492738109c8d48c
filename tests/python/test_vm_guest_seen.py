"""The guest's recorded ranges that the simulator's sched cases are judged against."""

from __future__ import annotations

import statistics
from dataclasses import replace

import pytest

from numalab.vm import check, guest_seen


def test_every_sleeping_sched_case_has_the_guests_range():
    """bench/vm_sched_sim.py judges every passive and oversubscribed case against its range: a
    new case without one must fail here, not in the bench."""
    sleeping = {name for name, case in check.CASES.items() if case.sched and case.background is not None}
    assert sleeping == set(guest_seen.GUEST_PER_BARRIER)
    assert all(0 < low < high for low, high in guest_seen.GUEST_PER_BARRIER.values())


def test_a_value_is_judged_inside_below_or_above_the_guests_range_with_the_factor():
    low, high = guest_seen.GUEST_PER_BARRIER["sched-oversubscribed-8"]
    assert guest_seen.verdict(low, "sched-oversubscribed-8") == "inside"
    assert guest_seen.verdict(high, "sched-oversubscribed-8") == "inside"
    assert guest_seen.verdict(low / 4, "sched-oversubscribed-8") == "below (4x)"
    assert guest_seen.verdict(0.0, "sched-oversubscribed-8") == "below"
    assert guest_seen.verdict(high * 2, "sched-oversubscribed-8") == "above (2x)"
    assert guest_seen.verdict(high * 1.035, "sched-oversubscribed-8") == "above (1.03x)"


#: Cases whose simulated mean lies outside the guest's range, each for a stated reason, asserted
#: as stated (the test fails when the model closes the gap: remove the entry then).
#: - One vCPU per node, with the host model as every guest (docs/scheduler.md §10.16; before,
#:   without it, every vCPU always ran and vm-8's teams sat 3.7 and 11 times below): the passive
#:   teams and vm-4's oversubscribed one go above, vm-8's oversubscribed one is inside. The model
#:   gives QEMU one host core; in the guest vm-4's four vCPU threads ran 0.44-0.48 of a core each
#:   (1.8 cores together, ``vm check --moves --case sched-oversubscribed``, 2026-11-27 14:52 UTC),
#:   so the model leaves its vCPUs unrun about twice as long as the host did. Seeds 1-4 (2026-11-27,
#:   6.1): vm-4 passive 0.0219, 2.1 times above (seeds 5-8, 9-12, 13-16, 17-20: 1.5-2.5 times
#:   above: stable); vm-4 oversubscribed 0.0248, 1.13 times above, near the edge (seeds 5-8 0.0200
#:   inside, the other sets 1.06-1.11 times above; 20 seeds 0.0232, 1.06 times); vm-8 passive
#:   0.009375, 1.04 times above, within 5 % of the edge (the other sets 1.14-1.47 times above;
#:   20 seeds 0.01125); vm-8 oversubscribed 0.0213 inside (every set 0.019-0.027, inside).
#:   With the idle entry after background work (§10.19), seeds 1-4: vm-4 passive 0.0225 (2.14
#:   times above), oversubscribed 0.0291 (1.32 times), vm-8 passive 0.0109 (1.21 times), vm-8
#:   oversubscribed 0.0201 inside.
#: The host of those runs (docs/scheduler.md §10.18, 2026-11-27 16:05-16:47 UTC): QEMU got 1.69-1.88
#: host cores with the host otherwise idle and 0.99-1.00 beside one busy loop; the guest's moves
#: on vm-4 and vm-8 passive did not change with it, vm-8 oversubscribed's fell by about half beside
#: the loop. The ranges above now hold those runs too (their highs unchanged). With the
#: condition's host and barrier length (``check.CONDITIONS``) they stay outside: see
#: ``OUTSIDE_BY_CONDITION``.
#: The oversubscribed multi-vCPU teams, a few per cent above since the BQL at each guest tick
#: (§10.13), are inside since QEMU's main loop is a host thread of its own (§10.14), and with the
#: guest kernel's proportional newly idle balancing (NI_RANDOM, §10.15) each alone.
#: With the host stopping a vCPU inside a newly idle balance (§10.27; seeds 1-4, 20:08 UTC): vm-4
#: oversubscribed 0.0231 (1.05 times above) -> 0.0210 inside, vm-4 passive 0.0180 -> 0.0191 (1.82
#: times above), vm-8 passive 0.0121 -> 0.0123 (1.36 times above), the rest inside. A stopped
#: balance costing one of the host's waits, not their mean (§10.28; seeds 1-4, 21:12 UTC): vm-4
#: oversubscribed 0.0210 inside -> 0.0237 (1.08 times above), vm-4 passive 0.0176 (1.68 above),
#: vm-8 passive 0.0118 (1.31 above), the rest inside. With the agent's own ``util_est`` counted
#: in its vCPU's utilisation (§10.30; 21:27 UTC): vm-4 passive 0.0231 (2.2 above), oversubscribed
#: 0.0239 (1.09 above), vm-8 passive 0.01075 (1.19 above), the rest inside. With the agent's
#: first sample one interval after the start and the later ones on that grid (§10.31; 22:03
#: UTC): vm-4 passive 0.0237 (2.26 above), oversubscribed 0.0275 (1.25 above), vm-8 passive
#: 0.00725 inside, the rest inside. With QEMU's big lock in the host model (§10.37; seeds 1-4,
#: 2026-11-28 00:05 UTC): vm-4 oversubscribed 0.0204 inside, vm-8 passive 0.0129 (1.43 above).
#: With TCG's slowdown from the idle host (§10.40; 00:35 UTC): vm-4 passive 0.00675 inside (its
#: barrier 4.55 ms against the background's 10.5), vm-8 passive 0.01775 (1.97 above), the rest inside.
#: With TCG's slowdown from the measured host with as many cores (one beside the busy loop for
#: this one-core host, §10.47; 02:55 UTC): vm-8 passive 0.00625 inside, vm-8 oversubscribed
#: 0.009312 (1.42 below), the rest inside. With the host's 1.4 ms request (§10.50; 05:30 UTC):
#: the same sides. With a BQL hold kept across its holder's switch-out (§10.54; seeds 1-4,
#: 2026-11-28 09:26 UTC): vm-8 oversubscribed 0.00675 (1.96 below) -> 0.009875 (1.34 below), the
#: rest inside. With a vCPU's halt inside a round giving up its host core there (§10.60;
#: 2026-11-28 13:03 UTC): vm-8 oversubscribed 0.01369 (seeds 0.01075, 0.00875, 0.02225, 0.013)
#: inside, every case inside.
OUTSIDE: dict[str, str] = {}


@pytest.mark.parametrize("name", sorted(guest_seen.GUEST_PER_BARRIER))
def test_the_simulators_mean_over_seeds_lies_in_the_guests_range_of_runs(name):
    """Issue 22's check: the simulator as ``vm check`` runs it (6.1, the guest's speed and
    background, the host model running the vCPUs), its migrations per thread per barrier
    averaged over four seeds (its own run-to-run spread, as the guest's runs spread from boot to
    boot), inside the guest's range over its recorded runs."""
    case = check.CASES[name]
    spec = check.sim_spec(case)
    reps = int(case.params["reps"])
    per = [check.sim_side(replace(spec, seed=s), case.background, case.interval_ms).threads.migrations_per_thread_barrier(reps)
           for s in range(1, 5)]
    seen = guest_seen.verdict(statistics.mean(per), name)
    assert seen.split()[0] == OUTSIDE.get(name, "inside"), f"{name}: mean {statistics.mean(per):.4g} of {per} is {seen} {guest_seen.GUEST_PER_BARRIER[name]}"


def test_the_guests_runs_by_host_condition_are_among_every_run():
    """``GUEST_BY_CONDITION`` holds §10.18's runs by the host's condition (``check.CONDITIONS``);
    every run is also in ``GUEST_PER_BARRIER``'s range, and a case without runs under a condition
    falls back to every run's."""
    for condition, seen in guest_seen.GUEST_BY_CONDITION.items():
        assert condition in check.CONDITIONS
        assert set(seen) <= set(check.CONDITIONS[condition].barrier_s)
        for name, (low, high) in seen.items():
            every = guest_seen.GUEST_PER_BARRIER[name]
            assert every[0] <= low < high <= every[1], (condition, name)
    assert guest_seen.ranges() == guest_seen.GUEST_PER_BARRIER
    assert guest_seen.ranges("busy-loop")["sched-passive"] == (0.002, 0.003)
    assert guest_seen.ranges("busy-loop")["sched-passive-4x2"] == guest_seen.GUEST_PER_BARRIER["sched-passive-4x2"]
    assert guest_seen.verdict(0.004, "sched-passive", guest_seen.ranges("busy-loop")) == "above (1.33x)"


def test_each_run_with_busy_loops_in_qemus_group_has_its_condition_with_as_many_loops():
    """docs/scheduler.md §10.39: a run recorded with N busy loops in QEMU's own autogroup is
    judged under ``group-loops-N``, whose host has the recorded host's cores and N other
    threads, whose barrier is the mean of its runs' command time (over the case's 1000
    barriers), and whose range holds the run."""
    loaded: dict[tuple[int, str], list[float]] = {}
    for name, runs in guest_seen.GUEST_RUNS.items():
        for r in runs:
            if not r.other_threads:
                continue
            condition = f"group-loops-{r.other_threads}"
            host = check.HOSTS[check.CONDITIONS[condition].host]
            assert (host["cores"], host["other_threads"]) == (guest_seen.RUNS_HOST_CPUS, r.other_threads)
            low, high = guest_seen.GUEST_BY_CONDITION[condition][name]
            assert low <= r.value <= high, (condition, name, r)
            loaded.setdefault((r.other_threads, name), []).append(r.command_s)
    assert {n for n, _ in loaded} == {1, 2, 4, 8}
    for (n, name), times in loaded.items():
        reps = int(check.CASES[name].params["reps"])
        assert check.CONDITIONS[f"group-loops-{n}"].barrier_s[name] == pytest.approx(statistics.mean(times) / reps, rel=2e-4)


def test_a_condition_runs_the_case_at_its_barrier_length_on_its_host():
    """``check.CONDITIONS``: the case's background with the condition's barrier length and, where
    measured under it, the agent's CPU per sample and its first sample's extra (§10.38: every
    idle case), the rest as measured; its host one of ``HOSTS``."""
    for condition in check.CONDITIONS.values():
        assert condition.host in check.HOSTS
        for name, barrier_s in condition.barrier_s.items():
            own = check.CASES[name].background
            bg = condition.background(name)
            assert bg.barrier_s == barrier_s
            assert bg.agent_cost_s == condition.agent_cost_s.get(name, own.agent_cost_s)
            assert bg.agent_maps_cost_s == condition.agent_maps_cost_s.get(name, own.agent_maps_cost_s)
            assert bg.agent_first_extra_s == condition.agent_first_extra_s.get(name, own.agent_first_extra_s)
            assert replace(bg, barrier_s=own.barrier_s, agent_cost_s=own.agent_cost_s,
                           agent_maps_cost_s=own.agent_maps_cost_s, agent_first_extra_s=own.agent_first_extra_s) == own
    idle = check.CONDITIONS["idle"]
    assert set(idle.agent_cost_s) == set(idle.barrier_s) == set(idle.agent_maps_cost_s) == set(idle.agent_first_extra_s)
    # vm-4 passive on the idle host (§10.38): the later samples' base 11.2 ms and read 1.5 ms, and
    # the first sample's extra, 34.9 ms: a first sample of 47.6 ms, the measured mean 47.5 rounded.
    passive = idle.background("sched-passive")
    assert (passive.agent_cost_s, passive.agent_maps_cost_s, passive.agent_first_extra_s) == (11.2e-3, 1.5e-3, 34.9e-3)
    for name in idle.barrier_s:
        bg = idle.background(name)
        # Every case's first sample is the longest: its extra more than a later sample.
        assert 0 < bg.agent_maps_cost_s < bg.agent_cost_s < bg.agent_first_extra_s
    # Beside the busy loop (§10.44), every case measured: vm-4 passive's later samples 23.2 ms (base
    # 20.6 and read 2.6), its first 102.1 (extra 79.0). TCG's guest seconds run longer than on the
    # idle host (12.7, 47.5 ms) with QEMU on one core, not 1.8: so are every case's later samples.
    busy = check.CONDITIONS["busy-loop"]
    assert set(busy.agent_cost_s) == set(busy.barrier_s) == set(busy.agent_maps_cost_s) == set(busy.agent_first_extra_s)
    loop = busy.background("sched-passive")
    assert (loop.agent_cost_s, loop.agent_maps_cost_s, loop.agent_first_extra_s) == (20.6e-3, 2.6e-3, 79.0e-3)
    for name in busy.barrier_s:
        bg, idle_bg = busy.background(name), idle.background(name)
        assert bg.agent_cost_s + bg.agent_maps_cost_s > idle_bg.agent_cost_s + idle_bg.agent_maps_cost_s
        assert bg.agent_first_extra_s > 0


@pytest.mark.parametrize("condition", check.SPEED_CONDITIONS)
def test_tcgs_speed_comes_from_the_measured_host_with_as_many_cores(condition):
    """§10.47: QEMU's host CPU per guest instruction grows when vCPUs run side by side (§10.43),
    so a run on a host of N cores is slowed to the guest's barrier measured with QEMU alone on N
    cores; vm-4 passive's were 2.285 ms on two cores and 3.473 ms on one. The simulated barrier,
    the idle condition's background aboard, comes within 5 % of it (02:55 UTC: 2.25 and 3.35 ms;
    with the two-core speed on one core it was 4.53)."""
    name = "sched-passive"
    case, cond = check.CASES[name], check.CONDITIONS[condition]
    spec = check.sim_spec(case)
    doc = check.sim_doc(replace(spec, seed=1), check.CONDITIONS["idle"].background(name), case.interval_ms, check.HOSTS[cond.host])
    barrier_s = float(doc["time_s"]) / int(case.params["reps"])
    assert barrier_s == pytest.approx(cond.barrier_s[name], rel=0.05)


#: The model under each condition (its host and the guest's barrier length then) against the
#: guest's runs under it (docs/scheduler.md §10.18; 6.1, seeds 1-4), asserted as measured, with
#: rebalance_domains()'s SD_SERIALIZE lock held for the guest's typical balance time (§10.22)
#: and a CPU's utilisation accrued for all its busy time (§10.24). Idle: vm-4 passive 0.0055
#: (1.47 times above), oversubscribed 0.0044 (1.11), vm-8 passive 0.011 (1.38 above),
#: oversubscribed 0.0217 (1.08 below), passive-2x4 0.041 inside, oversubscribed-2x4 0.317 (1.14
#: below). Beside the busy loop: vm-4 passive 0.0074 (2.46 above), oversubscribed 0.0051
#: (1.04), vm-8 passive 0.008 (1.07 above), oversubscribed 0.0081 (1.63 below), passive-2x4
#: 0.0493 inside, oversubscribed-2x4 0.347 (1.14 above). With the
#: host's cores alone and the background's barrier (10.5 ms on vm-4, measured at load 5.5-16;
#: the guest's was 2.3 ms idle, 3.5-3.6 ms beside the loop) the vm-4 cases sat 2.6 to 7.3 times
#: above (before §10.22). With the host stopping a vCPU inside a newly idle balance (§10.27;
#: 20:08 UTC), idle: vm-8 passive 0.01125 (1.41 above), oversubscribed 0.0186 (1.27 below),
#: passive-2x4 0.0408 inside -> 0.0512 (1.13 above), oversubscribed-2x4 0.3296 (1.09 below), vm-4
#: unchanged (0.0055, 0.0044); beside the loop: vm-8 passive 0.00775 (1.03 above),
#: oversubscribed 0.0076 (1.75 below), passive-2x4 0.0431 inside, the rest unchanged. A stopped
#: balance costing one of the host's waits, not their mean (§10.28; 21:12 UTC), idle: vm-4
#: passive 0.0055 (1.47 above), oversubscribed 0.0044 (1.11 above), vm-8 passive 0.011 (1.38
#: above), oversubscribed 0.0208 (1.13 below), passive-2x4 0.0512 -> 0.0446 inside,
#: oversubscribed-2x4 0.3239 (1.11 below); beside the loop: vm-4 passive 0.0068 (2.25 above),
#: oversubscribed 0.0057 (1.17 above), vm-8 passive 0.0081 (1.08 above), oversubscribed 0.0086
#: (1.55 below), passive-2x4 0.0501 inside, oversubscribed-2x4 0.3452 (1.14 above). With the
#: agent's own ``util_est`` (§10.30; 21:27 UTC), idle: vm-4 passive 0.0059 (1.47 above),
#: oversubscribed 0.0045 (1.13 above), vm-8 passive 0.01075 (1.26 above), oversubscribed 0.0232
#: (1.01 below), passive-2x4 0.0446 inside -> 0.047 (1.04 above), oversubscribed-2x4 0.3254 (1.11
#: below); beside the loop: vm-4 passive 0.0066 (2.19 above), oversubscribed 0.0078 (1.6 above),
#: vm-8 passive 0.0086 (1.15 above), oversubscribed 0.0088 (1.51 below), passive-2x4 0.0476
#: inside, oversubscribed-2x4 0.3433 (1.13 above). With the agent's CPU per sample measured on
#: the idle host (``check.AGENT_COST_IDLE``, §10.30; 21:36 UTC), idle: vm-4 passive 0.0005 (3.5
#: below), oversubscribed 0.00069 (4.36 below), vm-8 passive 0.0086 (1.01 above, at the edge),
#: oversubscribed 0.0218 (1.08 below), passive-2x4 0.0364 inside, oversubscribed-2x4 0.327 (1.1
#: below); beside the loop unchanged (not measured there). With the agent's samples on its own
#: grid, the first one interval after the start (§10.31; 22:03 UTC), idle: vm-4 passive 0.00113
#: (1.56 below), oversubscribed 0.00084 (3.56 below), vm-8 passive 0.009 (1.06 above),
#: oversubscribed 0.0184 (1.28 below), passive-2x4 0.0417 inside, oversubscribed-2x4 0.3265 (1.1
#: below); beside the loop: vm-4 passive 0.0048 (1.6 above), oversubscribed 0.0057 (1.16 above),
#: vm-8 passive 0.0069 inside, oversubscribed 0.0066 (2.02 below), passive-2x4 0.0419 inside,
#: oversubscribed-2x4 0.3468 (1.14 above). With the agent's first sample carrying its measured
#: extra and the later ones their own mean on the idle host (§10.38; 2026-11-28 00:07 UTC),
#: idle: vm-4 passive 0.0025 inside (was 1.56 below), oversubscribed 0.001 (3 below), vm-8
#: passive 0.00525 inside (was 1.06 above), oversubscribed 0.01988 (1.18 below), passive-2x4
#: 0.03525 inside, oversubscribed-2x4 0.3243 (1.11 below); beside the loop unchanged (no extra
#: there).
#: With N busy loops in QEMU's own autogroup (``group-loops-N``, §10.39; 2026-11-28 00:11 UTC):
#: N=1 vm-4 passive 0.0024 (1.26 below), oversubscribed 0.0059 (1.09 above, at the edge: seeds
#: 1-8 0.0072, 1.34 above), vm-8 passive 0.0076 inside; N=2 0.00044 (7.43 below), 0.0025 (2.58
#: below), 0.0045 (1.56 below); N=4 0.00019 (6.67 below), 0.002 (3.11 below), 0.0059 (1.45
#: below); N=8 0.00006 (28 below), 0.0017 (3.85 below). The guest's moves hold or rise with N,
#: the model's fall. With QEMU's big lock in the host model too (§10.37; 2026-11-28 00:22 UTC):
#: idle vm-4 passive 0.004125 (1.03 above, at the edge), oversubscribed 0.001375 (2.18 below),
#: vm-8 passive 0.006625 inside; group-loops-1 vm-4 passive 0.003312 inside, oversubscribed
#: 0.002938 (1.19 below), vm-8 passive 0.008625 (1.01 above, at the edge); the rest on the same
#: side. With TCG's slowdown from the idle host under every condition (§10.40; 00:35 UTC; idle
#: unchanged): beside the loop vm-4 passive 0.00675 (2.25 above), oversubscribed 0.01016 (2.08
#: above), vm-8 passive 0.01775 (2.37 above), oversubscribed 0.02519 (1.31 above), passive-2x4
#: inside, oversubscribed-2x4 (1.06 above) (one core, the stand-in for group scheduling, runs the
#: guest slower than the real host did: vm-4 4.55 ms a barrier against 3.47); group-loops-1 vm-4
#: passive 0.002063 (1.45 below), oversubscribed 0.002969 (1.18 below), vm-8 passive 0.009625
#: (1.13 above); group-loops-2 0.001375 (2.36 below), 0.006719 inside, 0.005875 (1.19 below);
#: group-loops-4 0.005625 (2.5 above), 0.009938 (1.14 above), 0.01512 (1.68 above); group-loops-8
#: 0.003 inside, 0.009187 inside.
#: With a run queue per host core (§10.41; 2026-11-28 01:05 UTC): idle vm-4 passive 0.00025 (7
#: below, was above), oversubscribed 0.000875 (3.43 below), vm-8 passive 0.005375 inside,
#: oversubscribed 0.02644 inside (was below), passive-2x4 0.03775 inside, oversubscribed-2x4
#: 0.3359 (1.07 below); beside the loop vm-4 passive 0.006375 (2.12 above), oversubscribed
#: 0.008625 (1.77 above), vm-8 passive 0.02025 (2.7 above), oversubscribed 0.02569 (1.33 above),
#: passive-2x4 0.047 inside, oversubscribed-2x4 0.3147 (1.04 above); group-loops-1 vm-4 passive
#: 0.00125 (2.4 below), oversubscribed 0.002437 (1.44 below), vm-8 passive 0.006 inside (was
#: above); group-loops-2 0.00275 (1.18 below), 0.003469 (1.84 below, was inside), 0.007375
#: inside (was below); group-loops-4 0.00375 (1.67 above), 0.004719 (1.3 below, was above),
#: 0.01087 (1.21 above); group-loops-8 0.002313 inside, 0.01059 inside.
#: With the agent's samples measured beside the busy loop (§10.44; 2026-11-28 02:20 UTC): beside
#: the loop vm-4 passive 0.0055 (1.83 above, was 2.12), oversubscribed 0.002688 inside (was 1.77
#: above), vm-8 passive 0.00875 (1.17 above, was 2.7), oversubscribed 0.02813 (1.46 above, was
#: 1.33), passive-2x4 0.05244 inside, oversubscribed-2x4 0.3254 (1.07 above, was 1.04).
#: With TCG's slowdown beside the loop taken from the loop's own runs (one core, §10.47; 02:55
#: UTC): vm-4 passive 0.002875 inside, vm-8 passive 0.004875 inside, oversubscribed 0.009562
#: (1.39 below), passive-2x4 0.03919 (1.05 below), the rest on the same side.
#: With the host's own 1.4 ms request (``se.slice``; was 1.5 ms, §10.50; 2026-11-28 05:30 UTC):
#: idle vm-4 passive 0.00025 (7 below), oversubscribed 0.0006875 (4.36 below), vm-8 passive
#: 0.0025 (1.4 below, was inside), oversubscribed 0.021 (1.12 below, was inside), passive-2x4
#: inside, oversubscribed-2x4 0.3356 (1.07 below); beside the loop vm-4 passive 0.00575 (1.92
#: above, was inside), oversubscribed inside, vm-8 passive inside, oversubscribed 0.008125 (1.63
#: below), passive-2x4 0.03625 (1.13 below), oversubscribed-2x4 0.3418 (1.13 above);
#: group-loops-1 0.002187 (1.37 below), 0.00275 (1.27 below), vm-8 passive 0.011 (1.29 above, was
#: inside); group-loops-2 1.49 below, 1.42 below, vm-8 passive 0.007875 (1.05 above, was inside);
#: group-loops-4 vm-4 passive 1.28 above, oversubscribed inside (was below), vm-8 passive 1.04
#: above; group-loops-8 both inside. A 7 % shorter request moves six of 23 verdicts: the model's
#: host decides them at this resolution (§10.50-§10.52).
#: With a BQL hold kept across its holder's switch-out (§10.54; 2026-11-28 09:26 UTC), three of 23
#: move: idle vm-8 oversubscribed 0.021 (1.12 below) -> 0.0285 inside; group-loops-1 vm-8 passive
#: 0.011 (1.29 above) -> 0.005375 inside; group-loops-4 vm-4 oversubscribed 0.006437 inside ->
#: 0.005281 (1.16 below). On the same side: idle vm-4 passive 0.0005 (3.5 below, was 7),
#: oversubscribed 3.43 below (was 4.36); beside the loop vm-4 passive 0.003375 (1.12 above, was
#: 1.92), vm-8 oversubscribed 0.008313 (1.59 below, was 1.63); group-loops-1 vm-4 passive 0.001
#: (3 below, was 1.37), oversubscribed 1.04 below (was 1.27).
#: With a device write's BQL hold kept across the wake-up preemption it causes (docs/scheduler.md
#: §10.58; seeds 1-4, 2026-11-28 11:25 UTC) two of 23 change side: idle ``sched-passive-8`` 0.0025
#: (1.4x below) -> 0.007875 inside, ``group-loops-2`` ``sched-passive-8`` 0.008625 (1.15x above)
#: -> 0.00675 (1.04x below); the rest keep their sides.
#: With the main loop's hold at 16 µs, its whole run (§10.56's estimate, ``GUEST_HOST``; §10.58;
#: seeds 1-4, 2026-11-28 12:36 UTC) four of 23 change side: beside the loop vm-8 oversubscribed
#: (1.59 below) -> 0.01656 inside; group-loops-1 vm-4 oversubscribed (below) -> 0.004 inside and
#: vm-8 passive (inside) -> 0.008625 (1.01x above); group-loops-4 vm-4 oversubscribed (below) ->
#: 0.006875 inside.
#: With a vCPU's halt inside a round giving up its host core there (§10.60; 13:03 UTC) three of 23
#: change side: beside the loop vm-8 oversubscribed inside -> 0.01094 (1.21x below); group-loops-1
#: vm-8 passive 1.01x above -> 0.008125 inside; group-loops-2 vm-8 passive below -> 0.01137 (1.52x
#: above).
OUTSIDE_BY_CONDITION = {
    "idle": {"sched-passive": "below", "sched-oversubscribed": "below", "sched-oversubscribed-2x4": "below"},
    "busy-loop": {"sched-passive": "above", "sched-oversubscribed-8": "below", "sched-passive-2x4": "below",
                  "sched-oversubscribed-2x4": "above"},
    "group-loops-1": {"sched-passive": "below"},
    "group-loops-2": {"sched-passive": "below", "sched-oversubscribed": "below", "sched-passive-8": "above"},
    "group-loops-4": {"sched-passive": "above", "sched-passive-8": "above"},
    "group-loops-8": {},
}


@pytest.mark.parametrize(("condition", "name"), sorted((c, n) for c, seen in guest_seen.GUEST_BY_CONDITION.items() for n in seen))
def test_the_simulator_under_the_guests_host_condition_against_its_runs_under_it(condition, name):
    """§10.18's question, asserted as measured: the simulator given the host condition of the
    guest's runs (``check.CONDITIONS``: its host, the guest's barrier length), its mean over four
    seeds against those runs' range."""
    case = check.CASES[name]
    cond = check.CONDITIONS[condition]
    spec = check.sim_spec(case)
    reps = int(case.params["reps"])
    per = [check.sim_side(replace(spec, seed=s), cond.background(name), case.interval_ms, check.HOSTS[cond.host])
           .threads.migrations_per_thread_barrier(reps) for s in range(1, 5)]
    seen = guest_seen.verdict(statistics.mean(per), name, guest_seen.ranges(condition))
    assert seen.split()[0] == OUTSIDE_BY_CONDITION[condition].get(name, "inside"), f"{condition} {name}: mean {statistics.mean(per):.4g} is {seen}"


def test_each_tsc_run_is_a_sleeping_case_and_a_whole_count_of_migrations():
    """docs/scheduler.md §10.53: the TSC guest's runs (``GUEST_RUNS_TSC``) are kept apart from the
    HPET guest's, one per sleeping case the check can run; each value is the guest's
    ``nr_migrations`` summed over the threads / threads / barriers, so a mistyped figure that is no
    whole number of migrations fails here."""
    from numalab.machine import load as load_machine

    assert guest_seen.GUEST_RUNS_TSC
    for name, runs in guest_seen.GUEST_RUNS_TSC.items():
        case = check.CASES[name]
        assert case.background is not None, name
        threads = int(case.params.get("threads") or load_machine(case.machine).nr_pus)
        per_run = threads * int(case.params["reps"])
        for r in runs:
            migrations = r.value * per_run
            assert migrations == pytest.approx(round(migrations), abs=1e-6), (name, r)
            assert 0 < r.cores <= guest_seen.RUNS_HOST_CPUS + 0.05 and r.command_s > 0, (name, r)
