"""The agent's JSON Lines -> a numalab.result/1 document (source: host), from hand-written records
of a 4-node run with automatic NUMA balancing on (tests/fixtures/agent/four-node-balancing);
the placement translation and the host checks that run before the agent."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from numalab.cli.summary import summary
from numalab.exceptions import USAGE_ERRORS, NumalabError, UsageError
from numalab.results import agent
from numalab.results.agent import RecordError
from numalab.runner import host
from numalab.spec import Placement

FIXTURES = Path(__file__).parent.parent / "fixtures"
RUN = FIXTURES / "agent" / "four-node-balancing"
# task_private + task_shared of each thread (rows: the node it last ran on), from run.jsonl's summary.
FAULTS = [[600, 100, 0, 0], [200, 600, 0, 0], [0, 0, 700, 100], [100, 0, 100, 400]]


def _doc(knobs: dict | None = None) -> dict:
    recs = agent.read_records(RUN / "run.jsonl")
    topo = json.loads((RUN / "topo.json").read_text())
    if knobs is None:
        knobs = json.loads((RUN / "knobs.json").read_text())
    return agent.document(recs, topo, knobs, "6.8.0")


def _off() -> dict:
    knobs = json.loads((RUN / "knobs.json").read_text())
    for k in knobs["knobs"]:
        if k["name"] == "numa_balancing":
            k["value"] = 0
    return knobs


def test_balancing_on_gives_a_hint_fault_access_map():
    doc = _doc()
    assert doc["schema"] == "numalab.result/1" and doc["source"] == "host"
    am = doc["access_map"]
    assert am["basis"] == "hint_faults" and am["nodes"] == [0, 1, 2, 3]
    assert am["matrix"] == FAULTS
    met = doc["metrics"]
    assert met["local_pct"] == pytest.approx(100 * 2300 / 2900)
    assert met["max_concentration_pct"] == pytest.approx(100 * 900 / 2900)
    assert met["hint_fault_locality_pct"] == pytest.approx(80.0)  # numa_hint_faults_local / numa_hint_faults
    assert met["balancing_cost_pct"] is None  # the kernel does not report it


def test_document_carries_pages_counters_threads_and_the_timeline():
    doc = _doc()
    assert doc["status"] == "ok" and doc["error"] is None and doc["time_s"] == 2.5 and doc["seed"] is None
    assert doc["machine"] == {"name": "host", "nodes": 4, "cpus": 16,
                              "distances": [[10, 16, 16, 22], [16, 10, 22, 16], [16, 22, 10, 16], [22, 16, 16, 10]]}
    assert doc["workload"]["name"] == "./stream --threads 4"
    assert doc["pages"]["per_node"] == [25604, 25600, 25600, 25600]  # bytes / 4 KiB, node 0 has the binary's text too
    assert doc["numastat"]["node3"]["numa_hit"] == 25600
    assert doc["vmstat"]["numa_pages_migrated"] == 150
    p = doc["placement"]
    assert (p["policy"], p["cpubind"], p["numactl"]) == ("default", "0-15", ["--cpunodebind=0-3"])
    read = {k["name"]: k["value"] for k in json.loads((RUN / "knobs.json").read_text())["knobs"]}
    assert p["balancing"] == {"enabled": True, "numa_balancing": 1, "kernel": "6.8.0", "scan_delay_ms": 1000,
                              "scan_period_min_ms": 1000, "scan_period_max_ms": 60000, "scan_size_mb": 256, "knobs": read}
    assert [t["node"] for t in doc["threads"]] == [0, 1, 2, 3]
    assert doc["threads"][0]["time_s"] == pytest.approx(2.2)
    assert [pt["t_s"] for pt in doc["timeline"]] == [1.0, 2.0]
    a = doc["agent"]
    assert (a["samples"], a["maps_reads"], a["cpus_allowed"], a["mems_allowed"], a["rusage"]["user_s"]) == (2, 2, "0-15", "0-3", 9.1)
    assert doc["timeline"][0]["access_map"] == [[v // 2 for v in row] for row in FAULTS]
    assert doc["timeline"][1]["vmstat"]["numa_hint_faults"] == 3000


def test_balancing_off_leaves_the_access_map_out():
    doc = _doc(_off())
    assert "access_map" not in doc
    b = doc["placement"]["balancing"]
    assert (b["enabled"], b["numa_balancing"], b["knobs"]["numa_balancing"]) == (False, 0, 0)
    assert set(b) == {"enabled", "numa_balancing", "knobs"}
    assert doc["metrics"]["local_pct"] is None and doc["metrics"]["hint_fault_locality_pct"] is None
    assert "access_map" not in doc["timeline"][0]
    text = summary(doc)
    assert "access map: none" in text and "memory per node (MiB): node0 100  node1 100" in text


def test_summary_names_the_basis_of_the_map():
    text = summary(_doc())
    assert text.splitlines()[0] == "./stream --threads 4 on host: default, cpus 0-15; kernel 6.8.0"
    assert "NUMA hinting faults: 79.3% local" in text
    assert "access map (% of NUMA hinting faults" in text
    assert "hint-fault locality 80.0%" in text


def test_a_failed_command_is_a_failed_run():
    recs = agent.read_records(RUN / "run.jsonl")
    recs[-1] = dict(recs[-1], exit_code=None, signal="SIGKILL", agent_exit_code=137)
    doc = agent.document(recs, json.loads((RUN / "topo.json").read_text()), None, "6.8.0")
    assert (doc["status"], doc["error"]) == ("failed", "killed by SIGKILL")
    assert "access_map" not in doc  # no knobs known: balancing taken as off


def test_truncated_or_incomplete_records_are_clear_errors(tmp_path):
    lines = (RUN / "run.jsonl").read_text().splitlines()
    cut = tmp_path / "cut.jsonl"
    cut.write_text("\n".join(lines[:-1]) + "\n" + lines[-1][:40])
    with pytest.raises(RecordError, match=r"cut.jsonl:4: not a JSON line"):
        agent.read_records(cut)
    with pytest.raises(RecordError, match="no 'summary' record"):
        agent.document(agent.parse_records("\n".join(lines[:-1])), json.loads((RUN / "topo.json").read_text()), None, "6.8")


@pytest.mark.parametrize("placement, args", [
    (Placement(), []),
    (Placement("bind", "0"), ["--membind=0"]),
    (Placement("interleave", "all", cpunodebind="0"), ["--interleave=all", "--cpunodebind=0"]),
    (Placement("preferred", "1", physcpubind="0-1"), ["--preferred=1", "--physcpubind=0-1"]),
    (Placement("preferred-many", "0,1"), ["--preferred-many=0,1"]),
    (Placement("weighted-interleave", "0-1"), ["--weighted-interleave=0-1"]),
    (Placement("local"), ["--localalloc"]),
])
def test_placement_becomes_numactl_arguments(placement, args):
    assert host.agent_args(placement) == args


def test_openmp_binding_goes_in_the_environment_and_weights_are_refused():
    assert host.omp_env(Placement()) == {}
    assert host.omp_env(Placement(omp_proc_bind="close", omp_places="threads")) == {"OMP_PROC_BIND": "close", "OMP_PLACES": "threads"}
    with pytest.raises(UsageError, match="system-wide"):
        host.agent_args(Placement("weighted-interleave", "0-1", weights=((0, 2),)))


def test_placement_checked_against_the_host_topology(tmp_path):
    """A captured 2-node tree whose node 1 has CPUs but no memory."""
    root = tmp_path / "root"
    shutil.copytree(FIXTURES / "sysfs" / "two-node", root)
    meminfo = root / "sys/devices/system/node/node1/meminfo"
    meminfo.write_text("Node 1 MemTotal:        0 kB\nNode 1 MemFree:         0 kB\n")
    host.check_placement(Placement("bind", "0"), root)
    host.check_placement(Placement("interleave", "all"), root)  # numactl: all nodes with memory
    host.check_placement(Placement(cpunodebind="1"), root)  # CPUs are there
    with pytest.raises(UsageError, match=r"^--membind: node 1 has no memory \(nodes with memory: 0\)$"):
        host.check_placement(Placement("bind", "0-1"), root)
    with pytest.raises(USAGE_ERRORS, match="node 2 in '2' does not exist"):
        host.check_placement(Placement("preferred", "2"), root)
    with pytest.raises(USAGE_ERRORS, match="cpu 16"):
        host.check_placement(Placement(physcpubind="16"), root)


def test_agent_is_found_or_the_error_says_how_to_build_it(tmp_path, monkeypatch):
    monkeypatch.delenv("NUMALAB_AGENT", raising=False)
    monkeypatch.setattr(host, "REPO", tmp_path)
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    with pytest.raises(NumalabError, match=r"numalab-agent is not built: run `make agent` in .* \(or `cargo build --release -p numalab-agent`\)"):
        host.agent_path()
    built = tmp_path / "target" / "release" / "numalab-agent"
    built.parent.mkdir(parents=True)
    built.write_text("#!/bin/sh\n")
    built.chmod(0o755)
    assert host.agent_path() == built
    monkeypatch.setenv("NUMALAB_AGENT", str(tmp_path / "nope"))
    with pytest.raises(UsageError, match="NUMALAB_AGENT=.*nope: not an executable file"):
        host.agent_path()


def test_threads_get_their_cpu_and_node_history_from_the_sampled_processor():
    """``processor`` (stat field 39) at each sample gives the per-thread fields a simulated document
    has: cpu, node, first_node, away_from_first_node_pct, cpu_history; nr_migrations is the
    kernel's (docs/scheduler.md §7)."""
    recs = agent.read_records(RUN / "run.jsonl")
    topo = json.loads((RUN / "topo.json").read_text())
    cpus = {1.0: {4100: 0, 4101: 4, 4102: 8, 4103: 12}, 2.0: {4100: 1, 4101: 8, 4102: 8, 4103: 12}}
    for r in recs:
        for t in r.get("threads") or []:
            t["processor"] = cpus[r["t_s"]][t["tid"]] if r["type"] == "sample" else cpus[2.0][t["tid"]]
    doc = agent.document(recs, topo, None, "6.8.0")
    node_of = agent.cpu_nodes(topo)
    by_tid = {t["tid"]: t for t in doc["threads"]}
    moved = by_tid[4101]
    assert moved["cpu"] == 8 and moved["node"] == node_of[8] != node_of[4]
    assert moved["first_node"] == node_of[4] and moved["away_from_first_node_pct"] == 50.0
    assert moved["cpu_history"] == [[1.0, 4, node_of[4]], [2.0, 8, node_of[8]]]
    # a change of CPU on the same node is history, not time away
    assert node_of[0] == node_of[1]
    assert by_tid[4100]["away_from_first_node_pct"] == 0.0 and len(by_tid[4100]["cpu_history"]) == 2
    assert by_tid[4103]["cpu_history"] == [[1.0, 12, node_of[12]]]
    assert all("nr_migrations" in t and "migrations" not in t for t in doc["threads"])
