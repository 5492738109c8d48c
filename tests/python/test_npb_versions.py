"""NPB 3.3.1 and 3.4.2: the library's NPB descriptors describe both releases, selected with
--npb-version (a run setting, default 3.4.2), and differ exactly where the two sources differ
(docs/workloads.md §4.1)."""

from __future__ import annotations

import json

import pytest
from numalab.exceptions import UsageError
from numalab.spec.run import RunSpec
from numalab.workload import descriptor

NPB = ["bt", "sp", "lu", "mg", "ft", "cg", "ep", "is"]


def differences(name: str, params: dict) -> set[tuple[str, str]]:
    """(region or phase, field) pairs whose resolved values differ between the releases."""
    a = descriptor.resolve(name, params)
    b = descriptor.resolve(name, params, version="3.3.1")
    assert (a["version"], b["version"]) == ("3.4.2", "3.3.1")
    assert a["program"] == b["program"] and len(a["phases"]) == len(b["phases"])
    out = set()
    for ra, rb in zip(a["regions"], b["regions"], strict=True):
        out |= {(ra["name"], f) for f in ra if ra[f] != rb[f]}
    for pa, pb in zip(a["phases"], b["phases"], strict=True):
        out |= {(pa["name"], f) for f in pa if f != "accesses" and pa[f] != pb[f]}
        for xa, xb in zip(pa["accesses"], pb["accesses"], strict=True):
            out |= {(pa["name"], f) for f in xa if xa[f] != xb[f]}
    return out


def rows(*phases: str) -> set[tuple[str, str]]:
    return {(p, "rows") for p in phases}


# Derived from the sources (matthiasdiener/nas NPB3.3-OMP vs NPB3.4-OMP, every "!$omp do" and
# "!$omp parallel do" with the loop it splits): 3.4.2 adds collapse(2) to every loop over
# (k, j) / (k, i) of BT, SP, LU and FT and over (i3, i2) of MG; 3.3.1 splits the outer loop alone.
# Loops that are not collapsed over the plane index in 3.4.2 (the z-line solves and zeta fluxes
# over (j, i), LU's pipelined j-loops, FT's compute_initial_conditions and cffts3) split alike.
# CG, EP and IS have the same parallel loops in both releases.
EXPECTED = {
    "bt": rows("initialize", "exact_rhs_xy", "exact_rhs_neg", "rhs", "x_solve", "y_solve", "add"),
    "sp": rows("initialize", "exact_rhs_xy", "exact_rhs_neg", "rhs", "txinvr", "x_solve", "y_solve", "tzetar", "add"),
    "lu": rows("setbv", "setiv", "erhs_xy", "rhs_xy", "l2norm", "ssor_scale", "add"),
    # MG's levels are split in rows (i3, i2) by 3.4.2, in i3-planes by 3.3.1: every level's planes,
    # and the 27-point stencils' halo (a plane and a row, or one plane).
    "mg": {(r, "planes") for r in ("u", "u_c1", "u_cs", "r", "r_c1", "r_cs", "v")}
    | {(p, "halo") for p in ("resid_f", "psinv_f", "rprj3_f", "resid_c1", "psinv_c1", "rprj3_c1")},
    "ft": rows("init_ui", "indexmap", "evolve", "fft_x", "fft_y"),
    "cg": set(),
    "ep": set(),
    "is": set(),
}


@pytest.mark.parametrize("name", NPB)
def test_the_releases_differ_exactly_where_their_sources_differ(name: str) -> None:
    assert differences(name, {"class": "C", "threads": 64}) == EXPECTED[name]


def test_a_collapsed_split_gives_every_thread_its_rows() -> None:
    # BT class C, 64 threads: 3.4.2 deals out 162 x 163 rows of the k-planes, 3.3.1 whole planes.
    a = descriptor.resolve("bt", {"class": "C", "threads": 64})
    b = descriptor.resolve("bt", {"class": "C", "threads": 64}, version="3.3.1")
    add_a = next(p for p in a["phases"] if p["name"] == "add")["accesses"][0]
    add_b = next(p for p in b["phases"] if p["name"] == "add")["accesses"][0]
    assert (add_a["rows"], add_b["rows"]) == (163, 1)


