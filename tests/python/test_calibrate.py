"""numalab calibrate (docs/calibrate.md): captured kernel outputs give the expected preset TOML,
the plan picks and refuses pairs as documented, and a real --quick calibration of this host loads
with --machine in topo and sim."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import pytest

from numalab.calibrate import figures as fg
from numalab.calibrate import plan
from numalab.calibrate.preset import preset_toml
from numalab.exceptions import UsageError
from numalab.machine.presets import load_spec_file
from numalab.study.uncertainty import machine_parameters

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures" / "calibrate"
CASES = ["one-node", "two-node", "one-node-clock", "one-node-window"]


def numalab(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "numalab.cli.main", *args], capture_output=True, text=True, cwd=cwd,
                          env={**os.environ, **(env or {})})


def raw(case: str) -> dict:
    return json.loads((FIXTURES / f"{case}.raw.json").read_text())


# ---- captured outputs -> TOML (pure) --------------------------------------------------------

@pytest.mark.parametrize("case", CASES)
def test_captured_outputs_give_the_expected_toml(case):
    assert preset_toml(raw(case), case) == (FIXTURES / f"{case}.toml").read_text()


@pytest.mark.parametrize("case", CASES)
def test_the_preset_loads_and_its_ranges_hold_its_numbers(case):
    path = FIXTURES / f"{case}.toml"
    m = json.loads(load_spec_file(path).to_json())
    assert m["name"] == case
    params = machine_parameters(case, tomllib.loads(path.read_text()), str(path))
    assert {p.path for p in params} >= {"core.mlp", "latency.loaded_curve"}


def test_two_nodes_remote_latency_links_and_unmeasured_cells():
    text = preset_toml(raw("two-node"), "two-node")
    data = tomllib.loads(text)
    lat = data["latency"]["matrix_ns"]
    # measured: 0->0 80.2 (2 MiB pages, median of 80.2 79.9 81.5 80.0 80.4), 1->0 135.5, 1->1 81.1;
    # 0->1 was skipped (cgroup), so it takes the reverse pair's measurement
    assert lat == [[80.2, 135.5], [135.5, 81.1]]
    # the most DRAM line traffic: the triad on 2 threads, 19.0 and 18.8 GB/s, x 4/3 (read-only: 21.0, 20.9)
    assert data["bandwidth"]["node_gbps"] == [25.33, 25.07]
    assert data["links"] == [{"nodes": [0, 1], "gbps": [14.2, 14.2]}]  # CPU 1 reading node 0, 2 threads
    assert data["core"]["frequency_ghz"] == 2.6
    assert "# skipped: 0:1: node 1 is not in this process's allowed memory nodes" in text
    assert "latency.matrix_ns[0][1]" not in data["estimates"]  # not measured: no measured range
    assert data["estimates"]["latency.matrix_ns[1][0]"]["low"] == 134.9


def test_a_document_that_is_not_a_calibration_is_refused():
    with pytest.raises(ValueError, match="not a calibration document"):
        preset_toml({"format": "other"}, "x")


# ---- figures ------------------------------------------------------------------------------------

def test_figure_is_the_median_with_the_extremes_as_range():
    f = fg.figure([5.0, 1.0, 3.0, 9.0])
    assert (f.value, f.low, f.high, f.samples) == (4.0, 1.0, 9.0, 4)


def test_samples_count_on_cpu_time_where_the_kernel_reports_it():
    # a run that got a third of its CPUs: the wall time says 3x slower than the machine is
    busy = {"gbps": 2.0, "time_s": 3.0, "cpu_s": 2.0, "threads": 2}
    assert fg.stream_gbps(busy) == 6.0  # the bytes over cpu_s / threads = 1 s
    assert fg.stream_gbps({"gbps": 2.0, "time_s": 3.0, "threads": 2}) == 2.0  # an older capture: wall time
    assert fg.chase_ns({"ns_per_load": [300.0, 600.0], "cpu_ns_per_load": [100.0, 110.0]}) == [100.0, 110.0]
    assert fg.chase_ns({"ns_per_load": [300.0, 600.0]}) == [300.0, 600.0]
    with pytest.raises(ValueError, match="positive time"):
        fg.stream_gbps({**busy, "cpu_s": 0.0})
    runs = [{"kind": "bandwidth", "cpu_node": 0, "mem_node": 0, "mode": "read", "threads": 2, "output": busy},
            {"kind": "latency", "cpu_node": 0, "mem_node": 0, "pages": "2m",
             "output": {"ns_per_load": [300.0, 600.0, 900.0], "cpu_ns_per_load": [100.0, 110.0, 120.0], "anon_huge_kib": 2048}}]
    assert fg.bandwidths(runs)[(0, 0, "read", 2)].value == 6.0
    assert fg.latencies(runs)[(0, 0, "2m")] == fg.Figure(110.0, 100.0, 120.0, 3)


def test_curve_starts_idle_rises_and_caps_utilisation():
    pts = [fg.LoadedPoint(0, 0.0, fg.figure([100.0])), fg.LoadedPoint(1, 5.0, fg.figure([120.0])),
           fg.LoadedPoint(3, 30.0, fg.figure([90.0]))]
    # probe: 64 B / 120 ns = 0.5333 GB/s; 5.5333 / 10 = 0.5533; the third point is past the node's
    # 10 GB/s (capped at 1) and faster than idle (noise): kept at the factor before it
    assert fg.curve(pts, 10.0) == [(0.0, 1.0), (pytest.approx(0.55333, abs=1e-4), 1.2), (1.0, 1.2)]


def test_littles_law_and_loaded_latency_interpolation():
    pts = [fg.LoadedPoint(0, 0.0, fg.figure([100.0])), fg.LoadedPoint(1, 10.0, fg.figure([200.0]))]
    assert fg.loaded_latency_at(pts, 5.0) == 150.0
    assert fg.loaded_latency_at(pts, 50.0) == 200.0
    assert fg.concurrency(6.4, 100.0) == pytest.approx(10.0)  # 6.4 GB/s x 100 ns = 640 B = 10 lines


# ---- the plan --------------------------------------------------------------------------------

def facts(nodes: int = 4, cores_per_node: int = 2) -> dict:
    dist = [[10 if a == b else 10 + 6 * abs(a - b) for b in range(nodes)] for a in range(nodes)]
    cpus = lambda n: f"{n * cores_per_node}-{n * cores_per_node + cores_per_node - 1}"  # noqa: E731
    return {
        "numa_disabled": False,
        "nodes": [{"os_index": n, "package": 0, "cpus": cpus(n), "distances": dist[n], "memory_bytes": 8 << 30,
                   "memory_free_bytes": 4 << 30} for n in range(nodes)],
        "cores": [{"cpus": str(c), "os_index": c, "package": 0} for c in range(nodes * cores_per_node)],
        "caches": [{"cpus": "0-7", "level": 3, "size_bytes": 64 << 20, "type": "Unified"}],
    }


def test_pairs_all_local_sampled_and_explicit():
    f = facts()
    assert plan.choose_pairs("local", f["nodes"]) == [(0, 0), (1, 1), (2, 2), (3, 3)]
    assert len(plan.choose_pairs("all", f["nodes"])) == 16
    sampled = plan.choose_pairs(6, f["nodes"])
    # the 4 local pairs, then the nearest (distance 16) and the farthest (distance 28) remote pair
    assert sampled == [(0, 0), (1, 1), (2, 2), (3, 3), (0, 1), (3, 0)]
    assert plan.choose_pairs(plan.parse_pairs("0:1,1:0,0:1", [0, 1, 2, 3]), f["nodes"]) == [(0, 1), (1, 0)]


@pytest.mark.parametrize("text, message", [
    ("0", "a count must be at least 1"),
    ("0-1", "'0-1' is not CPU_NODE:MEM_NODE"),
    ("0:7", "node 7 does not exist"),
])
def test_bad_pairs_are_one_line(text, message):
    with pytest.raises(UsageError, match=message):
        plan.parse_pairs(text, [0, 1, 2, 3])


def test_restricted_cpus_and_mems_skip_pairs_and_say_why():
    p = plan.make_plan(facts(), "all", True, allowed_cpus={0, 1, 2}, allowed_mems={0, 1, 2})
    assert p.cpus[1] == [2] and p.cpus[2] == [] and p.cpus[0] == [0, 1]
    assert set(p.pairs) == {(0, 0), (0, 1), (0, 2), (1, 0), (1, 1), (1, 2)}
    assert "2:0: none of node 2's CPUs (4-5) is in this process's allowed CPUs (cgroup cpuset or taskset)" in p.skipped
    assert "0:3: node 3 is not in this process's allowed memory nodes (cgroup cpuset.mems)" in p.skipped
    assert p.thread_levels(0) == [1, 2] and p.load_levels(0) == [0, 1] and p.load_levels(1) == [0]
    assert p.skipped[0] == ("CPUs 3 of node 1: outside this process's allowed CPUs (cgroup cpuset or taskset); "
                            "node 1 measured on 2")


def test_nothing_bindable_is_refused_in_one_line():
    with pytest.raises(UsageError) as e:
        plan.make_plan(facts(nodes=1), "all", True, allowed_cpus={9}, allowed_mems={0})
    assert str(e.value) == ("calibrate: cannot bind any (CPU node, memory node) pair, nothing measured; skipped 0:0: "
                            "none of node 0's CPUs (0-1) is in this process's allowed CPUs (cgroup cpuset or taskset)")


def test_full_plan_sizes_buffers_past_the_last_level_cache():
    p = plan.make_plan(facts(nodes=1, cores_per_node=8), "all", False, set(range(8)), {0})
    assert p.chase_mib == 256 and p.chase_loads == 256 * 2**20 // 64  # 2 x 64 MiB LLC < the 256 MiB floor
    assert p.stream_n * 24 >= 4 * (64 << 20)
    assert p.thread_levels(0) == [1, 2, 4, 8] and p.load_levels(0) == [0, 1, 2, 4, 7]


# ---- the command ------------------------------------------------------------------------------

def test_from_raw_writes_the_fixture_preset(tmp_path):
    out = tmp_path / "one-node.toml"
    r = numalab("calibrate", "--from-raw", str(FIXTURES / "one-node.raw.json"), "--output", str(out))
    assert r.returncode == 0, r.stderr
    assert out.read_text() == (FIXTURES / "one-node.toml").read_text()


@pytest.mark.parametrize("args, message", [
    (["--output", "x.txt"], "numalab: --output x.txt: the preset must be a .toml file (--machine reads presets by that suffix)"),
    (["--from-raw", "missing.json"], "numalab: --from-raw missing.json: cannot read: No such file or directory"),
])
def test_usage_errors_are_one_line(tmp_path, args, message):
    r = numalab("calibrate", *args, cwd=tmp_path)
    assert r.returncode == 2 and r.stderr.strip() == message


def test_a_broken_raw_document_is_one_line(tmp_path):
    doc = raw("one-node")
    del doc["facts"]
    (tmp_path / "a.json").write_text(json.dumps(doc))
    r = numalab("calibrate", "--from-raw", "a.json", "-o", "a.toml", cwd=tmp_path)
    assert (r.returncode, r.stderr) == (2, "numalab: --from-raw a.json: the calibration document has no 'facts' "
                                           "(numalab calibrate --json writes it)\n")
    doc = raw("one-node")
    chase_2m = next(r for r in doc["runs"] if r["kind"] == "latency" and r["pages"] == "2m")
    chase_2m["output"]["ns_per_load"] = [float("nan")] * 3  # json.dumps writes NaN; latency.local_ns = nan is refused
    (tmp_path / "b.json").write_text(json.dumps(doc))
    r = numalab("calibrate", "--from-raw", "b.json", "-o", "b.toml", cwd=tmp_path)
    assert (r.returncode, r.stderr) == (2, "numalab: --from-raw b.json: cannot build the preset from the measurements: "
                                           "a kernel output holds nan where a positive time or bandwidth belongs\n")
    assert not (tmp_path / "b.toml").exists()


def test_an_agent_that_cannot_bind_stops_the_calibration_in_one_line(tmp_path):
    agent = tmp_path / "agent"
    agent.write_text("#!/bin/sh\necho 'numalab-agent: set_mempolicy: Operation not permitted' >&2\nexit 1\n")
    agent.chmod(0o755)
    r = numalab("calibrate", "--quick", "--json", "-o", "c.toml", cwd=tmp_path, env={"NUMALAB_AGENT": str(agent)})
    if "is not built" in r.stderr:
        pytest.skip(r.stderr.strip())
    assert r.returncode == 1
    assert r.stderr.strip().startswith("numalab: calibrate: cannot bind latency ")
    assert r.stderr.strip().endswith("set_mempolicy: Operation not permitted; nothing written (every run of the calibration is skipped)")
    assert not (tmp_path / "c.toml").exists()


# ---- this host --------------------------------------------------------------------------------

def test_quick_calibration_of_this_host_loads_in_topo_and_sim(tmp_path):
    from numalab.calibrate.measure import kernel
    from numalab.exceptions import NumalabError
    from numalab.runner.host import agent_path

    try:
        agent_path(), kernel("chase"), kernel("stream")
    except NumalabError as e:
        pytest.skip(str(e))
    out = tmp_path / "here.toml"
    t0 = time.monotonic()
    r = numalab("calibrate", "--quick", "--json", "--output", str(out))
    elapsed = time.monotonic() - t0
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    lat = doc["figures"]["latency_ns"]
    assert {x["pages"] for x in lat} == {"4k", "2m"} and all(x["median"] > 0 for x in lat)
    assert {x["mode"] for x in doc["figures"]["bandwidth_gbps"]} == {"read", "triad", "write"}
    # written from the same raw outputs, the file is what --from-raw gives
    again = tmp_path / "here2.toml"
    (tmp_path / "raw.json").write_text(json.dumps(doc["raw"]))
    assert numalab("calibrate", "--from-raw", str(tmp_path / "raw.json"), "-o", str(again)).returncode == 0
    assert again.read_text().replace("here2", "here") == out.read_text()
    topo = numalab("topo", "--machine", str(out))
    assert topo.returncode == 0, topo.stderr
    assert "calibration: measured by numalab calibrate" in topo.stdout
    sim = numalab("sim", "--machine", str(out), "--workload", "stream")
    assert sim.returncode == 0, sim.stderr
    print(f"numalab calibrate --quick: {elapsed:.1f} s")


# ---- numalab check --host -------------------------------------------------------------------

def test_host_check_cases_on_one_and_on_several_nodes():
    from numalab.calibrate import hostcheck

    one = hostcheck.cases([0], 2)
    assert [c.name for c in one if not c.skipped] == ["dgemv init=serial", "dgemv init=parallel", "stream threads=1", "stream threads=2",
                                                      "stencil init=serial", "stencil init=parallel", "dgemv threads=1", "stencil threads=1"]
    # one node: the placement variants are listed, each with why it does not run
    assert [(c.name, c.skipped) for c in one if c.skipped] == [
        (n, hostcheck.ONE_NODE) for n in ("stream interleave=all", "stream membind=0", "stencil interleave=all", "stencil membind=0")]
    two = hostcheck.cases([0, 1], 6)
    assert not any(c.skipped for c in two)
    assert [c.name for c in two][2:] == ["stream threads=1", "stream threads=2", "stream threads=4", "stream threads=6",
                                         "stencil init=serial", "stencil init=parallel", "dgemv threads=1", "stencil threads=1",
                                         "stream interleave=all", "stream membind=0", "stencil interleave=all", "stencil membind=0"]
    assert two[-1].config == "membind=0" and two[-1].params["threads"] == 6
    assert [c.params["threads"] for c in two if c.name.endswith("threads=1")] == [1, 1, 1]
    assert not any(c.name.endswith("threads=1") and c.workload != "stream" for c in hostcheck.cases([0], 1))  # one CPU: the cases above


def test_host_check_gives_the_kernel_the_simulators_parameters():
    from numalab.calibrate import hostcheck

    argv = hostcheck.kernel_argv("stream", {"n": 100, "ntimes": 3, "threads": 2})
    assert argv[0].endswith("kernels/stream") and argv[1:] == ["--init=parallel", "--mode=triad", "--n=100", "--reps=3", "--threads=2"]
    argv = hostcheck.kernel_argv("stencil", {"n": 64, "reps": 2, "threads": 2, "init": "serial"})
    assert argv[0].endswith("kernels/stencil") and argv[1:] == ["--init=serial", "--n=64", "--reps=2", "--threads=2"]


def test_host_check_compares_the_timed_loop_on_wall_and_cpu_time():
    from numalab.calibrate import hostcheck

    runs = tuple(hostcheck.Run(time_s=t, cpu_s=c, init_s=0.5, threads=2) for t, c in ((1.0, 1.0), (2.0, 2.0), (9.0, 3.0)))
    o = hostcheck.Outcome(hostcheck.Case("x", "stream", {}), runs, predicted_s=1.5, predicted_run_s=2.5)
    assert o.measured_s == 2.0 and o.error_pct == -25.0  # the median wall time of the loop; init_s is not in it
    assert o.measured_cpu_s == 1.0 and o.error_cpu_pct == 50.0  # CPU time per thread
    assert [r.cpu_share for r in runs] == [0.5, 0.5, 3.0 / 18.0]
    doc = o.as_json()
    assert doc["measured_runs_s"] == [1.0, 2.0, 9.0] and doc["init_runs_s"] == [0.5] * 3 and doc["predicted_run_s"] == 2.5
    skipped = hostcheck.Outcome(hostcheck.Case("y", "stream", {}, "membind=0", "why"))
    assert skipped.as_json()["skipped"] == "why" and "predicted_s" not in skipped.as_json()
    assert hostcheck.rows([skipped])[0][:2] == ["y", "skipped: why"]


@pytest.mark.parametrize("workload", ["dgemv", "stream", "stencil"])
def test_host_check_descriptors_time_the_kernels_loop(workload):
    from numalab.calibrate import hostcheck
    from numalab.workload.descriptor import resolve

    w = resolve(hostcheck.DESCRIPTORS[workload], {})
    timed = [s["phases"] for s in w["program"] if s.get("timed")]
    assert timed == [[w["program"][-1]["phases"][0]]]  # the repeated loop, as the kernel's time_s
    assert not w["program"][0].get("timed")  # the first touch is init_s, outside the timer


def test_only_dgemvs_inner_product_is_a_dependent_add_chain():
    from numalab.calibrate import hostcheck
    from numalab.workload.descriptor import resolve

    w = resolve(hostcheck.DESCRIPTORS["dgemv"], {"n": 100})
    chains = {p["name"]: p.get("chain") for p in w["phases"]}
    assert chains == {"init": None, "mult": 100 * 100}  # kernels/dgemv.c: s += row[j] * x[j], n x n adds
    for other in ("stream", "stencil"):
        assert all("chain" not in p for p in resolve(hostcheck.DESCRIPTORS[other], {})["phases"])


def test_the_load_average_is_read_or_empty(tmp_path):
    from numalab.calibrate import hostcheck

    (tmp_path / "loadavg").write_text("8.04 9.39 10.98 3/200 123\n")
    assert hostcheck.loadavg(tmp_path / "loadavg") == [8.04, 9.39, 10.98]
    assert hostcheck.loadavg(tmp_path / "missing") == []


def test_check_without_host_is_one_line():
    r = numalab("check")
    assert r.returncode == 2
    assert r.stderr == "numalab: check: give --host (run the kernels here and in the simulator); `numalab vm check` checks the guest\n"


def test_check_host_reports_every_case_on_this_host():
    from numalab.calibrate.measure import kernel
    from numalab.exceptions import NumalabError
    from numalab.runner.host import agent_path

    try:
        agent_path(), kernel("dgemv"), kernel("stream")
    except NumalabError as e:
        pytest.skip(str(e))
    r = numalab("check", "--host", "--machine", str(FIXTURES / "one-node.toml"), "--repeat", "2", "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    cpus = len(os.sched_getaffinity(0))
    levels = {1, cpus} | {2**i for i in range(cpus.bit_length()) if 2**i < cpus}
    ran = [c for c in doc["cases"] if "skipped" not in c]
    skipped = [c for c in doc["cases"] if "skipped" in c]
    assert doc["repeat"] == 2 and all(len(c["measured_runs_s"]) == 2 for c in ran)
    assert len(doc["cases"]) == 8 + len(levels) + (2 if cpus > 1 else 0) and all(c["config"] != "default" for c in skipped)
    for c in ran:
        assert c["measured_s"] > 0 and c["predicted_s"] > 0 and c["measured_cpu_s"] > 0
        assert c["error_pct"] == pytest.approx((c["predicted_s"] - c["measured_s"]) / c["measured_s"] * 100)
        assert c["predicted_s"] < c["predicted_run_s"]  # the timed loop, without the first touch


def test_a_2mib_run_that_got_no_huge_page_counts_as_4kib():
    doc = raw("one-node")
    for r in doc["runs"]:
        if r["kind"] == "latency" and r["pages"] == "2m":
            r["output"]["anon_huge_kib"] = 0  # THP "never": madvise(MADV_HUGEPAGE) granted nothing
    got = fg.latencies(doc["runs"])
    assert list(got) == [(0, 0, "4k")] and got[(0, 0, "4k")].samples == 6
    assert "(kernels/chase), 4 KiB pages (no 2 MiB page was granted)" in preset_toml(doc, "x")


# ---- the kernels ------------------------------------------------------------------------------

def built(name: str) -> Path:
    p = REPO / "kernels" / name
    if not p.is_file():
        pytest.skip(f"kernels/{name} is not built (make kernels)")
    return p


def test_chase_follows_one_cycle_through_every_line():
    chase = built("chase")
    lines = 1 * 2**20 // 64
    # Sattolo's shuffle: one cycle, so the chase is back at line 0 after exactly `lines` loads, not before
    whole = json.loads(subprocess.run([chase, "--size-mib", "1", "--reps", "2"], capture_output=True, text=True, check=True).stdout)
    assert whole["lines"] == lines and whole["loads"] == lines and whole["checksum"] == 0 and len(whole["ns_per_load"]) == 2
    short = json.loads(subprocess.run([chase, "--size-mib", "1", "--loads", str(lines - 1), "--reps", "1"],
                                      capture_output=True, text=True, check=True).stdout)
    assert short["checksum"] != 0
    bad = subprocess.run([chase, "--reps", "0"], capture_output=True, text=True)
    assert bad.returncode == 2 and bad.stderr.startswith("chase: --reps must be a whole number in 1..1000, got '0'")


def test_clock_runs_its_chain_of_adds_and_reports_each_repetition():
    """kernels/clock: the checksum is the chain's result, so every add ran (a compiler folding the
    chain would still give it, but the inline assembly keeps each add); the times are not asserted
    beyond being positive (CI's CPUs are shared)."""
    out = json.loads(subprocess.run([built("clock"), "--adds", "1000", "--reps", "3"], capture_output=True, text=True,
                                    check=True).stdout)
    assert out["adds"] == 100000 and out["reps"] == 3
    # warm-up: 1 + 101 steps x 100 adds of 1; repetition r: 1 + 1000 x 100 adds of r + 1
    assert out["checksum"] == (1 + 101 * 100) + sum(1 + 100000 * (r + 1) for r in range(3))
    assert len(out["ns_per_add"]) == len(out["cpu_ns_per_add"]) == 3
    assert all(0 < c <= w + 1.0 for c, w in zip(out["cpu_ns_per_add"], out["ns_per_add"]))
    bad = subprocess.run([built("clock"), "--reps", "0"], capture_output=True, text=True)
    assert bad.returncode == 2 and bad.stderr.startswith("clock: --reps must be a whole number in 1..1000, got '0'")


def test_clock_pause_times_its_pauses_alone():
    """kernels/clock --pause N: the PAUSE loop of docs/scheduler.md §10.57, reported per PAUSE and
    repetition in its own fields (no adds, no checksum); it cannot be asked together with --adds."""
    out = json.loads(subprocess.run([built("clock"), "--pause", "20000", "--reps", "2"], capture_output=True, text=True,
                                    check=True).stdout)
    assert out["pauses"] == 20000 and out["reps"] == 2 and "adds" not in out and "checksum" not in out
    assert len(out["ns_per_pause"]) == len(out["cpu_ns_per_pause"]) == 2
    assert all(0 < c <= w + 1.0 for c, w in zip(out["cpu_ns_per_pause"], out["ns_per_pause"]))
    both = subprocess.run([built("clock"), "--pause", "10", "--adds", "10"], capture_output=True, text=True)
    assert both.returncode == 2 and both.stderr.startswith("clock: --adds and --pause time different loops; give one")
    bad = subprocess.run([built("clock"), "--pause", "0"], capture_output=True, text=True)
    assert bad.returncode == 2 and bad.stderr.startswith("clock: --pause must be a whole number in 1..")


@pytest.mark.parametrize("mode, gflops_per_gb", [("read", 1 / 8), ("write", 0.0), ("triad", 2 / 24)])
def test_stream_modes_count_their_bytes(mode, gflops_per_gb):
    stream = built("stream")
    out = json.loads(subprocess.run([stream, "--mode", mode, "--n", "100000", "--reps", "2", "--threads", "1"],
                                    capture_output=True, text=True, check=True).stdout)
    assert out["reps"] == 2 and out["gbps"] > 0
    assert out["gflops"] == pytest.approx(out["gbps"] * gflops_per_gb, rel=1e-3, abs=1e-4)


@pytest.mark.parametrize("name", ["dgemv", "stream", "stencil"])
def test_kernels_report_the_cpu_time_of_their_loop(name):
    out = json.loads(subprocess.run([built(name), "--n", "40" if name == "stencil" else "2000", "--reps", "3", "--threads", "1"],
                                    capture_output=True, text=True, check=True).stdout)
    # one thread: its CPU time is at most the wall time (a little more: clocks read microseconds apart)
    assert 0 < out["cpu_s"] <= out["time_s"] + 1e-3


def test_chase_reports_each_repetition_on_cpu_time_too():
    out = json.loads(subprocess.run([built("chase"), "--size-mib", "4", "--loads", "20000", "--reps", "2"],
                                    capture_output=True, text=True, check=True).stdout)
    assert len(out["cpu_ns_per_load"]) == 2
    assert all(0 < c <= w + 1.0 for c, w in zip(out["cpu_ns_per_load"], out["ns_per_load"]))


def test_stream_seconds_repeats_until_the_time_is_up():
    out = json.loads(subprocess.run([built("stream"), "--mode=read", "--seconds", "0.3", "--n", "10000", "--reps", "1",
                                     "--threads", "1"], capture_output=True, text=True, check=True).stdout)
    assert out["time_s"] >= 0.3 and out["reps"] > 1
    bad = subprocess.run([built("stream"), "--mode", "copy"], capture_output=True, text=True)
    assert bad.returncode == 2 and bad.stderr == "stream: --mode must be triad, read or write, got 'copy'\n"


def _add_run(ns_per_add: float) -> dict:
    """An in-cache read-only STREAM process (the add-latency run) taking ``ns_per_add`` of CPU time
    per addpd (one per 16 B)."""
    n, reps = 16384, 20000
    cpu = ns_per_add * 1e-9 * n * reps / 2
    return {"kind": "add", "cpu_node": 0, "mem_node": 0, "cpus": "0",
            "output": {"kernel": "stream", "n": n, "reps": reps, "threads": 1, "time_s": cpu * 1.01, "cpu_s": cpu, "gbps": 1.0}}


def test_the_add_latency_takes_the_read_loops_chain_out_of_one_streams_concurrency():
    doc = raw("one-node")
    # no loaded curve: Little's law uses the idle latency (2 MiB pages), 385.5 ns in this capture
    doc["runs"] = [r for r in doc["runs"] if r["kind"] != "loaded"] + [_add_run(x) for x in (0.58, 0.60, 0.62)]
    data = tomllib.loads(text := preset_toml(doc, "x"))
    core = data["core"]
    assert core["add_latency_ns"] == 0.6
    assert data["estimates"]["core.add_latency_ns"]["low"] == 0.58
    bw = fg.bandwidths(doc["runs"])
    read1, triad1, write1 = (bw[(0, 0, md, 1)].value for md in ("read", "triad", "write"))
    lat = 385.5
    # one stream: the read loop's 64 / read1 ns per line less its 4 dependent adds (4 x 0.6 ns)
    assert core["stream_mlp"] == round(lat / (64 / read1 - 4 * 0.6), 2)
    # the core: the most lines in flight of read (corrected), triad (4 lines per 3 counted) and
    # write (2 per 1); here the triad's
    seen = {"read": lat / (64 / read1 - 2.4), "triad": triad1 * 4 / 3 * lat / 64, "write": write1 * 2 * lat / 64}
    assert max(seen, key=seen.get) == "triad"
    assert core["mlp"] == round(seen["triad"], 2) and core["mlp"] > core["stream_mlp"]
    assert "the most lines one core kept in flight: its triad STREAM" in text
    params = {p.path for p in machine_parameters("x", data, "x")}
    assert {"core.mlp", "core.stream_mlp", "core.add_latency_ns"} <= params


#: kernels/clock's JSON line as a --quick calibration on this host captured it (2026-11-26, load average 6).
CLOCK_RUN = {"kind": "clock", "cpu_node": 0, "mem_node": 0, "cpus": "0", "output": {
    "kernel": "clock", "adds": 200000000, "reps": 5, "ns_per_add": [0.797520, 1.266643, 2.919349, 0.856175, 0.920822],
    "cpu_ns_per_add": [0.275288, 0.270113, 0.260702, 0.259786, 0.260569], "checksum": 3020000106}}


def test_without_cpufreq_the_clock_is_the_add_chains():
    """No cpufreq (this VM): frequency_ghz is one over the CPU time per dependent integer add (one
    cycle each), the median of the repetitions, their extremes its range; with cpufreq, cpufreq's
    figure stays and the measured clock is a comment."""
    doc = raw("one-node")
    assert doc["frequency_khz"] is None
    doc["runs"].append(CLOCK_RUN)
    data = tomllib.loads(text := preset_toml(doc, "x"))
    ghz = [1 / ns for ns in CLOCK_RUN["output"]["cpu_ns_per_add"]]
    assert data["core"]["frequency_ghz"] == round(sorted(ghz)[2], 3) == 3.836
    assert data["estimates"]["core.frequency_ghz"]["low"] == 3.632 and data["estimates"]["core.frequency_ghz"]["high"] == 3.850
    assert ("the clock, one thread's chain of 200000000 dependent integer adds, one cycle each (kernels/clock, "
            "lmbench src/mhz.c's method), median of 5, 3.633-3.849 GHz") in text
    assert "core.frequency_ghz" in {p.path for p in machine_parameters("x", data, "x")}
    doc["frequency_khz"] = 2600000
    data = tomllib.loads(text := preset_toml(doc, "x"))
    assert data["core"]["frequency_ghz"] == 2.6 and "core.frequency_ghz" not in data["estimates"]
    assert "# source: measured by numalab calibrate" in text and "the clock measured (kernels/clock): 3.836 GHz" in text


def test_node_bandwidth_is_the_most_dram_line_traffic_of_any_stream_mode():
    doc = raw("one-node")
    bw = fg.bandwidths(doc["runs"])
    best = {md: max(f.value for (c, m, mm, t), f in bw.items() if mm == md) * fg.LINES_PER_COUNTED[md]
            for md in ("read", "triad", "write")}
    data = tomllib.loads(preset_toml(doc, "x"))
    assert data["bandwidth"]["node_gbps"] == round(max(best.values()), 2)
    assert max(best.values()) > best["read"]  # this capture: the triad's lines


def test_a_node_with_one_usable_cpu_gets_a_flat_curve_and_no_curve_range():
    doc = raw("one-node")
    doc["runs"] = [r for r in doc["runs"] if not (r["kind"] == "loaded" and r["load_threads"] > 0)]
    data = tomllib.loads(text := preset_toml(doc, "x"))
    assert data["latency"]["loaded_curve"] == [[0.0, 1.0]]
    assert "latency.loaded_curve" not in data["estimates"]
    assert "# estimate: no load measured (the node has one usable CPU, taken by the probe): a flat curve" in text


def test_bench_host_check_prints_the_rounds_as_a_markdown_table():
    import importlib.util

    spec = importlib.util.spec_from_file_location("host_check", REPO / "bench" / "host_check.py")
    assert spec and spec.loader
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)

    def case(wall, cpu, runs):
        return {"case": "stream threads=1", "measured_s": wall, "measured_cpu_s": cpu, "cpu_share": cpu / wall,
                "measured_runs_s": runs, "predicted_s": 0.5}

    skipped = {"case": "stream membind=0", "skipped": "why"}
    rounds = [{"cases": [case(1.0, 0.4, [0.9, 1.0]), skipped]}, {"cases": [case(2.0, 0.5, [2.0, 3.0]), skipped]},
              {"cases": [case(4.0, 0.6, [4.0, 4.5]), skipped]}]
    # waiting for a quiet machine: met at once below an unreachable load, given up at once below 0
    assert bench.wait_for_load(1e9, 0.0) and not bench.wait_for_load(0.0, 0.0, poll_s=0.0)
    rows = bench.table(rounds)
    assert rows[0].startswith("| case | measured s (wall, median) |") and rows[1].startswith("|---|")
    # medians over the rounds, the range over every run, errors on the wall and on CPU time
    assert rows[2] == "| stream threads=1 | 2.000 | 0.900-4.500 | 0.500 | 0.25 | 0.500 | -75.0 | +0.0 |"
    assert rows[3] == "| stream membind=0 | skipped: why | | | | | | |"


