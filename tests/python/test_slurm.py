"""Studies on a real Slurm (`--slurm`, dask-jobqueue's SLURMCluster): a one-node cluster that
.ci/slurm/up.sh starts on this machine. The same results as a local run; a worker job cancelled
mid-study (`scancel`) loses and repeats no run; a job Slurm refuses is a one-line error.
Skipped, saying why, only where Slurm cannot be installed or started (not root, no apt)."""

from __future__ import annotations

import os
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from numalab.results.store import Store

ROOT = Path(__file__).resolve().parents[2]
SLURM = ROOT / ".ci" / "slurm"

STUDY = """
name = "{name}"
machine = "e5-2620v4-2s"
workload = "dgemv"
repetitions = {reps}
params = {{ n = {n}, reps = {n_reps}, threads = 16 }}
[sweep]
placement = ["default", "interleave=all"]
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def slurm(tmp_path_factory):
    pytest.importorskip("dask_jobqueue")
    # A cluster of the tests' own (directory, ports), so one a developer runs is left alone.
    env = dict(os.environ, NUMALAB_SLURM_DIR=str(tmp_path_factory.mktemp("slurm")),
               NUMALAB_SLURMCTLD_PORT=str(_free_port()), NUMALAB_SLURMD_PORT=str(_free_port()))
    try:
        up = subprocess.run([str(SLURM / "up.sh")], capture_output=True, text=True, env=env, timeout=600)
        if up.returncode == 3:
            pytest.skip(up.stderr.strip().splitlines()[-1])
        assert up.returncode == 0, up.stderr
        env["SLURM_CONF"] = up.stdout.strip().split("=", 1)[1]
        yield env
    finally:
        subprocess.run([str(SLURM / "down.sh")], env=env, timeout=60, check=False)


def _study(slurm_env, tmp_path: Path, *args: str, name: str = "slurm", reps: int = 1, long: bool = False, wait: bool = True):
    """Run a small dgemv study; ``long``: runs of ~0.3 s each, so that a worker job can be
    cancelled while many are still to do."""
    path = tmp_path / f"{name}.toml"
    n, n_reps = (10000, 600) if long else (6000, 100)
    path.write_text(STUDY.format(name=name, reps=reps, n=n, n_reps=n_reps))
    cmd = [sys.executable, "-m", "numalab.cli.main", "study", str(path), *args]
    if wait:
        return subprocess.run(cmd, capture_output=True, text=True, env=slurm_env, timeout=600, cwd=tmp_path)
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=slurm_env, cwd=tmp_path)


def _results(results: Path, name: str) -> dict[str, dict]:
    """Each run's result columns by run hash (what was computed, not when or how long it took)."""
    drop = {"wall_s", "finished_at"}
    with Store(results) as store:
        return {r["hash"]: {k: v for k, v in r.items() if k not in drop} for r in store.rows(name)}


def _jobs(env, states: str = "RUNNING") -> list[str]:
    out = subprocess.run(["squeue", "-h", "-t", states, "-o", "%i"], capture_output=True, text=True, env=env, timeout=30)
    return out.stdout.split()


def test_a_study_on_slurm_stores_what_a_local_run_stores(slurm, tmp_path):
    on_slurm = _study(slurm, tmp_path, "--results", str(tmp_path / "s"), "--slurm", "--jobs", "2", reps=2)
    assert on_slurm.returncode == 0, on_slurm.stderr
    assert "4 of 4 runs done: 4 ok" in on_slurm.stdout
    local = _study(slurm, tmp_path, "--results", str(tmp_path / "l"), "--jobs", "1", reps=2)
    assert local.returncode == 0, local.stderr
    assert _results(tmp_path / "s", "slurm") == _results(tmp_path / "l", "slurm")
    # The workers' Slurm logs are kept beside the store, where a user looks for them.
    assert any((tmp_path / "s" / "slurm-logs").iterdir())


def test_a_worker_job_cancelled_mid_study_loses_and_repeats_no_run(slurm, tmp_path):
    results = tmp_path / "r"
    db = results / "numalab.db"
    proc = _study(slurm, tmp_path, "--results", str(results), "--slurm", "--jobs", "2", name="cancel", reps=12, long=True, wait=False)

    def stored() -> int:
        if not db.exists():
            return 0
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=10)
        try:
            return con.execute("SELECT count(*) FROM runs WHERE status = 'ok'").fetchone()[0]
        except sqlite3.OperationalError:
            return 0
        finally:
            con.close()

    try:
        # Both jobs queued and a run stored: one worker is working; cancel a running job.
        end = time.monotonic() + 300
        while not (len(_jobs(slurm, "PENDING,RUNNING")) == 2 and _jobs(slurm) and stored() >= 1):
            assert proc.poll() is None and time.monotonic() < end, "the study ended before a worker job could be cancelled"
            time.sleep(0.05)
        cancelled = _jobs(slurm)[0]
        subprocess.run(["scancel", cancelled], env=slurm, check=True, timeout=30)
        at_cancel = stored()
        out, err = proc.communicate(timeout=600)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, err
    assert at_cancel < 24, "the job was cancelled after the study had finished"
    assert "24 of 24 runs done: 24 ok" in out
    con = sqlite3.connect(db)
    assert con.execute("SELECT count(*), count(DISTINCT hash) FROM runs WHERE status = 'ok'").fetchone() == (24, 24)
    con.close()
    assert cancelled not in _jobs(slurm, "PENDING,RUNNING")


def test_a_job_slurm_refuses_is_a_one_line_error(slurm, tmp_path):
    done = _study(slurm, tmp_path, "--results", str(tmp_path / "r"), "--slurm", "--queue", "no-such-partition")
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("numalab: --slurm: Slurm refuses the worker job:"), done.stderr
    assert "invalid partition" in lines[0].lower()
    assert not _jobs(slurm, "PENDING,RUNNING")  # nothing was queued

