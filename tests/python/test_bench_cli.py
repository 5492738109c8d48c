"""``numalab bench``: real commands timed under several placements, repetitions in interleaved
order, statistics, rows in the results store that ``numalab report`` renders."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time

import pytest

from numalab.exceptions import NumalabError
from numalab.results.store import Store
from numalab.runner import host


@pytest.fixture(scope="module", autouse=True)
def agent_built():
    try:
        host.agent_path()
    except NumalabError as e:
        pytest.skip(str(e))


def test_repeat_3_stores_rows_that_report_renders(cli, tmp_path):
    res = tmp_path / "res"
    code, out, err = cli("bench", "--configs", "default,membind=0", "--repeat", "3", "--results", str(res), "--name", "sleepy",
                         "--", "sleep", "0.01")
    assert code == 0, err
    lines = out.splitlines()
    header = lines[1].split()
    assert header == ["config", "runs", "mean_s", "median_s", "ci95_s", "rel_error_pct", "speedup"]
    rows = {line.split()[0]: line.split() for line in lines[3:5]}
    assert rows["default"][1] == "3" and rows["membind=0"][1] == "3"
    assert rows["default"][6] == "1.00"
    assert 0.01 <= float(rows["default"][2]) < 1.0  # sleep 0.01 under the agent
    # Interleaved order: each round runs every configuration once.
    runs = [line for line in err.splitlines() if " runs (" in line]
    order = [line.split(" runs (")[1].split(")")[0] for line in runs]
    assert order == ["default", "membind=0"] * 3
    # The one progress style: run k of N, then the elapsed time.
    assert [line.split()[1] for line in runs] == [f"{k}/6" for k in range(1, 7)]
    assert all(", elapsed 0:00:" in line for line in runs)
    with Store(res, create=False) as store:
        assert store.studies() == ["sleepy"]
        stored = store.rows("sleepy")
    assert len(stored) == 6 and {r["status"] for r in stored} == {"ok"}
    assert [r["label"] for r in stored] == ["default", "membind=0"] * 3
    assert {r["placement"] for r in stored} == {"default", "membind=0"}
    assert len({r["repeat_group"] for r in stored}) == 2  # repetitions of two configurations
    assert all(r["speedup"] == 1.0 for r in stored if r["label"] == "default")
    assert all(r["time_s"] > 0 and r["speedup"] > 0 for r in stored)
    md = tmp_path / "sleepy.md"
    code, out, err = cli("report", str(res), "--study", "sleepy", "-o", str(md))
    assert code == 0, err
    text = md.read_text()
    assert "# numalab bench: a real command timed on host" in text and "# command: sleep 0.01" in text
    assert "| sleep 0.01 | 1.00 (baseline) |" in text  # the baseline against itself: its timed runs differ, not identical
    assert "membind=0" in text and "Pages per node" in text


def test_json_and_the_relative_error_stop(cli, tmp_path):
    # Each run sleeps 10 ms longer than the one before, so no two times agree to 0.0001% (two runs
    # of `true` once took the same microseconds and converged).
    count = tmp_path / "count"
    cmd = f'echo x >> {count}; sleep "0.0$(wc -l < {count})"'
    code, out, err = cli("bench", "-c", "default", "--repeat", "2", "--rel-error", "0.0001", "--max-repeat", "3", "--warmup",
                         "--results", str(tmp_path), "--json", "--", "sh", "-c", cmd)
    assert code == 0, err
    assert err.splitlines()[0].startswith("bench: warm-up default: ")  # untimed, not stored
    doc = json.loads(out)
    assert doc["rounds"] == 3 and doc["converged"] is False
    (c,) = doc["configs"]
    assert c["label"] == "default" and c["runs"] == 3 and len(c["times_s"]) == 3 and c["speedup"] == 1.0
    assert c["ci95_low_s"] <= c["mean_s"] <= c["ci95_high_s"]
    with Store(tmp_path, create=False) as store:
        assert len(store.rows("bench")) == 3
    assert doc["stopped_by"] == "--max-repeat"
    assert err.strip().splitlines()[-1].startswith("numalab: note: the asked relative error was not reached after 3 rounds "
                                                   "(--max-repeat reached); relative errors: default ")


def test_an_unreachable_precision_stops_at_max_time(cli, tmp_path):
    """--rel-error 0.0001 on a fast command: the default --max-repeat (100) or --max-time ends it."""
    began = time.monotonic()
    code, out, err = cli("bench", "-c", "default", "--repeat", "2", "--rel-error", "0.0001", "--max-time", "0.5",
                         "--results", str(tmp_path), "--", "true")
    assert code == 0, err
    assert time.monotonic() - began < 30
    assert "(--max-time reached)" in err.strip().splitlines()[-1]
    code, out, err = cli("bench", "-c", "default", "--rel-error", "5", "--max-time", "nan", "--results", str(tmp_path), "--", "true")
    assert code == 2 and err.strip() == "numalab: --max-time must be in (0, 604800] seconds, got nan"


def test_a_failing_command_stops_the_bench_and_is_stored_as_failed(cli, tmp_path):
    code, out, err = cli("bench", "-c", "default,membind=0", "--repeat", "2", "--results", str(tmp_path), "--", "sh", "-c", "exit 3")
    assert code == 1
    assert "numalab: the command failed under 'default' (exit code 3)" in err
    with Store(tmp_path, create=False) as store:
        rows = [r for r in store.rows("bench") if r["time_s"] is not None or r["status"] == "failed"]
    assert [(r["label"], r["status"], r["error"]) for r in rows if r["status"] == "failed"] == [("default", "failed", "exit code 3")]


@pytest.mark.parametrize("configs, message", [
    ("default,seed=3", "config 'seed=3': seed is a simulator setting"),
    ("kernel=3.13", "kernel is a simulator setting"),
    ("thp=never", "thp is a simulator setting"),
    ("sample-rate=0.5", "sample-rate is a simulator setting"),
    ("balancing", "use `numalab tune`"),
    ("scan-size-mb=64", "use `numalab tune`"),
    ("init=serial", "'init=serial' is a workload parameter"),
    ("membind=7", "config 'membind=7': --membind: node 7 in '7' does not exist"),
    ("default,default", "--configs names 'default' twice"),
    ("interleave", "interleave needs a node list"),
])
def test_configs_a_real_host_cannot_run_are_refused(cli, tmp_path, configs, message):
    code, out, err = cli("bench", "-c", configs, "--results", str(tmp_path), "--", "true")
    assert code == 2 and message in err, err
    assert not (tmp_path / "numalab.db").exists()  # refused before anything ran


def test_missing_command_and_bad_repeats(cli, tmp_path):
    code, _, err = cli("bench", "-c", "default", "--results", str(tmp_path), "--", "no-such-command-numalab")
    assert code == 127 and "numalab: no-such-command-numalab: command not found" in err
    code, _, err = cli("bench", "-c", "default", "--repeat", "0", "--", "true")
    assert code == 2 and "--repeat must be >= 1" in err
    code, _, err = cli("bench", "-c", "default", "--repeat", "1", "--rel-error", "5", "--", "true")
    assert code == 2 and "needs --repeat >= 2" in err


def test_sigterm_between_runs_ends_the_bench_as_a_shell_job(tmp_path):
    """A bench of many short runs: SIGTERM lands between runs as often as during one; 143 either way."""
    p = subprocess.Popen([sys.executable, "-m", "numalab.cli.main", "bench", "-c", "default", "--repeat", "100000",
                          "--results", str(tmp_path), "--", "true"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not (tmp_path / "numalab.db").exists():
            assert p.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        time.sleep(1.0)  # some runs are done
        p.send_signal(signal.SIGTERM)
        out, err = p.communicate(timeout=30)
    finally:
        if p.poll() is None:
            p.kill()
            p.communicate()
    assert p.returncode == 143 and err.strip().splitlines()[-1] == "numalab: terminated by SIGTERM", err
