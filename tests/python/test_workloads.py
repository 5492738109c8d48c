"""Workload descriptors: the library resolves, NPB footprints match docs/workloads.md §4.1,
and bad descriptors or parameters are refused with a clear UsageError."""

from __future__ import annotations

from pathlib import Path

import pytest

from numalab.exceptions import UsageError
from numalab.workload.descriptor import library_names, load, resolve

NPB = ["ep", "cg", "mg", "ft", "bt", "sp", "lu", "is"]

# Class C allocated footprint in bytes, docs/workloads.md §4.1 (GB = 1e9 B).
FOOTPRINT_C = {
    "cg": 0.96e9,
    "mg": 3.57e9,
    "ft": 5.38e9,
    "bt": 0.72e9,
    "sp": 0.76e9,
    "lu": 0.59e9,
    "is": 1.1e9,
}


def _cases():
    for name in library_names():
        desc, _path, _text = load(name)
        for cls in desc.classes or [None]:
            for threads in (1, 16, 64):
                yield name, cls, threads


def _resolve(name, cls=None, **params):
    overrides = dict(params)
    if cls is not None:
        overrides["class"] = cls
    return resolve(name, overrides)


def _executions(w) -> list[int]:
    """Phase indexes in program order (each step repeated)."""
    out = []
    for step in w["program"]:
        out.extend(step["phases"] * step["repeat"])
    return out


def test_library_has_the_npb_kernels():
    names = library_names()
    for k in NPB:
        assert k in names


@pytest.mark.parametrize("name", NPB)
def test_npb_defines_classes_s_to_c_and_threads(name):
    desc, _path, _text = load(name)
    # Every NPB descriptor has S..C; larger classes (MG's D and E, for the tiering study) may follow.
    assert set("SWABC") <= set(desc.classes) <= set("SWABCDE")
    assert desc.params.get("threads") == 1
    assert desc.source.strip(), "descriptor must cite its source"


@pytest.mark.parametrize("name,cls,threads", list(_cases()))
def test_resolves(name, cls, threads):
    w = _resolve(name, cls, threads=threads)
    assert w["threads"] == threads
    assert w["regions"] and w["phases"] and w["program"]
    for r in w["regions"]:
        assert r["bytes"] > 0 and 1 <= r["planes"] <= r["bytes"]
    for p in w["phases"]:
        assert p["cycles"] >= 0
        for a in p["accesses"]:
            assert a["rd"] >= 0 and a["wr"] >= 0 and a["passes"] >= 0
    # a class C run stays within the phase-execution budget of the engine
    assert len(_executions(w)) <= 20_000


@pytest.mark.parametrize("name", sorted(FOOTPRINT_C))
def test_class_c_footprint(name):
    w = _resolve(name, "C", threads=16)
    total = sum(r["bytes"] for r in w["regions"])
    assert total == pytest.approx(FOOTPRINT_C[name], rel=0.03)


def test_ep_is_a_per_thread_buffer_and_compute_bound():
    one = _resolve("ep", "C", threads=1)
    many = _resolve("ep", "C", threads=16)
    assert sum(r["bytes"] for r in one["regions"]) == 2**20
    assert sum(r["bytes"] for r in many["regions"]) == 16 * 2**20
    gen = next(p for p in many["phases"] if p["name"] == "gen")
    assert all(a["rd"] == 0 and a["wr"] == 0 for a in gen["accesses"])
    assert gen["cycles"] > 1e11


@pytest.mark.parametrize("name", library_names())
def test_every_region_is_first_accessed_by_a_write(name):
    """First touch decides placement: each region's first access in program order must write it."""
    w = resolve(name, {})
    seen: set[int] = set()
    for pi in _executions(w):
        for a in w["phases"][pi]["accesses"]:
            if a["region"] not in seen:
                assert a["wr"] > 0, f"{name}: region {w['regions'][a['region']]['name']} is read before it is written"
                seen.add(a["region"])
    assert seen == set(range(len(w["regions"]))), f"{name}: a region is never accessed"


