"""`--policy latency-balanced` in the simulator (docs/allocation.md §12): CLI, config strings,
the result document's indicator over time and decisions, the report's series, bad values."""

import json

from numalab.report.figures import latbal_series
from numalab.spec import RunSpec

SMALL = ("--machine", "e5620-2s", "--workload", "stream", "--n", "400000", "--threads", "2")


def test_sim_reports_the_indicator_per_node_and_the_decisions(cli):
    code, out, err = cli("sim", *SMALL, "--policy", "latency-balanced", "--latbal-window-ms", "2", "--json")
    assert code == 0, err
    doc = json.loads(out)
    lb = doc["latency_balanced"]
    assert (lb["threshold_ns"], lb["window_ms"], lb["sample_us"]) == (10.0, 2.0, 500.0)
    assert lb["series"] and all(len(values) == 2 for _, values in lb["series"])
    # One process: one decision, at its first allocation, on an idle machine: its own node.
    (d,) = lb["decisions"]
    assert d["why"] == "first" and d["balanced"] and d["node"] == d["cpu_node"]
    series = latbal_series(doc)
    assert sorted(series) == ["node0", "node1"] and len(series["node0"]) == len(lb["series"])
    # The default policy's run has no such section.
    code, out, _ = cli("sim", *SMALL, "--json")
    assert code == 0 and "latency_balanced" not in json.loads(out)


def test_config_strings_carry_the_policy_and_its_settings():
    s = RunSpec.create("e5620-2s", "stream").with_config("latency-balanced:latbal-threshold-ns=5:latbal-sample-us=250")
    assert s.placement.policy == "latency-balanced" and s.latbal == (5.0, 10.0, 250.0)
    assert s.label() == "latency-balanced"
    c = s.canonical()
    assert c["latbal"] == [5.0, 10.0, 250.0]
    assert RunSpec.from_canonical(c) == s
    # Other policies keep their canonical form (and store hash) unchanged.
    assert "latbal" not in RunSpec.create("e5620-2s", "stream").with_config("interleave=all").canonical()


def test_bad_values_are_one_usage_line(cli):
    for args, message in [
        (("--policy", "fast"), "--policy: 'fast' is not one of latency-balanced"),
        (("--policy", "latency-balanced", "--latbal-window-ms", "0"), "--latbal-window-ms must be > 0, got 0"),
        (("--policy", "latency-balanced", "--latbal-threshold-ns", "x"), "--latbal-threshold-ns: 'x' is not a number"),
        (("--policy", "latency-balanced", "--membind", "0"), "give at most one memory policy option"),
        (("--policy", "latency-balanced", "--latbal-sample-us", "20000", "--latbal-window-ms", "10"), "the window would hold no sample"),
    ]:
        code, out, err = cli("sim", *SMALL, *args)
        lines = err.strip().splitlines()
        assert code == 2 and len(lines) == 1 and lines[0].startswith("numalab: "), (args, err)
        assert message in lines[0], (args, lines[0])


def test_the_report_timeline_plots_the_indicator_per_node(cli, tmp_path):
    from numalab.report.figures import Drawer, timeline_figure

    code, out, err = cli("sim", *SMALL, "--policy", "latency-balanced", "--json")
    assert code == 0, err
    doc = json.loads(out)
    svg = timeline_figure(Drawer(tmp_path), "stream", "latency-balanced", doc).svg.read_text()
    assert "latency indicator per node (latency-balanced)" in svg and "lowest + threshold" in svg
    code, out, _ = cli("sim", *SMALL, "--json")
    plain = timeline_figure(Drawer(tmp_path / "b"), "stream", "default", json.loads(out)).svg.read_text()
    assert "latency indicator" not in plain


def test_the_summary_lists_each_decision(cli):
    code, out, err = cli("sim", *SMALL, "--policy", "latency-balanced")
    assert code == 0, err
    assert "latency-balanced (threshold 10 ns, window 10 ms, a sample every 500 us):" in out
    assert "process 0  first  node" in out and "balanced; indicator ns: none yet" in out
