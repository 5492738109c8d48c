"""Sweeps: a study killed mid-run (SIGKILL, Ctrl-C) resumes with every run exactly once, failed
runs are recorded without stopping the others and tried again, out-of-memory is an outcome,
and a study runs on a Dask cluster through --scheduler."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from numalab.results.store import Store
from numalab.study import expand, load_study, parse_study, worker
from numalab.study.sweep import run_study

from inline_backend import InlineBackend

# 32 runs of about 0.1-0.2 s each: long enough to be killed in the middle. The sweep commits
# whole batches (up to a second of runs each), so the stored count jumps; with 16 runs, a fast
# host under the suite's load once went from under 3 to all 16 between two looks.
SLOW = """
name = "slow"
machine = "e5-2620v4-2s"
workload = "dgemv"
repetitions = 32
params = { n = 10000, reps = 200, threads = 16 }
"""


def _numalab(*args: str, **kw) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "numalab.cli.main", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)


def _stored(db: Path) -> dict[str, tuple[str, float]]:
    if not db.exists():
        return {}
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=10)
    try:
        return {h: (f, w) for h, f, w in con.execute("SELECT hash, finished_at, wall_s FROM runs WHERE status = 'ok'")}
    except sqlite3.OperationalError:  # the schema is not written yet
        return {}
    finally:
        con.close()


def _wait_for(predicate, timeout_s: float = 60.0) -> None:
    end = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > end:
            raise AssertionError("timed out")
        time.sleep(0.02)


def _processes_where(field: int, value: int) -> list[int]:
    """PIDs whose /proc/PID/stat field (after the command name: 1 = ppid, 3 = session) equals value."""
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rpartition(")")[2].split()
        except OSError:
            continue
        if int(fields[field]) == value:
            out.append(int(stat.parent.name))
    return out


def _session_processes(sid: int) -> list[int]:
    return _processes_where(3, sid)


def _started_then_stopped(tmp_path: Path, sig: int) -> tuple[Path, Path, dict, subprocess.Popen, str]:
    study = tmp_path / "slow.toml"
    study.write_text(SLOW)
    results = tmp_path / "results"
    db = results / "numalab.db"
    proc = _numalab("study", str(study), "--results", str(results), "--workers", "1", start_new_session=True)
    _wait_for(lambda: len(_stored(db)) >= 3)
    os.kill(proc.pid, sig)
    _, err = proc.communicate(timeout=60)
    return study, results, _stored(db), proc, err


def _resume_and_check(study: Path, results: Path, before: dict) -> None:
    expected = {r.hash for r in expand(load_study(study)).runs}
    assert 3 <= len(before) < len(expected), "the study should have been stopped in the middle"
    done = subprocess.run([sys.executable, "-m", "numalab.cli.main", "study", str(study), "--results", str(results), "--workers", "1"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert f"{len(before)} already in the store" in done.stdout
    con = sqlite3.connect(results / "numalab.db")
    rows = con.execute("SELECT hash, status FROM runs").fetchall()
    con.close()
    assert sorted(h for h, _ in rows) == sorted(expected)  # every run, exactly once
    assert {s for _, s in rows} == {"ok"}
    after = _stored(results / "numalab.db")
    for h, (finished_at, wall_s) in before.items():
        assert after[h] == (finished_at, wall_s), "a finished run was run again"


def test_sigkill_mid_study_then_resume_runs_every_run_exactly_once(tmp_path):
    study, results, before, proc, _ = _started_then_stopped(tmp_path, signal.SIGKILL)
    assert proc.returncode == -signal.SIGKILL
    # Its worker processes notice the client is gone and exit rather than run on orphaned.
    _wait_for(lambda: not _session_processes(proc.pid), timeout_s=10)
    _resume_and_check(study, results, before)


def _children(pid: int) -> list[int]:
    return _processes_where(1, pid)


def _workers(pid: int) -> list[int]:
    """The study's worker processes: forked children running the client's own command line (not
    multiprocessing's forkserver or resource tracker, which a sweep may also start)."""
    def cmdline(p: int) -> bytes:
        try:
            return Path(f"/proc/{p}/cmdline").read_bytes()
        except OSError:
            return b""

    own = cmdline(pid)
    return [c for c in _children(pid) if own and cmdline(c) == own]


def test_a_lost_worker_does_not_lose_or_repeat_runs(tmp_path):
    study = tmp_path / "slow.toml"
    study.write_text(SLOW)
    results = tmp_path / "results"
    proc = _numalab("study", str(study), "--results", str(results), "--workers", "2", start_new_session=True)
    _wait_for(lambda: len(_stored(results / "numalab.db")) >= 2 and _workers(proc.pid))
    os.kill(_workers(proc.pid)[0], signal.SIGKILL)  # as the kernel's OOM killer would
    try:
        out, err = proc.communicate(timeout=300)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        pytest.fail(f"the study did not finish after losing a worker; stored {len(_stored(results / 'numalab.db'))} of 32\n"
                    f"stdout: {out[-2000:]}\nstderr: {err[-2000:]}")
    assert proc.returncode == 0, err
    assert "32 of 32 runs done: 32 ok" in out
    con = sqlite3.connect(results / "numalab.db")
    assert con.execute("SELECT count(*), count(DISTINCT hash) FROM runs WHERE status = 'ok'").fetchone() == (32, 32)
    con.close()


def test_ctrl_c_stops_cleanly_keeping_finished_runs(tmp_path):
    study, results, before, proc, err = _started_then_stopped(tmp_path, signal.SIGINT)
    assert proc.returncode == 130
    assert "interrupted" in err
    _wait_for(lambda: not _session_processes(proc.pid), timeout_s=10)
    _resume_and_check(study, results, before)




def test_failed_runs_are_recorded_and_tried_again(tmp_path, monkeypatch):
    resolved = expand(parse_study('name = "f"\nmachine = "e5-2620v4-2s"\nworkload = "dgemv"\nparams = { n = 2000, reps = 2 }\n'
                                  '[baseline]\nplacement = "default"\n[sweep]\nplacement = ["default", "interleave=all", "membind=1"]\n'))
    real = worker.simulate

    def flaky(config):
        if config["placement"] == "interleave=all":
            raise RuntimeError("boom")
        return real(config)

    monkeypatch.setattr(worker, "simulate", flaky)
    with Store(tmp_path) as store:
        s = run_study(resolved, store, InlineBackend)
        assert (s.ok, s.failed) == (2, 1)
        rows = {r["placement"]: r for r in store.rows("f")}
        assert rows["interleave=all"]["status"] == "failed" and rows["interleave=all"]["error"] == "RuntimeError: boom"
        assert rows["membind=1"]["status"] == "ok" and rows["membind=1"]["speedup"] is not None
        monkeypatch.setattr(worker, "simulate", real)
        s = run_study(resolved, store, InlineBackend)
        assert (s.skipped, s.ok, s.failed) == (2, 1, 0)
        assert {r["status"] for r in store.rows("f")} == {"ok"}
        assert store.db.execute("SELECT count(*) FROM runs").fetchone()[0] == 3


def test_out_of_memory_is_an_outcome_not_a_failure(tmp_path):
    resolved = expand(parse_study('name = "oom"\nmachine = "vm-4"\nworkload = "dgemv"\nparams = { n = 20000, reps = 1, threads = 4 }\n'
                                  '[sweep]\nplacement = ["membind=0", "interleave=all"]\n'))
    with Store(tmp_path) as store:
        s = run_study(resolved, store, InlineBackend)
        assert s.out_of_memory == 2
        row = store.rows("oom")[0]
        assert row["status"] == "out-of-memory" and "out of memory" in row["error"]
        assert run_study(resolved, store, InlineBackend).skipped == 2


def test_the_summary_counts_the_runs_own_cpu_time(tmp_path):
    """Each outcome carries its run's CPU time (the study overhead benchmark subtracts their sum):
    a single-threaded simulation spends at most its wall time on a CPU, and some of it."""
    resolved = expand(parse_study('name = "cpu"\nmachine = "e5-2620v4-2s"\nworkload = "dgemv"\nparams = { n = 2000, reps = 2 }\nseeds = [1, 2, 3]\n'))
    outcome = worker.run_config(resolved.runs[0].config)
    assert 0 < outcome["cpu_s"] <= outcome["wall_s"] + 0.005
    with Store(tmp_path) as store:
        s = run_study(resolved, store, InlineBackend)
    assert s.ok == 3 and 0 < s.run_cpu_s <= s.run_wall_s + 3 * 0.005


def test_the_sweeps_bar_is_redrawn_once_a_second():
    """rich draws a bar 10 times a second by default, about 2.5 ms of CPU each, which a sweep whose
    workers fill the CPUs takes from the simulations; the sweep's bar is drawn once a second."""
    import io

    from numalab.study.sweep import study_progress

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    stream = Terminal()
    progress = study_progress(stream=stream)
    progress.start(10)
    time.sleep(2.5)
    progress.update(3, "2 running, 0 failed")
    progress.stop()
    redraws = stream.getvalue().count("\x1b[2K")  # each redraw erases the line it draws over
    # Once a second for 2.5 s with the last: 3 (2 a second: 5-6; rich's default: about 25).
    assert 1 <= redraws <= 4, redraws


def test_balancing_runs_are_passed_through_and_recorded(tmp_path):
    """Balancing settings reach the simulator as config items; a simulator that does not have
    them yet fails those runs with a clear error, and the other runs still complete."""
    resolved = expand(parse_study('name = "b"\nmachine = "e5-2620v4-2s"\nworkload = "dgemv"\nparams = { n = 2000, reps = 2 }\n'
                                  '[sweep]\nbalancing = [false, "on:scan-period-min-ms=100:scan-size-mb=128"]\n'))
    with Store(tmp_path) as store:
        run_study(resolved, store, InlineBackend)
        rows = {r["balancing"]: r for r in store.rows("b")}
    assert rows['{"enabled": false}']["status"] == "ok"
    on = rows['{"enabled": true, "scan_period_min_ms": 100, "scan_size_mb": 128}']
    assert on["status"] == "ok" or "balancing" in on["error"], on["error"]


def test_study_on_a_dask_cluster_through_scheduler(tmp_path):
    distributed = pytest.importorskip("distributed")
    study = tmp_path / "d.toml"
    study.write_text('name = "dask"\nmachine = "e5-2620v4-2s"\nworkload = "dgemv"\nparams = { n = 2000, reps = 2 }\nseeds = [1, 2]\n'
                     '[sweep]\nplacement = ["default", "interleave=all"]\n')
    # ":0", a free port: None means dask's 8787, and a second cluster on the machine (another
    # worker's test) turns that into a "Port 8787 is already in use" warning, an error here.
    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=True, dashboard_address=":0") as cluster:
        done = subprocess.run([sys.executable, "-m", "numalab.cli.main", "study", str(study), "--results", str(tmp_path / "r"),
                               "--scheduler", cluster.scheduler_address], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "4 of 4 runs done: 4 ok" in done.stdout
    with Store(tmp_path / "r") as store:
        assert [r["status"] for r in store.rows("dask")] == ["ok"] * 4


def test_unreachable_scheduler_is_a_clear_error(cli, tmp_path, monkeypatch):
    pytest.importorskip("distributed")
    monkeypatch.setenv("NUMALAB_DASK_CONNECT_TIMEOUT_S", "1")
    study = tmp_path / "d.toml"
    study.write_text('name = "dask"\nmachine = "e5-2620v4-2s"\nworkload = "dgemv"\n')
    code, _, err = cli("study", str(study), "--results", str(tmp_path / "r"), "--scheduler", "tcp://127.0.0.1:9")
    assert code == 2 and "cannot reach the Dask scheduler at tcp://127.0.0.1:9" in err


def test_slurm_without_dask_jobqueue_says_how_to_install(cli, tmp_path):
    try:
        import dask_jobqueue  # noqa: F401

        pytest.skip("dask-jobqueue is installed")
    except ImportError:
        pass
    study = tmp_path / "d.toml"
    study.write_text('name = "slurm"\nmachine = "e5-2620v4-2s"\nworkload = "dgemv"\n')
    code, _, err = cli("study", str(study), "--results", str(tmp_path / "r"), "--slurm", "--queue", "q")
    assert code == 2 and "pip install dask-jobqueue" in err


def _catches_everything(marker: str) -> None:
    """Waits as ``concurrent.futures.process._sendback_result`` does on a results lock a killed
    worker held: any exception, KeyboardInterrupt included, is caught and the wait resumes."""
    Path(marker).touch()
    while True:
        try:
            time.sleep(3600)
        except BaseException:
            pass


def test_a_worker_dies_on_sigterm_though_the_sweep_turns_sigterm_into_an_exception(tmp_path):
    """The executor stops a broken pool's workers with SIGTERM and waits for them. Workers are
    forked inside the sweep, whose SIGTERM handler raises KeyboardInterrupt; a worker that kept
    it survived while waiting on a lock, and the study hung after losing a worker (CI)."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    def interrupt(signum, frame):
        raise KeyboardInterrupt

    marker = tmp_path / "waiting"
    previous = signal.signal(signal.SIGTERM, interrupt)
    pid = None
    try:
        pool = ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("fork"), initializer=worker.init_local_worker)
        pid = pool.submit(os.getpid).result(timeout=60)
        stuck = pool.submit(_catches_everything, str(marker))
        _wait_for(marker.exists)
        os.kill(pid, signal.SIGTERM)
        with pytest.raises(BrokenProcessPool):
            stuck.result(timeout=30)
        pool.shutdown()
    finally:
        signal.signal(signal.SIGTERM, previous)
        if pid is not None and Path(f"/proc/{pid}").exists():
            os.kill(pid, signal.SIGKILL)
