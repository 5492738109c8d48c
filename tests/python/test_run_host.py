"""``numalab run`` end to end on this host, through the built numalab-agent: the command runs
under the placement, its output and exit status are its own, and the document says source: host."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
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
