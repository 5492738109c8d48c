"""More workers than CPUs or than runs: a one-line note on stderr and the workers clamped (the
simulations are CPU-bound); the default is one per CPU, clamped to the runs without a word. Fewer
workers than CPUs leave the documents' encoding to the client; the pipe the outcomes return
through holds a whole batch."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from numalab.exceptions import UsageError
from numalab.study import executors, pool


@pytest.fixture
def four_cpus(monkeypatch):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2, 3}, raising=False)


def test_workers_are_clamped_to_cpus_and_runs(four_cpus):
    n, note = executors.local_workers(16, 100)
    assert n == 4 and note == "--jobs 16: this machine has 4 CPUs, so 4 workers will run"
    n, note = executors.local_workers(16, 3)
    assert n == 3 and note == "--jobs 16: there are 3 runs to do, so 3 workers will run"
    n, note = executors.local_workers(3, 1)
    assert n == 1 and note == "--jobs 3: there is 1 run to do, so 1 worker will run"
    assert executors.local_workers(2, 100) == (2, None)
    assert executors.local_workers(None, 100) == (4, None)
    assert executors.local_workers(None, 2) == (2, None)  # not asked: no note
    with pytest.raises(UsageError, match="--jobs must be >= 1"):
        executors.local_workers(0, 5)


def test_the_study_command_says_it_and_runs_with_fewer(cli, tmp_path, monkeypatch):
    started = []

    class Recording(executors.LocalBackend):
        def __init__(self, workers: int):
            started.append(workers)
            super().__init__(workers)

    monkeypatch.setattr(executors, "LocalBackend", Recording)
    study = tmp_path / "s.toml"
    study.write_text('name = "w"\nmachine = "e5-2620v4-2s"\nworkload = "dgemv"\nparams = { n = 2000, reps = 2 }\n'
                     '[sweep]\nplacement = ["default", "interleave=all"]\n')
    code, out, err = cli("study", str(study), "--results", str(tmp_path / "r"), "--workers", "64")
    assert code == 0 and "2 of 2 runs done: 2 ok" in out, err
    notes = [line for line in err.splitlines() if line.startswith("numalab: note:")]
    assert len(notes) == 1 and "--jobs 64:" in notes[0] and "will run" in notes[0]
    assert started and started[0] <= 2
    # nothing left to run: no workers, no note
    code, out, err = cli("study", str(study), "--results", str(tmp_path / "r"), "--workers", "64")
    assert code == 0 and "numalab: note" not in err and len(started) == 1


def test_the_results_pipe_holds_a_batch():
    fcntl = pytest.importorskip("fcntl")
    try:
        limit = int(Path("/proc/sys/fs/pipe-max-size").read_text())
    except OSError:
        pytest.skip("no /proc/sys/fs/pipe-max-size: not Linux")
    if limit < pool.PIPE_BYTES:
        pytest.skip(f"pipe-max-size is {limit} bytes here")
    backend = executors.LocalBackend(1)
    try:
        f_getpipe_sz = 1032  # fs/pipe.c: pipe_fcntl
        for worker in backend.pool.workers:
            assert fcntl.fcntl(worker.results.fileno(), f_getpipe_sz) >= pool.PIPE_BYTES
            assert fcntl.fcntl(worker.tasks.fileno(), f_getpipe_sz) >= pool.PIPE_BYTES
    finally:
        backend.close(cancel=False)
