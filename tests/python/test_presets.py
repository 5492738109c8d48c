"""Machine presets: every file loads, has the documented shape, and carries a source for every number.

The shape facts come from docs/studies.md §6 (the study machines) and, for the two-socket servers
and the QEMU guests, the sources cited in each preset file; the sourcing rule is docs/machines.md §2
("every preset number carries its source"), checked mechanically by `uncited_number_lines`.
"""

from __future__ import annotations

import json
import re
import tomllib

import pytest

from numalab.machine.presets import PRESET_DIR, load_preset, preset_names

GIB = 1 << 30

EXPECTED = {
    "opteron6282-4p",
    "numa16",
    "numa32",
    "e5-2620v4-2s",
    "e5620-2s",
    "e5-2420-2s",
    "e5-4617-8s",
    "epyc9654-2s-nps1",
    "epyc9654-2s-nps4",
    "spr8480-2s",
    "spr8480-2s-snc4",
    "vm-4",
    "vm-8",
    "vm-4x2",
    "vm-2x4",
    "vm-tier",
    "xeonmax9480-2s-flat",
    "spr8480-2s-cxl",
}

# name: (nodes, PUs, packages, total memory GiB or None, threads per core)
SHAPES = {
    "opteron6282-4p": (8, 64, 4, None, 1),
    "numa16": (8, 16, 8, 32.0, 1),
    "numa32": (4, 32, 4, 64.0, 1),
    "e5-2620v4-2s": (2, 32, 2, None, 2),
    "e5620-2s": (2, 8, 2, 12.0, 1),
    "e5-2420-2s": (2, 24, 2, 15.6, 2),
    "e5-4617-8s": (8, 48, 8, 488.0, 1),
    "epyc9654-2s-nps1": (2, 384, 2, None, 2),
    "epyc9654-2s-nps4": (8, 384, 2, None, 2),
    "spr8480-2s": (2, 224, 2, None, 2),
    "spr8480-2s-snc4": (8, 224, 2, None, 2),
    "vm-4": (4, 4, 4, 2.0, 1),
    "vm-8": (8, 8, 8, 2.0, 1),
    "vm-4x2": (4, 8, 1, 2.0, 1),
    "vm-2x4": (2, 8, 1, 1.0, 1),
    "vm-tier": (3, 2, 2, 0.625, 1),
    "xeonmax9480-2s-flat": (4, 224, 2, 640.0, 2),
    "spr8480-2s-cxl": (4, 224, 2, 768.0, 2),
}


def explicit(name: str) -> dict:
    return json.loads(load_preset(name).to_json())


def text(name: str) -> str:
    return (PRESET_DIR / f"{name}.toml").read_text(encoding="utf-8")


# ---------------------------------------------------------------- the sourcing rule

_SOURCE_WORD = re.compile(r"\b(source|estimate)\b", re.IGNORECASE)


def split_comment(line: str) -> tuple[str, str]:
    """(code, comment) of a TOML line; a '#' inside a basic string is not a comment."""
    in_str = False
    for i, ch in enumerate(line):
        if ch == '"' and (i == 0 or line[i - 1] != "\\"):
            in_str = not in_str
        elif ch == "#" and not in_str:
            return line[:i], line[i + 1 :].strip()
    return line, ""


def _comment_block_above(lines: list[str], i: int) -> list[str]:
    """The run of whole-line comments directly above line i."""
    block = []
    j = i - 1
    while j >= 0 and lines[j].lstrip().startswith("#"):
        block.append(lines[j].lstrip()[1:].strip())
        j -= 1
    return block


def uncited_number_lines(source: str) -> list[tuple[int, str]]:
    """Lines holding a number with no source beside it.

    A line whose value (outside strings) contains a digit needs a non-empty '#' comment on the same
    line, unless it sits inside a multi-line array whose opening line carries a comment, or whose
    comment block directly above mentions "source" or "estimate".
    """
    lines = source.splitlines()
    bad: list[tuple[int, str]] = []
    depth = 0
    block_cited = False
    for i, raw in enumerate(lines):
        code, comment = split_comment(raw)
        if depth > 0:
            if re.search(r"\d", code) and not (comment or block_cited):
                bad.append((i + 1, raw))
            depth += code.count("[") - code.count("]")
            continue
        stripped = code.strip()
        if not stripped or stripped.startswith("["):  # blank, whole-line comment, or table header
            continue
        _, _, value = stripped.partition("=")
        value = value.strip()
        if value.startswith('"'):  # a string: digits in text are not numbers
            continue
        if value.startswith("{") and re.search(r'\bsource\s*=\s*"[^"]', value):  # an [estimates] range citing its source
            continue
        opens = value.count("[") - value.count("]")
        if opens > 0:
            depth = opens
            block_cited = bool(comment) or any(_SOURCE_WORD.search(c) for c in _comment_block_above(lines, i))
            if re.search(r"\d", value) and not block_cited:
                bad.append((i + 1, raw))
            continue
        if re.search(r"\d", value) and not comment:
            bad.append((i + 1, raw))
    return bad