def test_the_version_is_a_run_setting() -> None:
    spec = RunSpec.create("opteron6282-4p", "mg", params={"class": "S", "threads": 8})
    assert spec.npb_version == "3.4.2" and "npb_version" not in spec.canonical()
    old = spec.updated(npb_version="3.3.1")
    assert old.canonical()["npb_version"] == "3.3.1"
    assert RunSpec.from_canonical(old.canonical()) == old
    assert spec.with_config("npb-version=3.3.1") == old
    assert old.bind().workload["version"] == "3.3.1"
    # Workloads of one release ignore it.
    assert "version" not in RunSpec.create("e5-2620v4-2s", "dgemv", npb_version="3.3.1").bind().workload
    with pytest.raises(UsageError, match="--npb: '3.2' is not one of 3.4.2, 3.3.1, rwcp-2.3-c, snu-3.3-c"):
        spec.updated(npb_version="3.2")


def test_sim_takes_npb_version_and_reports_it(cli) -> None:
    args = ("sim", "--machine", "opteron6282-4p", "--workload", "mg", "--class", "S", "--threads", "8", "--json")
    code, out, err = cli(*args, "--npb-version", "3.3.1")
    assert code == 0, err
    assert json.loads(out)["workload"]["version"] == "3.3.1"
    code, _, err = cli(*args, "--npb-version", "4")
    assert code == 2 and "numalab: --npb: '4' is not one of 3.4.2, 3.3.1, rwcp-2.3-c, snu-3.3-c" in err


def test_whole_plane_splits_leave_threads_idle() -> None:
    # FT class W (nz = 32 k-planes) on 64 threads: 3.3.1 deals out whole planes, so half the
    # threads get none of init_ui, evolve, cffts1 and cffts2, while 3.4.2's (k, j) rows reach all.
    # The busy half, threads 0-31, has four threads on every node (6.13 forks leave the parent's
    # node from the second on: imb_numa_nr 1 on 8-CPU nodes, docs/scheduler.md §10.7), so it
    # reaches every memory controller and the memory-bound phases lose little: 6 % in all.
    from numalab.runner import sim as runner

    spec = RunSpec.create("opteron6282-4p", "ft", params={"class": "W", "threads": 64}, noise="off")
    new, old = runner.run(spec), runner.run(spec.updated(npb_version="3.3.1"))
    assert old.time_s > 1.03 * new.time_s, (old.time_s, new.time_s)
    busy_nodes = {t["first_node"] for t in old.doc["threads"] if t["tid"] < 32}
    assert len(busy_nodes) == 8, busy_nodes


def test_workloads_lists_the_releases(cli) -> None:
    code, out, _ = cli("workloads", "bt")
    assert code == 0 and "implementations (--npb): 3.4.2, 3.3.1" in out
    code, out, _ = cli("workloads", "dgemv")
    assert code == 0 and "versions" not in out


def test_s1_runs_the_implementation_of_its_build_beside_the_others_and_plots_mapki() -> None:
    from pathlib import Path

    from numalab.study import expand, load_study

    sf = load_study(Path(__file__).resolve().parents[2] / "studies" / "s1-autonuma-npb.toml")
    # RWCP's NPB2.3-omp-C by the evidence of the build (docs/studies.md §6.1.1), the others beside it.
    assert sf.study.npb == "rwcp-2.3-c"
    runs = expand(sf).runs
    assert {r.config.get("npb_version") for r in runs} == {"rwcp-2.3-c", "3.3.1", "snu-3.3-c", None}
    assert {r.case for r in runs if r.config.get("npb_version") == "rwcp-2.3-c"} == {f"{w} [rwcp-2.3-c]" for w in ("ep", "cg", "mg", "ft", "bt", "sp", "lu")}
    assert any(s.x == "baseline.mapki" for s in sf.study.report.scatter)
    # A study that says nothing runs 3.4.2, and its stored configurations keep their old hashes.
    assert "npb_version" not in RunSpec.create("opteron6282-4p", "cg").canonical()
