"""``numalab run`` end to end on this host, through the built numalab-agent: the command runs
under the placement, its output and exit status are its own, and the document says source: host."""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from numalab.exceptions import NumalabError
from numalab.runner import host


@pytest.fixture(scope="module", autouse=True)
def agent_built():
    try:
        host.agent_path()
    except NumalabError as e:
        pytest.skip(str(e))


def numalab(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "numalab.cli.main", *args], capture_output=True, text=True, cwd=cwd, timeout=120)


def balancing_on() -> bool:
    p = Path("/proc/sys/kernel/numa_balancing")
    return p.exists() and p.read_text().strip() != "0"


def test_membind_runs_the_command_and_writes_a_host_document(tmp_path):
    out = tmp_path / "doc.json"
    r = numalab("run", "--membind", "0", "-o", str(out), "--", "cat", "/proc/self/status")
    assert r.returncode == 0, r.stderr
    status = dict(line.split(":", 1) for line in r.stdout.splitlines() if ":" in line)
    assert status["Mems_allowed_list"].strip() == "0" and status["Name"].strip() == "cat"
    doc = json.loads(out.read_text())
    assert (doc["schema"], doc["source"], doc["status"]) == ("numalab.result/1", "host", "ok")
    assert (doc["placement"]["policy"], doc["placement"]["nodes"], doc["placement"]["numa_maps_policy"]) == ("bind", "0", "bind:0")
    nodes = doc["pages"]["nodes"]
    assert 0 in nodes and len(doc["pages"]["per_node"]) == len(nodes)
    assert set(doc["numastat"]) == {f"node{n}" for n in nodes}
    assert "numa_hit" in doc["numastat"]["node0"] and "numa_hit" in doc["vmstat"]
    assert doc["workload"]["command"] == ["cat", "/proc/self/status"]
    assert ("access_map" in doc) == balancing_on()
    # The summary goes to stderr, so the command's stdout stays the command's.
    assert "cat /proc/self/status on host: bind:0" in r.stderr and "numastat (allocations)" in r.stderr
    if doc["pages"]["t_s"] is None:  # cat ends long before the first sample at 1 s
        assert "pages per node are not known" in r.stderr


def test_pages_per_node_of_a_command_that_lives_past_a_sample(tmp_path):
    out = tmp_path / "doc.json"
    r = numalab("run", "-l", "--interval-ms", "20", "-o", str(out), "--", "sh", "-c", "sleep 0.3")
    assert r.returncode == 0, r.stderr
    doc = json.loads(out.read_text())
    assert doc["placement"]["policy"] == "local"
    assert sum(doc["pages"]["per_node"]) > 0 and len(doc["timeline"]) >= 2 and doc["pages"]["t_s"] > 0
    assert "pages per node are not known" not in r.stderr
    assert doc["agent"]["samples"] >= 2 and doc["threads"][0]["time_s"] >= 0


def test_exit_status_is_the_commands():
    r = numalab("run", "--json", "--", "sh", "-c", "exit 3")
    assert r.returncode == 3, r.stderr
    doc = json.loads(r.stdout)
    assert (doc["status"], doc["error"]) == ("failed", "exit code 3")
    r = numalab("run", "--", "sh", "-c", "kill -TERM $$")
    assert r.returncode == 128 + 15 and "killed by SIGTERM" in r.stderr


def test_missing_command_is_127_like_a_shell():
    r = numalab("run", "--", "no-such-command-numalab")
    assert r.returncode == 127
    assert r.stderr.strip() == "numalab: no-such-command-numalab: command not found"
    r = numalab("run", "--", "/etc")
    assert r.returncode == 126 and "Is a directory" in r.stderr


def test_record_keeps_the_agents_json_lines(tmp_path):
    rec = tmp_path / "run.jsonl"
    r = numalab("run", "--record", str(rec), "--", "true")
    assert r.returncode == 0, r.stderr
    kinds = [json.loads(line)["type"] for line in rec.read_text().splitlines()]
    assert kinds[0] == "start" and kinds[-1] == "summary" and set(kinds) <= {"start", "sample", "summary"}


def test_options_end_at_the_command_name():
    r = numalab("run", "-m", "0", "echo", "-n", "x")
    assert r.returncode == 0 and r.stdout == "x"


