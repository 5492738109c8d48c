"""hwloc XML, property-based: generated machines survive export and import unchanged (and lstopo,
when installed, draws the same tree as ``numalab topo --tree``); mutated or garbage files give
UsageError or TopologyError, never another exception, a panic or a hang."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from numalab._core import Machine
from numalab.exceptions import USAGE_ERRORS, TopologyError, UsageError
from numalab.machine import load
from numalab.machine.hwloc_export import topology_element
from numalab.machine.hwloc_xml import load_hwloc_xml, to_hwloc_xml
from numalab.machine.render import lstopo_tree, numactl_hardware

#: Deterministic in CI (same examples each run, no example database in the tree), a few seconds each.
def checks(n: int) -> settings:
    return settings(max_examples=n, deadline=2000, derandomize=True, database=None, suppress_health_check=[HealthCheck.too_slow])


FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "hwloc" / "2p-2n-l3.xml"
LSTOPO = shutil.which("lstopo-no-graphics")
SCRATCH = Path(tempfile.mkdtemp(prefix="numalab-hwloc-props-"))


def scratch_file(text: str | bytes, name: str = "topo.xml") -> Path:
    path = SCRATCH / name
    path.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8", "surrogatepass"))
    return path


# ---------------------------------------------------------------- generated machines


@st.composite
def machine_specs(draw) -> dict[str, Any]:
    packages = draw(st.integers(1, 3))
    per_package = draw(st.integers(1, 2))
    n = packages * per_package
    distances = [[10] * n for _ in range(n)]
    for i in range(n):
        for j in range(i + 1, n):
            distances[i][j] = distances[j][i] = draw(st.integers(11, 60))
    positive = st.floats(0.5, 500, allow_nan=False, allow_infinity=False)
    return {
        "name": "generated",
        "page_size_bytes": draw(st.sampled_from([4096, 16384, 65536])),
        "topology": {
            "packages": packages,
            "nodes_per_package": per_package,
            "cores_per_node": draw(st.integers(1, 3)),
            "threads_per_core": draw(st.integers(1, 2)),
        },
        "memory": {"node_gib": draw(st.lists(st.floats(0.25, 64, allow_nan=False), min_size=n, max_size=n))},
        "distances": distances,
        "latency": {"local_ns": draw(st.floats(40, 200, allow_nan=False))},
        "bandwidth": {"node_gbps": draw(st.lists(positive, min_size=n, max_size=n))},
        "core": {"frequency_ghz": draw(st.floats(0.8, 5.0, allow_nan=False)), "mlp": draw(st.floats(1, 32, allow_nan=False))},
    }


@st.composite
def explicit_specs(draw) -> dict[str, Any]:
    """Nodes listed one by one: OS indexes with holes, CPU numbers in any order, nodes without
    CPUs (CXL-like memory) or without memory, packages holding several nodes."""
    n = draw(st.integers(1, 4))
    os_indexes = sorted(draw(st.lists(st.integers(0, 9), min_size=n, max_size=n, unique=True)))
    cpu_ids = draw(st.permutations(range(16)))
    counts = draw(st.lists(st.integers(0, 3), min_size=n, max_size=n).filter(any))
    nodes, cores, next_cpu = [], [], 0
    packages = draw(st.integers(1, n))
    for k, (os_index, count) in enumerate(zip(os_indexes, counts)):
        cpus = sorted(cpu_ids[next_cpu : next_cpu + count])
        next_cpu += count
        memory_gib = draw(st.sampled_from([1, 2, 4])) if not cpus else draw(st.sampled_from([0, 1, 8]))
        nodes.append({"os_index": os_index, "package": min(k, packages - 1), "cpus": ",".join(map(str, cpus)), "memory_bytes": memory_gib << 30})
        cores += [{"cpus": str(c), "os_index": j} for j, c in enumerate(cpus)]
    distances = [[10] * n for _ in range(n)]
    for i in range(n):
        for j in range(i + 1, n):
            distances[i][j] = distances[j][i] = draw(st.integers(11, 40))
    return {
        "name": "explicit",
        "nodes": nodes,
        "cores": cores,
        "distances": distances,
        "latency": {"local_ns": draw(st.floats(40, 200, allow_nan=False))},
        "bandwidth": {"node_gbps": [draw(st.floats(1, 100, allow_nan=False)) if nd["memory_bytes"] else 0.0 for nd in nodes]},
        "core": {"frequency_ghz": 2.5, "mlp": 10},
    }


@checks(60)
@given(spec=st.one_of(machine_specs(), explicit_specs()))
def test_generated_machines_survive_export_and_import(spec: dict[str, Any]) -> None:
    try:
        machine = Machine.from_spec_json(json.dumps(spec))
    except TopologyError:
        assume(False)  # not a machine the model accepts (e.g. memory not a whole number of pages)
    back = load_hwloc_xml(scratch_file(to_hwloc_xml(machine), "generated.xml"))
    assert back == machine
    assert numactl_hardware(json.loads(back.to_json())) == numactl_hardware(json.loads(machine.to_json()))


@pytest.mark.skipif(LSTOPO is None, reason="hwloc's lstopo-no-graphics is not installed")
@checks(40)
@given(spec=st.one_of(machine_specs(), explicit_specs()))
def test_the_tree_is_what_lstopo_draws(spec: dict[str, Any]) -> None:
    try:
        machine = Machine.from_spec_json(json.dumps(spec))
    except TopologyError:
        assume(False)
    path = scratch_file(to_hwloc_xml(machine), "lstopo.xml")
    theirs = subprocess.run([LSTOPO, "-i", str(path)], check=True, capture_output=True, text=True).stdout
    assert lstopo_tree(topology_element(json.loads(machine.to_json()))) == theirs


# ---------------------------------------------------------------- mutated files

BASES = {"lstopo": FIXTURE.read_text(), "export": to_hwloc_xml(load("e5620-2s"))}
ATTRIBUTE = re.compile(r'(\w+)="([^"]*)"')
#: Values that have broken parsers before: signs, bases, floats, NaN, huge, unicode digits, bitmaps.
NASTY = [
    "", "-1", "+1", "0x10", "1e3", "3.5", "NaN", "nan", "inf", "-inf", "1e999", "Infinity", "٣", "²",
    "4294967295", "4294967296", "18446744073709551616", "99999999999999999999999999",
    "0x0", "0xffffffff", "0xf...f", "0xffffffff,0xffffffff,0xffffffff", ",".join(["0x1"] + ["0x0"] * 3000),
    "0xzz", "[NaN]", "[[1e999]]", "{}", "[]", "[[1]]", "null", '[{"nodes":[0,99]}]',
]


def accepted_or_usage_error(path: Path) -> None:
    try:
        load_hwloc_xml(path)
    except USAGE_ERRORS as e:
        message = str(e.args[0]) if e.args else ""
        assert message.startswith(str(path)), message
        assert "Traceback" not in message


@checks(300)
@given(
    base=st.sampled_from(sorted(BASES)),
    pick=st.integers(0, 10**6),
    value=st.one_of(st.sampled_from(NASTY), st.text(st.characters(exclude_categories=["Cc", "Cs"]), max_size=12)),
)
def test_any_attribute_value_gives_a_machine_or_a_usage_error(base: str, pick: int, value: str) -> None:
    text = BASES[base]
    spans = list(ATTRIBUTE.finditer(text))
    m = spans[pick % len(spans)]
    escaped = value.replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;")
    accepted_or_usage_error(scratch_file(text[: m.start(2)] + escaped + text[m.end(2) :]))


@checks(200)
@given(
    base=st.sampled_from(sorted(BASES)),
    start=st.integers(0, 10**6),
    length=st.integers(0, 400),
    insert=st.one_of(st.just(""), st.sampled_from(["<object type=\"PU\" os_index=\"7\"/>", "</object>", "&lol;", "<!ENTITY a 'b'>"]), st.text(max_size=20)),
    duplicate=st.booleans(),
)
def test_cut_pasted_and_duplicated_text_gives_a_machine_or_a_usage_error(
    base: str, start: int, length: int, insert: str, duplicate: bool
) -> None:
    text = BASES[base]
    a = start % len(text)
    b = min(len(text), a + length)
    middle = text[a:b] * 2 if duplicate else insert
    accepted_or_usage_error(scratch_file(text[:a] + middle + text[b:]))


@checks(150)
@given(data=st.binary(max_size=300))
def test_garbage_bytes_are_a_usage_error(data: bytes) -> None:
    path = scratch_file(data)
    with pytest.raises(UsageError) as e:
        load_hwloc_xml(path)
    assert e.value.args[0].startswith(f"{path}:")