def test_rule_checker_catches_uncited_numbers():
    good = '# source: x\nd = [\n  [1, 2],\n]\n[t]\na = 1  # source: y\nname = "v2"\n'
    assert uncited_number_lines(good) == []
    assert uncited_number_lines("[t]\na = 1\n") == [(2, "a = 1")]
    assert uncited_number_lines("# unrelated\nd = [\n  [1, 2],\n]\n") == [(3, "  [1, 2],")]
    assert uncited_number_lines('[n]\ns = "has # and 42"\n') == []


# ---------------------------------------------------------------- every preset


def test_all_expected_presets_exist():
    assert EXPECTED <= set(preset_names())


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_every_number_has_a_source(name):
    assert uncited_number_lines(text(name)) == []


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_loads_and_name_matches_file(name):
    raw = tomllib.loads(text(name))
    assert raw["name"] == name
    d = explicit(name)
    assert d["name"] == name
    assert d["description"] and "\n" not in d["description"]
    assert d["page_size_bytes"] == 4096


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_shape(name):
    nodes, pus, packages, mem_gib, tpc = SHAPES[name]
    d = explicit(name)
    assert len(d["nodes"]) == nodes
    assert len(d["pus"]) == pus
    assert len(d["packages"]) == packages
    assert len(d["distances"]) == nodes and all(len(r) == nodes for r in d["distances"])
    assert len(d["idle_latency_ns"]) == nodes and all(len(r) == nodes for r in d["idle_latency_ns"])
    assert len(d["cores"]) * tpc == pus
    if mem_gib is not None:
        total = sum(n["local_memory_bytes"] for n in d["nodes"]) / GIB
        assert total == pytest.approx(mem_gib, rel=1e-6)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_distances_and_latency_are_sane(name):
    d = explicit(name)
    dist, lat = d["distances"], d["idle_latency_ns"]
    n = len(dist)
    for i in range(n):
        assert dist[i][i] == 10
        for j in range(n):
            assert dist[i][j] == dist[j][i], "SLITs here are symmetric"
            if i != j and d["nodes"][i]["cpuset"]:
                assert lat[i][j] > lat[i][i], "remote memory is slower than local (for a node with CPUs)"
    for node in d["nodes"]:
        assert node["bandwidth_gbps"] > 0 and node["local_memory_bytes"] > 0
    for core in d["cores"]:
        assert core["frequency_hz"] > 0 and core["mlp"] >= 1


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_every_remote_pair_has_a_route_when_links_are_given(name):
    d = explicit(name)
    if not d["links"]:
        pytest.skip("no interconnect links in this preset")
    n = len(d["nodes"])
    os_of = [node["os_index"] for node in d["nodes"]]
    for i in range(n):
        for j in range(n):
            route = d["routes"][i][j]
            if i == j:
                assert route == []
                continue
            assert route, f"no route {i}->{j}"
            at = os_of[i]
            for hop in route:
                link = d["links"][hop["link"]]
                src, dst = link["nodes"] if hop["dir"] == 0 else link["nodes"][::-1]
                assert src == at
                at = dst
            assert at == os_of[j]
            assert all(g > 0 for hop in route for g in d["links"][hop["link"]]["gbps"])


# ---------------------------------------------------------------- per-preset facts


def test_opteron_links_follow_the_slit():
    d = explicit("opteron6282-4p")
    linked = {tuple(sorted(link["nodes"])) for link in d["links"]}
    one_hop = {(i, j) for i in range(8) for j in range(i + 1, 8) if d["distances"][i][j] == 16}
    assert linked == one_hop
    for i in range(8):
        for j in range(8):
            if i != j:
                assert len(d["routes"][i][j]) == (1 if d["distances"][i][j] == 16 else 2)
    # the two dies of a package share a full-width x16 link; some links are half width (asymmetric machine)
    widths = {tuple(sorted(link["nodes"])): link["gbps"][0] for link in d["links"]}
    assert all(widths[(2 * p, 2 * p + 1)] == 12.8 for p in range(4))
    assert min(widths.values()) < max(widths.values())
    assert [p["nodeset"] for p in d["packages"]] == ["0-1", "2-3", "4-5", "6-7"]


def test_e5_2620v4_matches_study_s2():
    d = explicit("e5-2620v4-2s")
    assert d["distances"] == [[10, 21], [21, 10]]
    assert [n["cpuset"] for n in d["nodes"]] == ["0-7,16-23", "8-15,24-31"]