@pytest.mark.parametrize("args, message", [
    (["--membnd", "0", "--", "true"], "no such option --membnd for numalab run; did you mean --membind?"),
    (["--membind", "7", "--", "true"], "--membind: node 7 in '7' does not exist on this machine"),
    (["--physcpubind", "999", "--", "true"], "--physcpubind: cpu 999"),
    (["-m", "0", "-i", "all", "--", "true"], "give at most one memory policy option"),
    (["-N", "0", "-C", "0", "--", "true"], "not both"),
    (["-w", "0", "--weights", "0:2", "--", "true"], "weights are system-wide"),
    (["--interval-ms", "0", "--", "true"], "--interval-ms must be 1..3600000"),
    ([], "Missing argument"),
])
def test_bad_input_is_one_line_and_exit_2(args, message):
    r = numalab("run", *args)
    assert r.returncode == 2, r.stderr
    assert r.stderr.startswith("numalab: ") and len(r.stderr.strip().splitlines()) == 1 and message in r.stderr


def test_json_output_is_the_document_alone_and_the_commands_stdout_goes_to_stderr():
    """`numalab run --json -- prog | python -m json.tool` parses: the command's stdout is on stderr."""
    cmd = [sys.executable, "-m", "numalab.cli.main", "run", "--json", "--", "echo", "hello from the command"]
    pipe = subprocess.run(f"{shlex.join(cmd)} | {shlex.quote(sys.executable)} -m json.tool", shell=True, capture_output=True, text=True,
                          timeout=120)
    assert pipe.returncode == 0, pipe.stderr
    doc = json.loads(pipe.stdout)
    assert doc["source"] == "host" and doc["workload"]["command"] == ["echo", "hello from the command"]
    assert "hello from the command" in pipe.stderr
    r = numalab("run", "--help")
    assert "own stdout then goes to stderr" in " ".join(r.stdout.split())


def test_agent_inputs_that_never_end_or_cannot_be_written_are_one_line(tmp_path):
    agent = str(host.agent_path())
    knob = tmp_path / "root/proc/sys/kernel/numa_balancing"
    knob.parent.mkdir(parents=True)
    knob.symlink_to("/dev/zero")
    r = subprocess.run([agent, "knobs", "get", "--root", str(tmp_path / "root")], capture_output=True, text=True, timeout=20)
    assert r.returncode == 1 and r.stderr == f"numalab-agent: cannot read {knob}: a device, not a regular system file\n"
    ran = tmp_path / "ran"
    r = subprocess.run([agent, "run", "--output", str(tmp_path / "missing/records.jsonl"), "--", "touch", str(ran)],
                       capture_output=True, text=True, timeout=20)
    assert r.returncode == 2 and r.stderr.startswith(f"numalab-agent: cannot write {tmp_path / 'missing/records.jsonl'}: ")
    assert len(r.stderr.splitlines()) == 1 and not ran.exists()


def test_a_program_that_ends_before_the_first_sample_has_its_pages_from_the_exit_snapshot(tmp_path):
    """dd touches a 16 MiB buffer and exits in a few ms, long before the first sample at 1 s: the
    agent reads numa_maps and the threads at its exit stop (ptrace), before its memory goes."""
    out = tmp_path / "doc.json"
    r = numalab("run", "-o", str(out), "--", "dd", "if=/dev/zero", "of=/dev/null", "bs=16M", "count=1")
    assert r.returncode == 0, r.stderr
    doc = json.loads(out.read_text())
    assert doc["agent"]["samples"] == 0 and doc["agent"]["exit_snapshot"] is True
    assert doc["pages"]["basis"] == "exit_snapshot" and doc["pages"]["t_s"] is not None
    assert sum(doc["pages"]["bytes_per_node"]) >= 16 << 20
    assert doc["threads"] and {t["snapshot"] for t in doc["threads"]} == {"exit"}
    assert doc["timeline"][-1]["snapshot"] == "exit"
    assert "pages per node are not known" not in r.stderr


def _pid_in(path: Path, p: subprocess.Popen) -> int:
    deadline = time.monotonic() + 30
    while not (path.exists() and path.read_text().strip()):
        assert p.poll() is None and time.monotonic() < deadline, p.communicate()
        time.sleep(0.02)
    return int(path.read_text())


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] != "Z"