# ---- the instruction window ------------------------------------------------------------------

def _sweep(knee: int, fast: float = 200.0, slow: float = 420.0, step: int = 8, top: int = 1024) -> tuple[list[int], list[float]]:
    nops = list(range(0, top + 1, step))
    return nops, [fast if n < knee else slow + (n - knee) * 0.1 for n in nops]


def test_the_window_is_the_first_nop_count_where_the_pair_stops_overlapping():
    """One sweep's knee: the first N whose pair takes 1.5 times the overlapped pair's time, and the
    next two N too, plus the load (N + 1); a lone slow point is noise, no knee is None."""
    nops, ns = _sweep(496)
    assert fg.window_knee(nops, ns) == 497.0
    ns[20] = 900.0  # N = 160, one disturbed sample
    assert fg.window_knee(nops, ns) == 497.0
    ns[40:42] = [700.0, 700.0]  # two in a row are not the run of three
    assert fg.window_knee(nops, ns) == 497.0
    assert fg.window_knee(*_sweep(2000)) is None
    with pytest.raises(ValueError, match="positive time per load pair"):
        fg.window_knee(nops, [0.0] * len(nops))


def _window_run(knees: list[int]) -> dict:
    nops = _sweep(0)[0]
    sweeps = [_sweep(k)[1] for k in knees]
    return {"kind": "window", "cpu_node": 0, "mem_node": 0, "cpus": "0", "output": {
        "kernel": "window", "size_bytes": 268435456, "pairs": 16384, "reps": len(knees), "init_s": 0.3, "nops": nops,
        "ns_per_pair": sweeps, "cpu_ns_per_pair": sweeps, "checksum": 1}}


