"""The guest's recorded ranges that the simulator's sched cases are judged against."""

from __future__ import annotations

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
