"""``numalab tune`` on a fake knob tree (``--knob-root``): each grid point's knobs are written
while the command runs, every original value comes back at the end, on failure, on SIGTERM and
after ``kill -9`` (from the journal, at the next start or with ``--restore``), and nothing is
changed without consent."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import pytest

from numalab.cli import tune
from numalab.exceptions import NumalabError
from numalab.results.store import Store
from numalab.runner import host
from numalab.spec import Balancing

S1 = Path(__file__).parent.parent.parent / "studies" / "s1-autonuma-npb.toml"
PROCFS = "proc/sys/kernel/numa_balancing"
DEBUGFS = "sys/kernel/debug/sched/numa_balancing"
# Deliberately not the kernel's defaults, so a restore to defaults would be caught.
ORIGINAL = {"numa_balancing": 0, "scan_delay_ms": 1111, "scan_period_min_ms": 2222, "scan_period_max_ms": 33333, "scan_size_mb": 44}


@pytest.fixture(scope="module", autouse=True)
def agent_built():
    try:
        host.agent_path()
    except NumalabError as e:
        pytest.skip(str(e))


@pytest.fixture
def root(tmp_path) -> Path:
    """A Linux 5.13+ layout: numa_balancing in procfs, the scanner knobs in debugfs."""
    r = tmp_path / "knobs"
    (r / DEBUGFS).mkdir(parents=True)
    (r / PROCFS).parent.mkdir(parents=True)
    (r / PROCFS).write_text(f"{ORIGINAL['numa_balancing']}\n")
    for k, v in ORIGINAL.items():
        if k != "numa_balancing":
            (r / DEBUGFS / k).write_text(f"{v}\n")
    return r


def values(root: Path) -> dict[str, int]:
    out = {"numa_balancing": int((root / PROCFS).read_text())}
    out.update({k: int((root / DEBUGFS / k).read_text()) for k in ORIGINAL if k != "numa_balancing"})
    return out


def numalab(*args: str, **kw) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "numalab.cli.main", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, **kw)


def spy(root: Path, out: Path) -> list[str]:
    """A command that appends the knob values it runs under to ``out``."""
    files = " ".join(str(root / PROCFS if k == "numa_balancing" else root / DEBUGFS / k) for k in ORIGINAL)
    return ["sh", "-c", f"echo $(cat {files}) >> {out}"]


def test_each_point_runs_under_its_knobs_and_everything_is_restored(cli, root, tmp_path):
    seen = tmp_path / "seen.txt"
    code, out, err = cli("tune", "--knob-root", str(root), "--allow-system-changes", "--results", str(tmp_path / "res"),
                         "--grid", "balancing=off,balancing:scan-period-min-ms=100:scan-period-max-ms=500:scan-delay-ms=300,balancing",
                         "--repeat", "2", "--", *spy(root, seen))
    assert code == 0, err
    # numa_balancing, scan_delay_ms, scan_period_min_ms, scan_period_max_ms, scan_size_mb; a knob a point
    # leaves out gets the kernel's default (1000, 1000, 60000, 256); off leaves the scanner knobs alone.
    point = {"off": "0 1111 2222 33333 44", "grid": "1 300 100 500 256", "on": "1 1000 1000 60000 256"}
    runs = seen.read_text().splitlines()
    assert runs[:3] == [point["off"], point["grid"], point["on"]]
    assert runs[3:] == ["0 1000 1000 60000 256", point["grid"], point["on"]]  # round 2: off keeps the last scanner values
    assert values(root) == ORIGINAL
    assert not (root / ".numalab-knobs-journal.json").exists()
    assert "restored the NUMA balancing knobs: numa_balancing=0, scan_delay_ms=1111" in err
    with Store(tmp_path / "res", create=False) as store:
        rows = store.rows("tune")
    assert [r["label"] for r in rows[:3]] == ["balancing=off", "balancing:scan-period-min-ms=100:scan-period-max-ms=500:scan-delay-ms=300", "balancing"]
    assert len(rows) == 6 and {r["status"] for r in rows} == {"ok"}
    assert "hint_fault_locality_pct" in out.splitlines()[1]


def test_restore_after_kill_9_with_restore(root, tmp_path):
    journal = root / ".numalab-knobs-journal.json"
    p = numalab("tune", "--knob-root", str(root), "--allow-system-changes", "--results", str(tmp_path / "res"),
                "--grid", "balancing:scan-size-mb=64", "--", "sleep", "30", start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while values(root)["scan_size_mb"] != 64:
            assert p.poll() is None, p.communicate()
            assert time.monotonic() < deadline, "tune never wrote the knobs"
            time.sleep(0.05)
        os.kill(p.pid, signal.SIGKILL)  # the tool dies; its agent and the sleep are left running
        p.wait()
    finally:
        # The agent and the command are left in the group, unless the kill came before tune started them.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(p.pid, signal.SIGKILL)
        p.communicate()
    assert values(root) == {**ORIGINAL, "numa_balancing": 1, "scan_delay_ms": 1000, "scan_period_min_ms": 1000,
                            "scan_period_max_ms": 60000, "scan_size_mb": 64}
    assert journal.exists()
    r = numalab("tune", "--knob-root", str(root), "--restore")
    out, err = r.communicate(timeout=60)
    assert r.returncode == 0, err
    assert values(root) == ORIGINAL and not journal.exists()
    assert "an earlier numalab tune did not finish" in err
    assert "numa_balancing=0, scan_delay_ms=1111, scan_period_min_ms=2222, scan_period_max_ms=33333, scan_size_mb=44" in err
    r = numalab("tune", "--knob-root", str(root), "--restore")
    assert r.communicate(timeout=60)[1].strip() == f"numalab tune: nothing to restore: no journal at {journal}"


def test_the_next_tune_restores_a_journal_left_behind_first(cli, root, tmp_path):
    """What kill -9 leaves: knobs changed and a journal of their originals."""
    exe = host.agent_path()
    journal = root / ".numalab-knobs-journal.json"
    subprocess.run([str(exe), "knobs", "set", "numa_balancing=1", "scan_size_mb=8", "--journal", str(journal),
                    "--root", str(root)], check=True, capture_output=True)
    assert values(root)["scan_size_mb"] == 8
    seen = tmp_path / "seen.txt"
    code, out, err = cli("tune", "--knob-root", str(root), "--allow-system-changes", "--results", str(tmp_path / "res"),
                         "--grid", "balancing=off", "--", *spy(root, seen))
    assert code == 0, err
    assert "an earlier numalab tune did not finish (killed?): restored" in err and "scan_size_mb=44" in err
    assert seen.read_text().split() == ["0", "1111", "2222", "33333", "44"]  # ran after the restore
    assert values(root) == ORIGINAL and not journal.exists()


def test_failure_and_sigterm_restore_the_knobs(cli, root, tmp_path):
    code, out, err = cli("tune", "--knob-root", str(root), "--allow-system-changes", "--results", str(tmp_path / "a"),
                         "--grid", "balancing:scan-size-mb=64", "--", "sh", "-c", "exit 4")
    assert code == 1 and "the command failed under 'balancing:scan-size-mb=64' (exit code 4)" in err
    assert "stopped by an error: restored the NUMA balancing knobs" in err
    assert values(root) == ORIGINAL
    # The command says when it runs (the knobs are written before it starts), so the signal never
    # races the setup; the knob files are replaced whole, so reading them here never sees a half-written one.
    ready = tmp_path / "running"
    p = numalab("tune", "--knob-root", str(root), "--allow-system-changes", "--results", str(tmp_path / "b"),
                "--grid", "balancing:scan-size-mb=64", "--", "sh", "-c", f"touch {ready}; exec sleep 30")
    deadline = time.monotonic() + 60
    while not ready.exists():
        assert p.poll() is None and time.monotonic() < deadline
        time.sleep(0.02)
    assert values(root)["scan_size_mb"] == 64
    p.send_signal(signal.SIGTERM)
    out, err = p.communicate(timeout=60)
    assert p.returncode == 128 + signal.SIGTERM, err
    assert "numalab tune: terminated: restored the NUMA balancing knobs: numa_balancing=0, scan_delay_ms=1111" in err
    assert err.strip().splitlines()[-1] == "numalab: terminated by SIGTERM"
    assert values(root) == ORIGINAL and not (root / ".numalab-knobs-journal.json").exists()


def test_nothing_changes_without_consent_or_root(cli, root, tmp_path, monkeypatch):
    code, out, err = cli("tune", "--knob-root", str(root), "--results", str(tmp_path), "--", "true")
    assert code == 2 and "pass --allow-system-changes" in err
    assert values(root) == ORIGINAL and not (tmp_path / "numalab.db").exists()
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    monkeypatch.setattr(tune, "SYSTEM_JOURNAL", tmp_path / "no-journal.json")
    code, out, err = cli("tune", "--allow-system-changes", "--results", str(tmp_path), "--", "true")
    assert code == 2 and "numalab tune must run as root" in err


@pytest.mark.parametrize("grid, message", [
    ("interleave=all", "--grid 'interleave=all': balancing item 'interleave=all' is not accepted"),
    ("balancing:scan-period-min-ms=600:scan-period-max-ms=50", "(600) is above --scan-period-max-ms (50)"),
    ("balancing:scan-size-mb=lots", "'lots' is not a size"),
])
def test_bad_grid_points_are_refused_before_any_change(cli, root, tmp_path, grid, message):
    code, out, err = cli("tune", "--knob-root", str(root), "--allow-system-changes", "--results", str(tmp_path), "--grid", grid, "--", "true")
    assert code == 2 and message in err, err
    assert values(root) == ORIGINAL


def test_a_kernel_without_the_scanner_knobs_is_refused(cli, tmp_path):
    r = tmp_path / "old"
    (r / PROCFS).parent.mkdir(parents=True)
    (r / PROCFS).write_text("0\n")
    code, out, err = cli("tune", "--knob-root", str(r), "--allow-system-changes", "--results", str(tmp_path), "--grid", "balancing", "--", "true")
    assert code == 2 and "shows no scan_delay_ms, scan_period_min_ms, scan_period_max_ms, scan_size_mb" in err
    assert (r / PROCFS).read_text() == "0\n"


def test_procfs_scanner_knobs_of_old_kernels_are_used(cli, tmp_path):
    """Before Linux 5.13 the scanner knobs are sysctls: kernel/numa_balancing_scan_*."""
    r = tmp_path / "old"
    kernel = r / "proc/sys/kernel"
    kernel.mkdir(parents=True)
    (kernel / "numa_balancing").write_text("1\n")
    for k in ("scan_delay_ms", "scan_period_min_ms", "scan_period_max_ms", "scan_size_mb"):
        (kernel / f"numa_balancing_{k}").write_text("7\n")
    seen = tmp_path / "seen.txt"
    cmd = ["sh", "-c", f"cat {kernel}/numa_balancing {kernel}/numa_balancing_scan_size_mb >> {seen}"]
    code, out, err = cli("tune", "--knob-root", str(r), "--allow-system-changes", "--results", str(tmp_path / "res"),
                         "--grid", "balancing:scan-size-mb=32", "--", *cmd)
    assert code == 0, err
    assert seen.read_text().split() == ["1", "32"]
    assert (kernel / "numa_balancing_scan_size_mb").read_text().strip() == "7"


def test_default_grid_is_study_s1s_knob_settings():
    study = tomllib.loads(S1.read_text())
    s1 = [Balancing.parse(r["balancing"]).canonical() for r in study["runs"] if "balancing" in r]
    grid = [tune.grid_point(text).canonical() for text in tune.S1_GRID]
    key = lambda c: json.dumps(c, sort_keys=True)  # noqa: E731
    assert sorted(map(key, grid)) == sorted(set(map(key, s1)))  # S1's default and interleave runs share "off"
    assert grid[0] == {"enabled": False}  # the baseline comes first


def test_a_second_tune_is_refused_while_one_runs(cli, root, tmp_path):
    ready = tmp_path / "running"
    p = numalab("tune", "--knob-root", str(root), "--allow-system-changes", "--results", str(tmp_path / "a"),
                "--grid", "balancing:scan-size-mb=64", "--", "sh", "-c", f"touch {ready}; exec sleep 30")
    try:
        deadline = time.monotonic() + 60
        while not ready.exists():
            assert p.poll() is None and time.monotonic() < deadline
            time.sleep(0.02)
        for extra in (["--grid", "balancing=off", "--", "true"], ["--restore"]):
            code, out, err = cli("tune", "--knob-root", str(root), "--allow-system-changes", "--results", str(tmp_path / "b"),
                                 *extra)
            assert code == 1 and err == f"numalab: another numalab tune (pid {p.pid}) is changing the knobs journalled in " \
                                        f"{root / '.numalab-knobs-journal.json'}; wait for it to end\n", err
            assert values(root)["scan_size_mb"] == 64  # the running tune's setting, not restored under it
    finally:
        p.send_signal(signal.SIGTERM)
        p.communicate(timeout=60)
    assert p.returncode == 128 + signal.SIGTERM and values(root) == ORIGINAL


def test_a_knob_that_does_not_read_back_as_written_is_not_measured(cli, root, tmp_path, monkeypatch):
    """Another program changes numa_balancing right after tune wrote it: the run is refused."""
    real = tune._setter

    def racing(r, j, point):
        write = real(r, j, point)

        def both():
            expected = write()
            (root / PROCFS).write_text("0\n")
            return expected

        return both

    monkeypatch.setattr(tune, "_setter", racing)
    seen = tmp_path / "seen.txt"
    code, out, err = cli("tune", "--knob-root", str(root), "--allow-system-changes", "--results", str(tmp_path / "res"),
                         "--grid", "balancing", "--", *spy(root, seen))
    assert code == 1 and "do not read back as written: numa_balancing=0 (written 1); refusing to measure" in err, err
    assert not seen.exists() and values(root) == ORIGINAL


def test_the_read_back_knobs_are_stored_in_the_result(cli, root, tmp_path):
    code, out, err = cli("tune", "--knob-root", str(root), "--allow-system-changes", "--results", str(tmp_path / "res"),
                         "--grid", "balancing:scan-size-mb=64", "--", "true")
    assert code == 0, err
    with Store(tmp_path / "res", create=False) as store:
        doc = json.loads(store.rows("tune", documents=True)[0]["result"])
    assert doc["placement"]["balancing"]["knobs"] == {"numa_balancing": 1, "scan_delay_ms": 1000, "scan_period_min_ms": 1000,
                                                      "scan_period_max_ms": 60000, "scan_size_mb": 64}


def test_knob_writes_do_not_follow_symbolic_links(cli, root, tmp_path):
    victim = tmp_path / "victim"
    victim.write_text("44\n")
    (root / DEBUGFS / "scan_size_mb").unlink()
    (root / DEBUGFS / "scan_size_mb").symlink_to(victim)
    code, out, err = cli("tune", "--knob-root", str(root), "--allow-system-changes", "--results", str(tmp_path / "res"),
                         "--grid", "balancing:scan-size-mb=64", "--", "true")
    assert code == 1 and err.startswith("numalab: ") and "scan_size_mb is a symbolic link" in err, err
    assert victim.read_text() == "44\n"
    assert (root / PROCFS).read_text() == "0\n"  # nothing was written: every file is checked first
    assert not (root / ".numalab-knobs-journal.json").exists()


def test_one_knob_table_for_the_engine_the_agent_and_python(root):
    """numalab_model::knobs: the simulator's tunables (through _core), the agent's knobs and the
    scanner knobs tune writes and a host document reports are the same names."""
    from numalab._core import balancing_knobs
    from numalab.results import agent

    got = host.knobs(root)
    assert sorted(k["name"] for k in got["knobs"]) + sorted(got["absent"]) == \
        sorted(ORIGINAL) + ["hot_threshold_ms", "promote_rate_limit_mbps"]
    assert {k["name"] for k in got["knobs"]} | set(got["absent"]) == {"numa_balancing", *(k["name"] for k in balancing_knobs())}
    assert agent.SCANNER_KNOBS == tune.KNOBS == tuple(k for k in ORIGINAL if k != "numa_balancing")