def test_lu_sweeps_are_pipelined_over_k_planes():
    w = _resolve("lu", "C", threads=16)
    sweeps = [p for p in w["phases"] if p["name"] in ("lower", "upper")]
    assert len(sweeps) == 2
    for p in sweeps:
        assert p["sync"] == "pipeline" and p["pipeline_steps"] == 160
        assert {a["pattern"] for a in p["accesses"]} == {"transpose"}


def test_transposed_phases_where_the_code_splits_another_dimension():
    expect = {"ft": "fft_z", "bt": "z_solve", "sp": "z_solve", "lu": "rhs_z", "is": "scatter"}
    for name, phase in expect.items():
        w = _resolve(name, "A", threads=16)
        p = next(p for p in w["phases"] if p["name"] == phase)
        assert "transpose" in {a["pattern"] for a in p["accesses"]}, name


# --- bad inputs -------------------------------------------------------------------------------------


def test_unknown_class():
    with pytest.raises(UsageError, match=r"does not define class 'D' \(classes: S, W, A, B, C\)"):
        _resolve("cg", "D")


def test_unknown_parameter():
    with pytest.raises(UsageError, match=r"workload cg has no parameter 'nonzeros' \(expected one of: .*threads"):
        resolve("cg", {"nonzeros": 3})


def test_bad_parameter_value():
    with pytest.raises(UsageError, match="threads must be a whole number"):
        resolve("cg", {"threads": "many"})
    with pytest.raises(UsageError, match="threads must be a whole number >= 1"):
        resolve("cg", {"threads": 0})


def test_unknown_workload_suggests_close_names():
    with pytest.raises(UsageError, match=r"unknown workload 'cgg' \(known: .*\); did you mean cg\?$"):
        resolve("cgg", {})
    with pytest.raises(UsageError, match="known: .*ft.*or a path to a .toml descriptor"):
        resolve("nosuchthing", {})


def test_missing_descriptor_file(tmp_path):
    with pytest.raises(UsageError, match="does not exist"):
        resolve(str(tmp_path / "absent.toml"), {})


BASE = """
name = "t"
program = [{ phases = ["p"] }]

[params]
threads = 2
n = 1000

[[regions]]
name = "a"
bytes = "8 * n"
planes = "n"
"""

PHASE = """
[[phases]]
name = "p"
cycles = 10
access = [{ region = "a", pattern = "block", rd = 1.0 }]
"""


def _write(tmp_path: Path, text: str) -> str:
    p = tmp_path / "w.toml"
    p.write_text(text)
    return str(p)


def test_tmp_descriptor_resolves(tmp_path):
    w = resolve(_write(tmp_path, BASE + PHASE), {})
    assert w["regions"][0]["bytes"] == 8000 and w["threads"] == 2


def test_a_shared_sweep_reaching_dram_more_than_once_per_thread_is_refused(tmp_path):
    shared = PHASE.replace('pattern = "block", rd = 1.0', 'pattern = "shared", rd = "2.0 / threads"')
    assert resolve(_write(tmp_path, BASE + shared), {})["phases"][0]["accesses"][0]["rd"] == 1.0
    with pytest.raises(UsageError, match=r"phases\[0\]\.access\[0\]\.rd: a shared sweep's rd is the share .* in \[0, 1\], got 2"):
        resolve(_write(tmp_path, BASE + shared), {"threads": 1})


def test_zero_sized_region(tmp_path):
    path = _write(tmp_path, BASE + PHASE)
    with pytest.raises(UsageError, match=r"region 'a' has zero size \(0 bytes\)"):
        resolve(path, {"n": 0})


def test_more_planes_than_bytes(tmp_path):
    text = BASE.replace('planes = "n"', 'planes = "16 * n"') + PHASE
    with pytest.raises(UsageError, match=r"region 'a' has more planes \(16000\) than bytes \(8000\)"):
        resolve(_write(tmp_path, text), {})


