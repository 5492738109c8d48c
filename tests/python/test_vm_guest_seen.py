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
#: - One vCPU per node runs without the host model (``check.MULTI_CPU_MACHINES``): every vCPU
#:   always runs, so the oversubscribed team has two threads on every vCPU and no idle one to
#:   pull them, and the passive team's vCPUs halt only at its barriers; in the guest the host
#:   leaves vCPUs unrun and their threads reach each barrier one after the other
#:   (docs/scheduler.md §10.4-§10.5). With the host model on them they go above instead
#:   (1.5-3 times, §10.8-§10.13). ``vm-4``'s passive team came inside with NI_RANDOM (§10.15:
#:   a NUMA level is balanced when the die skips the one below it), at the range's low end.
#: The oversubscribed multi-vCPU teams, a few per cent above since the BQL at each guest tick
#: (§10.13), are inside since QEMU's main loop is a host thread of its own (§10.14), and with the
#: guest kernel's proportional newly idle balancing (NI_RANDOM, §10.15) each alone.
OUTSIDE = {"sched-passive-8": "below", "sched-oversubscribed-8": "below"}


@pytest.mark.parametrize("name", sorted(guest_seen.GUEST_PER_BARRIER))
def test_the_simulators_mean_over_seeds_lies_in_the_guests_range_of_runs(name):
    """Issue 22's check: the simulator as ``vm check`` runs it (6.1, the guest's speed and
    background, the host model on several vCPUs per node), its migrations per thread per barrier
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
