"""The guest's recorded ranges that the simulator's sched cases are judged against."""

from __future__ import annotations

import statistics
from dataclasses import replace

import pytest

from numalab.machine import load as load_machine
from numalab.spec import RunSpec
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
#: The host of those runs (docs/scheduler.md §10.18, 2026-11-27 16:05-16:32 UTC): QEMU got 1.69-1.88
#: host cores with the host otherwise idle and 0.99-1.00 beside one busy loop; the guest's moves
#: on vm-4 did not change with it, vm-8's fell by about half beside the loop. The ranges above
#: now hold those runs too (their highs unchanged). With the condition's host (``HOSTS``) the
#: three stay outside: see ``OUTSIDE_BY_HOST``.
#: The oversubscribed multi-vCPU teams, a few per cent above since the BQL at each guest tick
#: (§10.13), are inside since QEMU's main loop is a host thread of its own (§10.14), and with the
#: guest kernel's proportional newly idle balancing (NI_RANDOM, §10.15) each alone.
OUTSIDE = {"sched-passive": "above", "sched-oversubscribed": "above", "sched-passive-8": "above"}


@pytest.mark.parametrize("name", sorted(guest_seen.GUEST_PER_BARRIER))
def test_the_simulators_mean_over_seeds_lies_in_the_guests_range_of_runs(name):
    """Issue 22's check: the simulator as ``vm check`` runs it (6.1, the guest's speed and
    background, the host model running the vCPUs), its migrations per thread per barrier
    averaged over four seeds (its own run-to-run spread, as the guest's runs spread from boot to
    boot), inside the guest's range over its recorded runs."""
    case = check.CASES[name]
    params = {"threads": load_machine(case.machine).nr_pus, **case.params}
    spec = RunSpec.create(case.machine, case.workload, params=params, kernel="6.1", thp="never").with_config(case.config)
    reps = int(case.params["reps"])
    per = [check.sim_side(replace(spec, seed=s), case.background, case.interval_ms).threads.migrations_per_thread_barrier(reps)
           for s in range(1, 5)]
    seen = guest_seen.verdict(statistics.mean(per), name)
    assert seen.split()[0] == OUTSIDE.get(name, "inside"), f"{name}: mean {statistics.mean(per):.4g} of {per} is {seen} {guest_seen.GUEST_PER_BARRIER[name]}"


def test_the_guests_runs_by_host_condition_are_among_every_run():
    """``GUEST_BY_HOST`` holds §10.18's runs by the host's condition, keyed by the ``check.HOSTS``
    host that gives QEMU the cores it got; every run is also in ``GUEST_PER_BARRIER``'s range, and
    a case without runs under a condition falls back to every run's."""
    for host, seen in guest_seen.GUEST_BY_HOST.items():
        assert host in check.HOSTS
        for name, (low, high) in seen.items():
            every = guest_seen.GUEST_PER_BARRIER[name]
            assert every[0] <= low < high <= every[1], (host, name)
    assert guest_seen.ranges() == guest_seen.GUEST_PER_BARRIER
    assert guest_seen.ranges("one-core")["sched-passive"] == (0.002, 0.003)
    assert guest_seen.ranges("one-core")["sched-passive-4x2"] == guest_seen.GUEST_PER_BARRIER["sched-passive-4x2"]
    assert guest_seen.verdict(0.004, "sched-passive", guest_seen.ranges("one-core")) == "above (1.33x)"


#: The model with the host of each condition against the guest's runs under it (docs/scheduler.md
#: §10.18; 6.1, seeds 1-4, the guest's background and barrier length as ``GUEST_BACKGROUND``
#: measured them on 2026-11-26 at load 5.5-16). Two cores for the idle host: vm-4 passive
#: 0.0020 and passive-2x4 0.0391 inside; vm-4 oversubscribed 0.0104 (2.6 times above), vm-8
#: passive 0.0251 (3.6 times), vm-8 oversubscribed 0.0434 (1.04 times), oversubscribed-2x4
#: 0.149 (2.4 times below). One core beside the busy loop: vm-4 passive 0.0219 (7.3 times
#: above), oversubscribed 0.0248 (5.1 times), vm-8 passive 0.0094 (3.1 times), oversubscribed
#: 0.0213 (1.24 times). The guest's barrier was shorter in those runs than the background's
#: (vm-4 2.3 ms idle, 3.9-4.1 ms beside the loop, against 10.5), so the host's cores alone are
#: not the run's condition.
OUTSIDE_BY_HOST = {
    "two-cores": {"sched-oversubscribed": "above", "sched-passive-8": "above", "sched-oversubscribed-8": "above",
                  "sched-oversubscribed-2x4": "below"},
    "one-core": {"sched-passive": "above", "sched-oversubscribed": "above", "sched-passive-8": "above",
                 "sched-oversubscribed-8": "above"},
}


@pytest.mark.parametrize(("host", "name"), sorted((h, n) for h, seen in guest_seen.GUEST_BY_HOST.items() for n in seen))
def test_the_simulator_with_the_conditions_host_against_the_guests_runs_under_it(host, name):
    """§10.18's question, asserted as measured: the simulator given the host of the guest's runs
    (``check.HOSTS[host]``), its mean over four seeds against those runs' range."""
    case = check.CASES[name]
    params = {"threads": load_machine(case.machine).nr_pus, **case.params}
    spec = RunSpec.create(case.machine, case.workload, params=params, kernel="6.1", thp="never").with_config(case.config)
    reps = int(case.params["reps"])
    per = [check.sim_side(replace(spec, seed=s), case.background, case.interval_ms, check.HOSTS[host])
           .threads.migrations_per_thread_barrier(reps) for s in range(1, 5)]
    seen = guest_seen.verdict(statistics.mean(per), name, guest_seen.ranges(host))
    assert seen.split()[0] == OUTSIDE_BY_HOST[host].get(name, "inside"), f"{host} {name}: mean {statistics.mean(per):.4g} is {seen}"