def test_e5_4617_every_node_one_hop():
    d = explicit("e5-4617-8s")
    off = {d["distances"][i][j] for i in range(8) for j in range(8) if i != j}
    assert len(off) == 1
    assert all(len(d["routes"][i][j]) == 1 for i in range(8) for j in range(8) if i != j)


def test_numa_factors_follow_study_s3():
    for name, lo, hi in (("numa16", 1.1, 1.5), ("numa32", 1.36, 3.6)):
        lat = explicit(name)["idle_latency_ns"]
        factors = [lat[i][j] / lat[i][i] for i in range(len(lat)) for j in range(len(lat)) if i != j]
        assert lo - 1e-3 <= min(factors) and max(factors) <= hi + 1e-3
    stream = {"numa16": 9.77, "numa32": 35.54}
    for name, total in stream.items():
        assert sum(n["bandwidth_gbps"] for n in explicit(name)["nodes"]) == pytest.approx(total, rel=1e-3)


@pytest.mark.parametrize(
    ("whole", "split"),
    [("epyc9654-2s-nps1", "epyc9654-2s-nps4"), ("spr8480-2s", "spr8480-2s-snc4")],
)
def test_split_modes_divide_the_socket(whole, split):
    a, b = explicit(whole), explicit(split)
    assert len(b["nodes"]) == 4 * len(a["nodes"])
    assert len(a["pus"]) == len(b["pus"])
    for node in b["nodes"]:
        assert node["bandwidth_gbps"] == pytest.approx(a["nodes"][0]["bandwidth_gbps"] / 4)
    mem_a = sum(n["local_memory_bytes"] for n in a["nodes"])
    mem_b = sum(n["local_memory_bytes"] for n in b["nodes"])
    assert mem_a == mem_b
    # SMT siblings numbered last: node 0 holds the first cores and their second threads
    cores = len(a["pus"]) // 2
    per_node = cores // len(b["nodes"])
    assert b["nodes"][0]["cpuset"] == f"0-{per_node - 1},{cores}-{cores + per_node - 1}"
    # same socket near, other socket far
    dist = b["distances"]
    assert dist[0][1] < dist[0][4]


@pytest.mark.parametrize(("name", "nodes", "mib"), [("vm-4", 4, 512), ("vm-8", 8, 256)])
def test_vm_presets_match_their_qemu_command(name, nodes, mib):
    src = text(name)
    d = explicit(name)
    assert len(d["nodes"]) == nodes and len(d["pus"]) == nodes
    assert all(n["local_memory_bytes"] == mib << 20 for n in d["nodes"])
    assert re.search(rf"-smp {nodes},", src)
    backends = re.findall(
        r"-object memory-backend-ram,id=(m\d+),size=(\d+)M -numa node,nodeid=(\d+),cpus=(\d+),memdev=(m\d+)", src
    )
    assert len(backends) == nodes
    for mem_id, size, nodeid, cpus, memdev in backends:
        assert int(size) == mib and mem_id == memdev and nodeid == cpus
    given = {}
    for s, t, v in re.findall(r"-numa dist,src=(\d+),dst=(\d+),val=(\d+)", src):
        given[(int(s), int(t))] = int(v)
    assert len(given) == nodes * (nodes - 1) // 2
    for i in range(nodes):
        for j in range(nodes):
            if i != j:
                v = given.get((i, j), given.get((j, i)))
                assert v == d["distances"][i][j]


@pytest.mark.parametrize(("name", "nodes", "per_node"), [("vm-4x2", 4, 2), ("vm-2x4", 2, 4)])
def test_multi_vcpu_vm_presets_are_what_numalab_vm_boots_with_that_many_cpus_per_node(name, nodes, per_node):
    from numalab.machine import load as load_machine
    from numalab.vm import check, qemu

    src = text(name)
    machine = load_machine(name)
    assert check.cpus_per_node(machine) == per_node
    args = " ".join(qemu.numa_args(qemu.topology(machine, cpus_per_node=per_node)))
    # The header's options are the ones numalab vm passes (HMAT aside: no latency matrix here).
    for i in range(nodes):
        cpus = f"{i * per_node}-{i * per_node + per_node - 1}"
        opt = f"-object memory-backend-ram,id=m{i},size=512M -numa node,nodeid={i},cpus={cpus},memdev=m{i}"
        assert opt in src and opt in args, opt
    assert f"-smp {nodes * per_node} -m {nodes * 512}M" in src and args.startswith(f"-smp {nodes * per_node} -m {nodes * 512}M")
    for s, t, v in re.findall(r"-numa dist,src=(\d+),dst=(\d+),val=(\d+)", src):
        assert f"-numa dist,src={s},dst={t},val={v}" in args
        assert explicit(name)["distances"][int(s)][int(t)] == int(v)


def test_vm8_uses_the_opteron_slit():
    assert explicit("vm-8")["distances"] == explicit("opteron6282-4p")["distances"]