def test_the_window_and_the_prefetched_lines_enter_the_core_table(tmp_path):
    """window_instructions: the median knee of the sweeps, their extremes its range; prefetch_lines:
    stream_mlp less the window's loads at the read loop's 20 instructions per line. A capture
    without the window run writes neither (the engine then keeps the streams' figure)."""
    doc = raw("one-node-clock")
    before = tomllib.loads(preset_toml(doc, "x"))
    assert "window_instructions" not in before["core"] and "prefetch_lines" not in before["core"]
    doc["runs"].append(_window_run([488, 496, 504]))
    data = tomllib.loads(text := preset_toml(doc, "x"))
    core, ranges = data["core"], data["estimates"]
    assert core["window_instructions"] == 497
    assert ranges["core.window_instructions"]["low"] == 489 and ranges["core.window_instructions"]["high"] == 505
    assert core["prefetch_lines"] == pytest.approx(core["stream_mlp"] - 497 / 20, abs=0.01)
    assert ranges["core.prefetch_lines"]["low"] <= core["prefetch_lines"] <= ranges["core.prefetch_lines"]["high"]
    assert "Henry Wong's 2013 reorder-buffer test" in text and "movupd, add, addpd, cmp, jne per 16 B" in text
    (path := tmp_path / "x.toml").write_text(text)
    m = json.loads(load_spec_file(path).to_json())
    assert m["cores"][0]["window_instructions"] == 497 and m["cores"][0]["prefetch_lines"] == core["prefetch_lines"]
    assert {"core.window_instructions", "core.prefetch_lines"} <= {p.path for p in machine_parameters("x", data, "x")}


def test_window_kernel_sweeps_its_nop_counts_and_reports_each_sweep():
    """kernels/window: one time per nop count per sweep, wall and CPU; the times are not asserted
    beyond being positive (CI's CPUs are shared, and a small buffer may sit in cache)."""
    out = json.loads(subprocess.run([built("window"), "--size-mib", "8", "--pairs", "256", "--max-nops", "64", "--step", "16",
                                     "--reps", "2"], capture_output=True, text=True, check=True).stdout)
    assert out["kernel"] == "window" and out["nops"] == [0, 16, 32, 48, 64] and out["reps"] == 2
    assert [len(s) for s in out["ns_per_pair"]] == [len(s) for s in out["cpu_ns_per_pair"]] == [5, 5]
    assert all(x > 0 for s in out["cpu_ns_per_pair"] for x in s)
    bad = subprocess.run([built("window"), "--step", "0"], capture_output=True, text=True)
    assert bad.returncode == 2 and bad.stderr.startswith("window: --step must be a whole number in 1..8192, got '0'")