@pytest.mark.parametrize("command, sig, code", [("run", signal.SIGTERM, 143), ("run", signal.SIGINT, 130),
                                                ("bench", signal.SIGTERM, 143), ("run", signal.SIGHUP, 129)])
def test_a_signal_to_numalab_stops_the_program_even_one_that_ignores_it(tmp_path, command, sig, code):
    pidfile = tmp_path / "pid"
    prog = ["sh", "-c", f"trap '' TERM INT HUP; echo $$ > {pidfile}; exec sleep 60"]
    extra = ["-c", "default", "--results", str(tmp_path / "res")] if command == "bench" else []
    p = subprocess.Popen([sys.executable, "-m", "numalab.cli.main", command, "--kill-grace", "1", *extra, "--", *prog],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        pid = _pid_in(pidfile, p)
        began = time.monotonic()
        p.send_signal(sig)
        out, err = p.communicate(timeout=30)
        assert time.monotonic() - began < 10
    finally:
        if p.poll() is None or p.stderr and not p.stderr.closed:
            # numalab, or something of its run that holds its pipes, outlived the test.
            subprocess.run(["pkill", "-KILL", "-s", str(p.pid)])  # the whole session: the command has a group of its own
            p.communicate()
    assert p.returncode == code, err
    assert not _alive(pid), "the measured program survived"
    assert subprocess.run(["pgrep", "-s", str(p.pid)], capture_output=True).stdout == b"", "something of the run is left"
    last = err.strip().splitlines()[-1]
    assert last == ("numalab: interrupted" if sig == signal.SIGINT else f"numalab: terminated by {sig.name}"), err


def test_records_and_documents_to_special_files(tmp_path):
    # /dev/full: one line, exit 1, no traceback, and quickly (nothing is read back from it).
    for option in ("--record", "-o"):
        r = numalab("run", option, "/dev/full", "--", "true")
        assert r.returncode == 1 and r.stderr.strip().splitlines() == [
            f"numalab: {'--record' if option == '--record' else '--output'} /dev/full: cannot write (No space left on device)"], r.stderr
    # /dev/stdout into a pipe: the records arrive and the run ends.
    cmd = [sys.executable, "-m", "numalab.cli.main", "run", "--record", "/dev/stdout", "--", "true"]
    piped = subprocess.run(f"{shlex.join(cmd)} | cat", shell=True, capture_output=True, text=True, timeout=60)
    kinds = [json.loads(line)["type"] for line in piped.stdout.splitlines()]
    assert piped.returncode == 0 and kinds[0] == "start" and kinds[-1] == "summary", piped.stderr
    # A FIFO nobody reads: refused before the run instead of waiting forever at its end.
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    r = numalab("run", "--record", str(fifo), "--", "true")
    assert r.returncode == 2 and r.stderr == f"numalab: --record {fifo}: a FIFO that nobody reads (the write would wait forever)\n"
    # A directory and an unwritable place: one line, exit 2.
    r = numalab("run", "--record", str(tmp_path), "--", "true")
    assert r.returncode == 2 and r.stderr.startswith("numalab: --record") and len(r.stderr.splitlines()) == 1
    r = numalab("run", "-o", "/proc/version", "--", "true")
    assert r.returncode in (1, 2) and r.stderr.startswith("numalab: ") and len(r.stderr.splitlines()) == 1, r.stderr


def test_a_command_whose_output_goes_to_a_terminal_still_sees_a_terminal():
    """numalab reads the command's stdout (for the time it reports) through a pseudo-terminal when
    that output goes to a terminal: the program sees a terminal and its lines come as written."""
    import pty

    ours, theirs = pty.openpty()
    try:
        script = "test -t 1 && echo 'stdout is a terminal' || echo 'stdout is not a terminal'; printf 'two\\nlines\\n'"
        proc = subprocess.run([sys.executable, "-m", "numalab.cli.main", "run", "--", "sh", "-c", script],
                              stdout=theirs, stderr=subprocess.PIPE, timeout=120)
        os.close(theirs)
        seen = b""
        while True:
            try:
                chunk = os.read(ours, 4096)
            except OSError:  # EIO: everything written has been read
                break
            if not chunk:
                break
            seen += chunk
    finally:
        os.close(ours)
    assert proc.returncode == 0, proc.stderr
    text = seen.decode().replace("\r\n", "\n")
    assert "stdout is a terminal\ntwo\nlines\n" in text
