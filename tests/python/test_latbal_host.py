"""``numalab run --policy latency-balanced`` (docs/measure.md §6): a short chase probes each
node's loaded latency and the command runs with --preferred on the node picked, once."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from numalab.calibrate import probe
from numalab.exceptions import NumalabError
from numalab.runner import host


def test_balanced_nodes_keep_the_start_node_else_the_lowest_latency_node_wins():
    assert probe.choose({0: 100.0, 1: 105.0}, current=1, threshold_ns=10.0) == (1, True)
    assert probe.choose({0: 100.0, 1: 130.0}, current=1, threshold_ns=10.0) == (0, False)
    assert probe.choose({0: 140.0, 1: 130.0, 2: 130.0}, current=0, threshold_ns=5.0) == (1, False)
    # The threshold is strict: a spread equal to it is unbalanced.
    assert probe.choose({0: 100.0, 1: 110.0}, current=1, threshold_ns=10.0) == (0, False)


def test_other_commands_refuse_the_policy_on_a_host_in_one_line():
    from numalab.exceptions import UsageError
    from numalab.spec import Placement

    with pytest.raises(UsageError, match="only numalab run applies it"):
        host.agent_args(Placement(policy="latency-balanced"))


def test_the_probe_runs_on_this_one_node_host_and_picks_node_0(tmp_path):
    try:
        host.agent_path()
        probe.kernel("chase")
    except NumalabError as e:
        pytest.skip(str(e))
    nodes = probe.nodes_with_cpus_and_memory()
    if list(nodes) != [0]:
        pytest.skip(f"this host has nodes {sorted(nodes)}; the test is for a one-node host")
    r = subprocess.run([sys.executable, "-m", "numalab.cli.main", "run", "--policy", "latency-balanced", "--json",
                        "--", "cat", "/proc/self/status"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    lb = doc["latency_balanced"]
    assert lb["node"] == 0 and lb["balanced"] is True and lb["applied"] == "--preferred=0"
    assert set(lb["probe_ns"]) == {"0"} and lb["probe_ns"]["0"] > 0
    # The command ran under the preferred-node policy the probe chose.
    assert doc["placement"]["policy"] == "preferred" and doc["placement"]["nodes"] == "0"
    assert doc["placement"]["numa_maps_policy"] == "prefer:0"
    # Without --json the summary on stderr says what the probe found and what it applied.
    r = subprocess.run([sys.executable, "-m", "numalab.cli.main", "run", "--policy", "latency-balanced", "--", "true"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "latency-balanced: probe node0 " in r.stderr and "(balanced, threshold 10 ns): --preferred=0, decided once at start" in r.stderr


def test_a_bad_policy_name_is_one_usage_line():
    r = subprocess.run([sys.executable, "-m", "numalab.cli.main", "run", "--policy", "fastest", "--", "true"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and r.stderr.strip().count("\n") == 0
    assert r.stderr.startswith("numalab: --policy: 'fastest' is not one of latency-balanced")
