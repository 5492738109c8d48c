"""The scheduler cases' side-by-side table of ``numalab vm check`` (docs/scheduler.md §10): the
per-barrier rate is the one both sides share when threads move at barriers."""

from numalab.vm import check


def side(nr_migrations: list[int], time_s: float) -> check.Side:
    return check.Side([512, 512], [512, 512], {}, check.Threads(nr_migrations, [50.0] * len(nr_migrations), time_s))


def test_the_table_gives_migrations_per_thread_per_barrier_on_both_sides():
    # 500 barriers; the simulator moves 16 threads 200 times in 0.4 s, the guest 160 times in
    # 4 s: per second 31.2 and 2.5, per barrier 200 / 16 / 500 = 0.025 and 0.02.
    case = check.CASES["sched-oversubscribed-8"]
    assert case.params["reps"] == 500
    c = check.Comparison(case, side([12, 13] * 8, 0.4), side([10] * 16, 4.0), "6.1.0", "6.13")
    assert c.sim.threads.migrations_per_thread_barrier(500) == 0.025
    text = check.sched_table([c])
    assert "migrations/thread/barrier" in text
    sim_row = next(line for line in text.splitlines() if " sim " in line)
    vm_row = next(line for line in text.splitlines() if " vm " in line)
    assert "31.2" in sim_row and "0.025" in sim_row, text
    assert "2.5" in vm_row and "0.02" in vm_row, text


def test_no_barriers_gives_no_rate():
    assert check.Threads([3, 4], [0.0, 0.0], 1.0).migrations_per_thread_barrier(0) == 0.0
