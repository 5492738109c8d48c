"""The scheduler cases' side-by-side table of ``numalab vm check`` (docs/scheduler.md §10): the
per-barrier rate is the one both sides share when threads move at barriers."""

from numalab.vm import check


def side(nr_migrations: list[int], time_s: float) -> check.Side:
    return check.Side([512, 512], [512, 512], {}, check.Threads(nr_migrations, [50.0] * len(nr_migrations), time_s))


def test_the_table_gives_migrations_per_thread_per_barrier_on_both_sides():
    # 250 barriers; the simulator moves 16 threads 200 times in 0.4 s, the guest 160 times in
    # 4 s: per second 31.2 and 2.5, per barrier 200 / 16 / 250 = 0.05 and 0.04.
    case = check.CASES["sched-oversubscribed-8"]
    assert case.params["reps"] == 250
    c = check.Comparison(case, side([12, 13] * 8, 0.4), side([10] * 16, 4.0), "6.1.0", "6.13")
    assert c.sim.threads.migrations_per_thread_barrier(250) == 0.05
    text = check.sched_table([c])
    assert "migrations/thread/barrier" in text
    sim_row = next(line for line in text.splitlines() if " sim " in line)
    vm_row = next(line for line in text.splitlines() if " vm " in line)
    assert "31.2" in sim_row and "0.05" in sim_row, text
    assert "2.5" in vm_row and "0.04" in vm_row, text


def test_no_barriers_gives_no_rate():
    assert check.Threads([3, 4], [0.0, 0.0], 1.0).migrations_per_thread_barrier(0) == 0.0


def test_several_guest_runs_give_a_range_and_say_what_the_simulator_falls_outside_of():
    # Passive team on 4 nodes x 2 vCPUs, 500 barriers: three guest runs with 30..50 % of the time
    # away and 0.002..0.004 migrations per thread per barrier; the simulator inside on the first,
    # outside on the second, and its even first touch (25 % on the fullest node) below the
    # guest's stacked 37.5..50 %.
    case = check.CASES["sched-passive-4x2"]
    assert case.machine == "vm-4x2" and case.params["reps"] == 500

    def run(moves: int, away: float, pages: list[int]) -> check.Side:
        return check.Side(pages, pages, {}, check.Threads([moves] + [0] * 7, [away] * 8, 2.0))

    guest = [run(8, 30.0, [1024, 512, 512, 0]), run(16, 50.0, [1024, 1024, 0, 0]), run(12, 40.0, [768, 512, 512, 256])]
    sim = run(1, 35.0, [512, 512, 512, 512])
    c = check.Comparison(case, sim, guest[0], "6.1.0", "6.13", vm_runs=guest)
    outside = check.outside_guest_range(c)
    assert [o.split(" ")[0] for o in outside] == ["migrations/thread/barrier", "fullest"], outside
    assert "guest 37.5..50" in outside[1], outside
    text = check.sched_table([c])
    vm_row = next(line for line in text.splitlines() if " vm " in line)
    assert "30.0..50.0" in vm_row and "768..1024" in vm_row and " 3 " in vm_row, text
    assert ("sched-passive-4x2: the simulator is outside the guest's 3 runs on migrations/thread/barrier 0.00025 "
            "(guest 0.002..0.004); fullest node % 25 (guest 37.5..50)") in text, text