def test_overlapping_addresses(tmp_path):
    text = (
        BASE.replace('planes = "n"', 'planes = "n"\naddress = 0')
        + """
[[regions]]
name = "b"
bytes = 4096
address = 4096
"""
        + PHASE
    )
    with pytest.raises(UsageError, match=r"regions 'a' and 'b' overlap \(a ends at 0x1f40, b starts at 0x1000\)"):
        resolve(_write(tmp_path, text), {})
    # adjacent ranges are fine
    resolve(_write(tmp_path, text.replace("address = 4096", "address = 8000")), {})


def test_duplicate_region(tmp_path):
    text = BASE + BASE[BASE.index("[[regions]]") :] + PHASE
    with pytest.raises(UsageError, match="region 'a' is defined twice"):
        resolve(_write(tmp_path, text), {})


def test_pattern_over_missing_region(tmp_path):
    text = BASE + PHASE.replace('region = "a"', 'region = "zz"')
    with pytest.raises(UsageError, match=r"pattern over region 'zz', which does not exist \(regions: a\)"):
        resolve(_write(tmp_path, text), {})


def test_unknown_pattern(tmp_path):
    text = BASE + PHASE.replace('pattern = "block"', 'pattern = "diagonal"')
    with pytest.raises(UsageError, match=r"unknown pattern 'diagonal' \(patterns: block, stencil, transpose"):
        resolve(_write(tmp_path, text), {})


def test_gather_needs_a_count(tmp_path):
    text = BASE + PHASE.replace('pattern = "block"', 'pattern = "gather"')
    with pytest.raises(UsageError, match="gather pattern needs count >= 1"):
        resolve(_write(tmp_path, text), {})
    resolve(_write(tmp_path, text.replace("rd = 1.0", "rd = 1.0, count = 100")), {})


def test_unknown_phase_in_program(tmp_path):
    text = BASE.replace('phases = ["p"]', 'phases = ["p", "q"]') + PHASE
    with pytest.raises(UsageError, match=r"no phase named 'q' \(phases: p\)"):
        resolve(_write(tmp_path, text), {})


def test_duplicate_phase(tmp_path):
    with pytest.raises(UsageError, match="phase 'p' is defined twice"):
        resolve(_write(tmp_path, BASE + PHASE + PHASE), {})


def test_unknown_key_in_descriptor(tmp_path):
    text = BASE + PHASE.replace("cycles = 10", "cycle = 10")
    with pytest.raises(UsageError, match=r"phases\[0\]\.cycle: Extra inputs are not permitted"):
        resolve(_write(tmp_path, text), {})


def test_bad_sync(tmp_path):
    text = BASE + PHASE.replace("cycles = 10", 'cycles = 10\nsync = "fence"')
    with pytest.raises(UsageError, match="'fence' is not one of barrier, none, pipeline"):
        resolve(_write(tmp_path, text), {})


def test_bad_expression(tmp_path):
    text = BASE.replace('bytes = "8 * n"', 'bytes = "8 * m"') + PHASE
    with pytest.raises(UsageError, match="unknown name 'm'"):
        resolve(_write(tmp_path, text), {})


def test_explicit_parameter_wins_over_class_table(tmp_path):
    text = BASE.replace("n = 1000", 'n = 1000\nclass = "A"') + '\n[classes.A]\nn = 2000\n\n[classes.B]\nn = 3000\n' + PHASE
    path = _write(tmp_path, text)
    assert resolve(path, {})["regions"][0]["bytes"] == 16000
    assert resolve(path, {"class": "B"})["regions"][0]["bytes"] == 24000
    assert resolve(path, {"class": "B", "n": 10})["regions"][0]["bytes"] == 80


def test_arithmetic_error_in_expression(tmp_path):
    text = BASE.replace('bytes = "8 * n"', 'bytes = "8 * n / (n - 1000)"') + PHASE
    with pytest.raises(UsageError, match=r"regions\[0\]\.bytes: cannot evaluate '8 \* n / \(n - 1000\)': .*division by zero"):
        resolve(_write(tmp_path, text), {})
