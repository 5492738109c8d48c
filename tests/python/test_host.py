"""from_host on captured sysfs trees (tests/fixtures/sysfs): what sysfs states, what is estimated,
and errors that name the broken file."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from numalab.exceptions import HostError, TopologyError
from numalab.machine import estimates as est
from numalab.machine.bitmaps import parse_cpulist
from numalab.machine.host import NO_CACHES_NOTE, from_host, host_free_bytes

SYSFS = Path(__file__).resolve().parents[1] / "fixtures" / "sysfs"
GIB = 1 << 30
NODE0 = "sys/devices/system/node/node0"


def explicit(root: Path) -> dict[str, Any]:
    return json.loads(from_host(root).to_json())


@pytest.fixture
def two_node_copy(tmp_path: Path) -> Path:
    """A private copy of the two-node tree, for tests that break a file."""
    root = tmp_path / "root"
    shutil.copytree(SYSFS / "two-node", root)
    return root


def test_two_node_nodes_cpus_and_memory() -> None:
    m = explicit(SYSFS / "two-node")
    assert m["name"] == "host"
    assert [n["os_index"] for n in m["nodes"]] == [0, 1]
    assert [n["cpuset"] for n in m["nodes"]] == ["0-3,8-11", "4-7,12-15"]
    assert [n["local_memory_bytes"] for n in m["nodes"]] == [16 * GIB, 16 * GIB]
    assert [p["os_index"] for p in m["packages"]] == [0, 1]


def test_two_node_smt_siblings_are_one_core() -> None:
    m = explicit(SYSFS / "two-node")
    assert len(m["cores"]) == 8
    assert [c["cpuset"] for c in m["cores"]][:4] == ["0,8", "1,9", "2,10", "3,11"]
    assert [(c["package"], c["os_index"]) for c in m["cores"]][3:5] == [(0, 3), (1, 0)]
    assert len(m["pus"]) == 16


def test_two_node_distances_and_derived_latency() -> None:
    m = explicit(SYSFS / "two-node")
    assert m["distances"] == [[10, 21], [21, 10]]
    local = est.LOCAL_LATENCY_NS.value
    remote = local * 21 / 10
    assert m["idle_latency_ns"] == [[local, remote], [remote, local]]


def test_two_node_frequency_comes_from_cpufreq() -> None:
    m = explicit(SYSFS / "two-node")
    assert {c["frequency_hz"] for c in m["cores"]} == {2.6e9}
    assert "cpuinfo_max_freq: 2600000 kHz" in m["notes"]["core.frequency_ghz"]


def test_notes_record_every_estimate() -> None:
    m = explicit(SYSFS / "two-node")
    for e in (est.LOCAL_LATENCY_NS, est.NODE_BANDWIDTH_GBPS, est.CORE_MLP, est.PAGE_SIZE_BYTES, est.NO_LINKS):
        assert m["notes"][e.key] == e.note
    assert {n["bandwidth_gbps"] for n in m["nodes"]} == {est.NODE_BANDWIDTH_GBPS.value}
    assert {c["mlp"] for c in m["cores"]} == {est.CORE_MLP.value}
    assert m["links"] == []


def test_eight_node_opteron_slit() -> None:
    m = explicit(SYSFS / "eight-node")
    assert len(m["nodes"]) == 8 and len(m["packages"]) == 4
    assert [n["cpuset"] for n in m["nodes"]][7] == "56-63"
    assert [n["package"] for n in m["nodes"]] == [0, 0, 1, 1, 2, 2, 3, 3]
    assert m["distances"][0] == [10, 16, 16, 22, 16, 22, 16, 22]
    assert all(m["distances"][i][j] == m["distances"][j][i] for i in range(8) for j in range(8))
    assert len(m["cores"]) == 64 and len(m["pus"]) == 64


def test_without_cpufreq_the_frequency_is_the_noted_estimate() -> None:
    m = explicit(SYSFS / "eight-node")
    assert {c["frequency_hz"] for c in m["cores"]} == {est.CORE_FREQUENCY_GHZ.value * 1e9}
    assert m["notes"]["core.frequency_ghz"] == est.CORE_FREQUENCY_GHZ.note


def test_the_captured_host_reads() -> None:
    m = explicit(SYSFS / "host")
    assert m["nodes"] and all(n["local_memory_bytes"] > 0 for n in m["nodes"])
    assert len(m["distances"]) == len(m["nodes"])
    assert {p["os_index"] for p in m["pus"]} == set().union(*(parse_cpulist(n["cpuset"]) for n in m["nodes"]))


def test_caches_come_from_sysfs_one_per_instance_from_level_2() -> None:
    m = explicit(SYSFS / "two-node")
    l2 = [c for c in m["caches"] if c["level"] == 2]
    l3 = [c for c in m["caches"] if c["level"] == 3]
    assert {c["level"] for c in m["caches"]} == {2, 3}, "L1 is not part of the model"
    assert [c["cpuset"] for c in l2] == [c["cpuset"] for c in m["cores"]], "one L2 per core, shared by its SMT siblings"
    assert {c["size_bytes"] for c in l2} == {256 * 1024}
    assert [(c["cpuset"], c["size_bytes"]) for c in l3] == [("0-3,8-11", 10 << 20), ("4-7,12-15", 10 << 20)]
    assert "caches" not in m["notes"]


def test_without_cacheinfo_there_are_no_caches_and_a_note(two_node_copy: Path) -> None:
    for k in range(16):
        shutil.rmtree(two_node_copy / f"sys/devices/system/cpu/cpu{k}/cache")
    for root in (two_node_copy, SYSFS / "eight-node"):
        m = explicit(root)
        assert m["caches"] == []
        assert m["notes"]["caches"] == NO_CACHES_NOTE


def test_an_l3_shared_by_part_of_a_socket_is_its_own_instance(two_node_copy: Path) -> None:
    for k in range(16):
        first = k % 8 // 2 * 2
        path = two_node_copy / f"sys/devices/system/cpu/cpu{k}/cache/index3/shared_cpu_list"
        path.write_text(f"{first}-{first + 1},{first + 8}-{first + 9}\n")
    l3 = [c["cpuset"] for c in explicit(two_node_copy)["caches"] if c["level"] == 3]
    assert l3 == ["0-1,8-9", "2-3,10-11", "4-5,12-13", "6-7,14-15"]


def test_overlapping_sharing_lists_leave_the_level_out_with_a_note(two_node_copy: Path) -> None:
    (two_node_copy / "sys/devices/system/cpu/cpu0/cache/index3/shared_cpu_list").write_text("0-4,8-11\n")
    m = explicit(two_node_copy)
    assert {c["level"] for c in m["caches"]} == {2}
    assert "L3 caches whose shared_cpu_list overlap" in m["notes"]["caches.L3"]


def test_the_captured_host_has_its_caches() -> None:
    m = explicit(SYSFS / "host")
    pus = {p["os_index"] for p in m["pus"]}
    top = max(c["level"] for c in m["caches"])
    assert set().union(*(parse_cpulist(c["cpuset"]) for c in m["caches"] if c["level"] == top)) == pus


def test_free_memory_per_node() -> None:
    free = host_free_bytes(SYSFS / "two-node")
    assert sorted(free) == [0, 1]
    assert all(0 < b < 16 * GIB for b in free.values())


def test_a_bad_distance_file_names_the_file_and_the_token(two_node_copy: Path) -> None:
    (two_node_copy / NODE0 / "distance").write_text("10 2x1\n")
    with pytest.raises(HostError, match=r"node0/distance: bad distance '2x1'"):
        from_host(two_node_copy)


def test_a_distance_row_of_the_wrong_length_is_rejected(two_node_copy: Path) -> None:
    (two_node_copy / NODE0 / "distance").write_text("10\n")
    with pytest.raises(HostError, match=r"node0/distance: has 1 distances, expected 2"):
        from_host(two_node_copy)


def test_a_missing_file_names_its_path(two_node_copy: Path) -> None:
    (two_node_copy / NODE0 / "cpulist").unlink()
    with pytest.raises(HostError, match=r"cannot read .*node0/cpulist"):
        from_host(two_node_copy)


def test_an_invalid_slit_is_a_topology_error_naming_the_root(two_node_copy: Path) -> None:
    (two_node_copy / NODE0 / "distance").write_text("10 5\n")
    with pytest.raises(TopologyError, match=r"host topology read from sysfs is invalid: distances\[0\]\[1\]"):
        from_host(two_node_copy)


def test_a_bad_cpufreq_value_is_a_host_error(two_node_copy: Path) -> None:
    (two_node_copy / "sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq").write_text("fast\n")
    with pytest.raises(HostError, match=r"cpuinfo_max_freq: bad cpuinfo_max_freq 'fast'"):
        from_host(two_node_copy)


def test_without_numa_the_machine_is_one_noted_node(two_node_copy: Path) -> None:
    shutil.rmtree(two_node_copy / "sys/devices/system/node")
    m = explicit(two_node_copy)
    assert [n["cpuset"] for n in m["nodes"]] == ["0-15"]
    assert m["nodes"][0]["local_memory_bytes"] == 32 * GIB
    assert "no NUMA node" in m["notes"]["nodes"]


def test_capture_script_copies_what_the_readers_need(tmp_path: Path) -> None:
    out = tmp_path / "capture"
    env = {"NUMALAB_CAPTURE_SRC": str(SYSFS / "two-node"), "PATH": "/usr/bin:/bin"}
    subprocess.run(["sh", str(SYSFS / "capture.sh"), str(out)], check=True, env=env)
    captured, original = explicit(out), explicit(SYSFS / "two-node")
    captured.pop("description"), original.pop("description")  # they name their roots
    assert captured == original



def test_a_node_number_beyond_the_limit_is_refused(two_node_copy: Path) -> None:
    nodes = two_node_copy / "sys/devices/system/node"
    (nodes / "node1").rename(nodes / "node4294967295")
    with pytest.raises(HostError, match=r"beyond numalab's limits: nodes\[1\]\.os_index: 4294967295 is too large: NUMA node indexes must be below 4096"):
        from_host(two_node_copy)


def test_an_unreadable_cpufreq_file_is_a_host_error(two_node_copy: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    freq = two_node_copy / "sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq"
    original = Path.read_text

    def refuse(self: Path, *args: object, **kwargs: object) -> str:
        if self == freq:  # root reads through chmod 000, so the refusal is simulated
            raise PermissionError(13, "Permission denied", str(self))
        return original(self, *args, **kwargs)

    monkeypatch.setattr(Path, "read_text", refuse)
    with pytest.raises(HostError, match=r"cpuinfo_max_freq: cannot read: Permission denied"):
        from_host(two_node_copy)


def test_a_file_that_never_ends_is_refused_at_once(two_node_copy: Path) -> None:
    """A captured tree whose file is a link to /dev/zero: one error naming it, not gigabytes read."""
    f = two_node_copy / NODE0 / "distance"
    f.unlink()
    f.symlink_to("/dev/zero")
    with pytest.raises(HostError, match=r"node0/distance: a device, not a regular system file"):
        from_host(two_node_copy)
