"""The local worker pool (study/pool.py): results come back to the waiting thread, a task that
raises or does not pickle fails alone, a killed worker loses only its own tasks and is replaced,
and a cancelled close stops running tasks at once."""

from __future__ import annotations

import os
import signal
import time

import pytest

from numalab.study import pool


def _pid_after(seconds: float) -> int:
    time.sleep(seconds)
    return os.getpid()


def _raises() -> None:
    raise ValueError("bad configuration")


def _wait_all(p: pool.WorkerPool, futures, timeout_s: float = 60.0) -> None:
    end = time.monotonic() + timeout_s
    while not all(f.done() for f in futures):
        assert time.monotonic() < end, "timed out"
        p.wait(0.5)


@pytest.fixture
def two():
    p = pool.WorkerPool(2, pool.context)
    yield p
    p.close(cancel=True)


def test_tasks_are_spread_over_the_workers_and_complete_in_the_waiting_thread(two):
    futures = [two.submit(_pid_after, 0.05) for _ in range(4)]
    assert not any(f.done() for f in futures)  # nothing completes until the client waits
    _wait_all(two, futures)
    pids = [f.result() for f in futures]
    assert len(set(pids)) == 2 and os.getpid() not in pids
    assert set(pids) == {w.process.pid for w in two.workers}


def test_a_task_that_raises_or_does_not_pickle_fails_alone(two):
    bad = two.submit(_raises)
    unpicklable = two.submit(_pid_after, lambda: 0)
    good = two.submit(_pid_after, 0.0)
    assert isinstance(unpicklable.exception(timeout=0), Exception)  # refused before it was sent
    _wait_all(two, [bad, good])
    with pytest.raises(RuntimeError, match="ValueError: bad configuration"):
        bad.result()
    assert good.result() in {w.process.pid for w in two.workers}


def test_a_killed_worker_loses_only_its_own_tasks_and_is_replaced(two):
    slow = [two.submit(_pid_after, 0.5) for _ in range(4)]  # two on each worker
    victim = two.workers[0]
    victim_pid = victim.process.pid
    os.kill(victim_pid, signal.SIGKILL)
    _wait_all(two, slow)
    lost = [f for f in slow if isinstance(f.exception(), pool.WorkerLost)]
    kept = [f.result() for f in slow if f.exception() is None]
    assert len(lost) == 2 and len(kept) == 2 and victim_pid not in kept
    assert len(two.workers) == 2 and victim_pid not in {w.process.pid for w in two.workers}
    again = [two.submit(_pid_after, 0.0) for _ in range(2)]
    _wait_all(two, again)
    assert {f.result() for f in again} == {w.process.pid for w in two.workers}


def test_a_cancelled_close_stops_running_tasks_at_once():
    p = pool.WorkerPool(2, pool.context)
    pids = [w.process.pid for w in p.workers]
    futures = [p.submit(_pid_after, 60) for _ in range(2)]
    time.sleep(0.2)
    start = time.monotonic()
    p.close(cancel=True)
    assert time.monotonic() - start < 10
    assert all(f.cancelled() for f in futures)
    assert not any(os.path.exists(f"/proc/{pid}") for pid in pids)  # ended and reaped


def test_a_close_after_the_tasks_lets_the_workers_exit():
    p = pool.WorkerPool(1, pool.context)
    pid = p.workers[0].process.pid
    future = p.submit(_pid_after, 0.0)
    p.close(cancel=False)  # waits for the task, then asks the worker to stop
    assert future.result() == pid
    assert p.workers == [] and not os.path.exists(f"/proc/{pid}")


def test_stopped_workers_exit_after_their_tasks_and_a_later_task_still_runs():
    p = pool.WorkerPool(2, pool.context)
    try:
        first = [p.submit(_pid_after, 0.2) for _ in range(2)]
        pids = {w.process.pid for w in p.workers}
        p.stop()
        _wait_all(p, first)
        assert {f.result() for f in first} == pids  # the tasks they had ran
        for w in list(p.workers):
            w.process.join(timeout=30)
            assert w.process.exitcode == 0  # and then they exited, before close
        late = p.submit(_pid_after, 0.0)  # e.g. a lost run tried again: a new worker runs it
        _wait_all(p, [late])
        assert late.result() not in pids
    finally:
        p.close(cancel=False)


def test_a_worker_whose_client_is_gone_exits_quietly(capfd):
    p = pool.WorkerPool(1, pool.context)
    worker = p.workers[0]
    try:
        p.submit(_pid_after, 0.3)
        worker.results.close()  # as when the client dies: nobody reads the worker's results
        worker.process.join(timeout=30)
        assert worker.process.exitcode == 0
        assert "Traceback" not in capfd.readouterr().err
    finally:
        worker.process.terminate()
        worker.process.join()
