"""``numalab sensitivity`` and the study option (docs/studies.md §8): a conclusion whose two sides
are within the uncertainty of an estimate flips, a clear one holds; errors are one line with exit
code 2; the report marks the conclusions that flip.

The constructed case: a 2-node machine whose remote latency is an estimate. Two placements keep
every thread on node 0 and put the memory on node 1 (A) or node 0 (B). B wins as written (150 ns
remote against 100 local); with a range down to 50 ns the remote node may be the faster one, so
the conclusion must flip; with a range of 120-200 ns it must hold.
"""

from __future__ import annotations

import json

import pytest

from numalab.study import sensitivity as sens
from numalab.study.uncertainty import Parameter

MACHINE = """
name = "{name}"
description = "two nodes, remote latency estimated"
distances = [[10, 20], [20, 10]]
links = [{{ nodes = [0, 1], gbps = 32.0 }}]
[topology]
packages = 2
nodes_per_package = 1
cores_per_node = 2
[memory]
node_gib = 1.0
[latency]
local_ns = 100.0
matrix_ns = [[100.0, 150.0], [150.0, 100.0]]
loaded_curve = [[0.0, 1.0], [1.0, 1.5]]
[bandwidth]
node_gbps = 20.0
[core]
frequency_ghz = 2.0
mlp = 10.0
[estimates]
"latency.matrix_ns[0][1]" = {{ low = {low}, high = 200.0, source = "test: remote latency unknown" }}
"""

REMOTE, LOCAL = "membind=1:cpunodebind=0", "membind=0:cpunodebind=0"
WORKLOAD = ["--n", "1500", "--reps", "2", "--threads", "2"]


@pytest.fixture
def machines(tmp_path):
    close = tmp_path / "close.toml"
    close.write_text(MACHINE.format(name="close", low=50.0))
    clear = tmp_path / "clear.toml"
    clear.write_text(MACHINE.format(name="clear", low=120.0))
    return str(close), str(clear)


def _run(cli, machine, *extra):
    code, out, err = cli("sensitivity", "--machine", machine, "--workload", "dgemv", "--configs", f"{REMOTE},{LOCAL}",
                         "--param", "latency.matrix_ns[0][1]", "--json", *extra, *WORKLOAD)
    assert code == 0, err
    return json.loads(out)


def test_a_conclusion_within_the_uncertainty_flips(cli, machines):
    doc = _run(cli, machines[0])
    (c,) = doc["comparisons"]
    assert c["config"] == LOCAL and c["baseline"] == REMOTE
    assert c["speedup"] > 1 and c["winner"] == LOCAL  # local memory wins as written
    assert c["flips"] and c["flipped_by"] == [f"{machines[0]}:latency.matrix_ns[0][1]=low"]
    assert c["speedup_low"] < 1 < c["speedup_high"]
    assert doc["variants"] == ["nominal", f"{machines[0]}:latency.matrix_ns[0][1]=low", f"{machines[0]}:latency.matrix_ns[0][1]=high"]


def test_a_clear_conclusion_holds(cli, machines):
    doc = _run(cli, machines[1])
    (c,) = doc["comparisons"]
    assert not c["flips"] and c["flipped_by"] == []
    assert 1 < c["speedup_low"] <= c["speedup"] <= c["speedup_high"]


def test_text_output_says_which_estimate_flips_it(cli, machines):
    code, out, err = cli("sensitivity", "--machine", machines[0], "--workload", "dgemv", "--configs", f"{REMOTE},{LOCAL}", *WORKLOAD)
    assert code == 0, err
    assert "FLIPS: " in out and "latency.matrix_ns[0][1]=low" in out
    assert "1 of 1 conclusions flip within the stated ranges" in out


def test_list_shows_the_estimates_with_their_ranges(cli):
    code, out, err = cli("sensitivity", "--machine", "e5-2620v4-2s", "--workload", "dgemv", "--list")
    assert code == 0, err
    assert "e5-2620v4-2s:bandwidth.node_gbps" in out and "47.8 - 58.1" in out
    assert "dgemv:phases.*.cycles" in out


@pytest.mark.parametrize(
    "args, message",
    [
        (["--param", "nosuch.path"], "numalab: --param: 'nosuch.path' is not an estimated number of these runs (known: "),
        (["--configs", "default"], "numalab: --configs needs at least two configs"),
        (["--configs", "default,default"], "numalab: --configs names 'default' twice"),
        (["--configs", "default,membind=7"], "numalab: "),
        (["--machine", "nosuch"], "numalab: unknown machine preset 'nosuch'"),
    ],
)
def test_bad_input_is_one_line_exit_2(cli, args, message):
    base = {"--machine": "e5-2620v4-2s", "--configs": "default,interleave=all"}
    i = 0
    while i < len(args):
        if args[i] in base:
            base[args[i]] = args[i + 1]
            args = args[:i] + args[i + 2 :]
        else:
            i += 2
    argv = ["sensitivity", "--workload", "dgemv", *(x for kv in base.items() for x in kv), *args, "--n", "1000"]
    code, out, err = cli(*argv)
    assert code == 2
    assert err.startswith(message) and err.count("\n") == 1, err
    assert "Traceback" not in err


def test_unknown_param_lists_the_estimates_of_these_runs(cli):
    code, _, err = cli("sensitivity", "--machine", "vm-4", "--workload", "dgemv", "--param", "x", "--configs", "default,interleave=all", "--n", "500")
    assert code == 2 and err == "numalab: --param: 'x' is not an estimated number of these runs (known: dgemv:phases.*.cycles)\n"


def test_nothing_estimated_is_a_usage_error(cli, tmp_path):
    from numalab.workload.descriptor import LIBRARY

    text = (LIBRARY / "dgemv.toml").read_text()
    mine = tmp_path / "mine.toml"
    mine.write_text(text[: text.index("[estimates]")])
    code, _, err = cli("sensitivity", "--machine", "vm-4", "--workload", str(mine), "--configs", "default,interleave=all", "--n", "500")
    assert code == 2 and err == f"numalab: no estimated numbers to vary: neither vm-4 nor {mine} has an [estimates] table\n"


# ---------------------------------------------------------------- the analysis, without the engine


def _fake(times):
    """A runner returning ``times[(variant, placement label)]``, else the nominal time."""
    def run(spec, variant):
        label = spec.placement.label()
        return times.get((variant.name, label), times[("nominal", label)])
    return run


def test_analysis_marks_exactly_the_variants_that_change_the_winner():
    from numalab.spec import RunSpec

    base = RunSpec.create("e5-2620v4-2s", "dgemv")
    a, b = base.with_config("default"), base.with_config("interleave=all")
    p = Parameter("machine", "e5-2620v4-2s", "core.mlp", 8.0, 12.0, "s", 10.0)
    q = Parameter("machine", "e5-2620v4-2s", "latency.local_ns", 70.0, 80.0, "s", 75.8)
    times = {("nominal", "default"): 2.0, ("nominal", "interleave=all"): 1.0,
             ("e5-2620v4-2s:core.mlp=low", "interleave=all"): 2.5,   # the winner changes
             ("all-low", "interleave=all"): 2.2}
    r = sens.analyse([sens.Comparison("dgemv", "interleave=all", "default", a, b)], [p, q], runner=_fake(times))
    (o,) = r.outcomes
    assert o.nominal == 2.0 and o.winner() == "interleave=all"
    assert o.flips == ["e5-2620v4-2s:core.mlp=low", "all-low"]
    assert o.range == (0.8, 2.0)
    assert [v.name for v in r.variants] == ["nominal", "e5-2620v4-2s:core.mlp=low", "e5-2620v4-2s:core.mlp=high",
                                            "e5-2620v4-2s:latency.local_ns=low", "e5-2620v4-2s:latency.local_ns=high",
                                            "all-low", "all-high"]


def test_variants_touch_only_runs_of_their_machine_or_workload():
    from numalab.spec import RunSpec

    a = RunSpec.create("e5-2620v4-2s", "dgemv")
    b = RunSpec.create("spr8480-2s", "dgemv")
    p = Parameter("machine", "spr8480-2s", "core.mlp", 8.0, 20.0, "s", 16.0)
    todo = sens.plan([sens.Comparison("c", "x", "y", a, b)], sens.variants([p]))
    assert [(v.name, s.machine) for v, s in todo] == [("nominal", "e5-2620v4-2s"), ("nominal", "spr8480-2s"),
                                                      ("spr8480-2s:core.mlp=low", "spr8480-2s"),
                                                      ("spr8480-2s:core.mlp=high", "spr8480-2s")]


# ---------------------------------------------------------------- studies and the report

STUDY = """
name = "sens"
machine = "{machine}"
workload = "dgemv"
params = {{ n = 1500, reps = 2, threads = 2 }}
sensitivity = true
[baseline]
placement = "{remote}"
[sweep]
placement = ["{remote}", "{local}"]
"""


def test_study_option_and_the_report_mark_flipping_conclusions(cli, machines, tmp_path):
    study = tmp_path / "sens.toml"
    study.write_text(STUDY.format(machine=machines[0], remote=REMOTE, local=LOCAL))
    results = tmp_path / "results"
    code, out, err = cli("study", str(study), "--results", str(results), "--workers", "1")
    assert code == 0, err
    assert "sensitivity: 1 of 1 conclusions flip" in out
    doc = json.loads((results / "sens.sensitivity.json").read_text())
    assert doc["comparisons"][0]["flips"]
    md = tmp_path / "r.md"
    code, _, err = cli("report", str(study), "--results", str(results), "-o", str(md))
    assert code == 0, err
    text = md.read_text()
    assert "## Sensitivity" in text and "† the winner against the baseline flips" in text
    speedup_rows = [line for line in text.splitlines() if line.startswith("| dgemv")]
    assert any("†" in line for line in speedup_rows)
    assert "flips: " in text
    html = tmp_path / "r.html"
    code, _, err = cli("report", str(study), "--results", str(results), "-o", str(html))
    assert code == 0, err
    page = html.read_text()
    assert 'id="sensitivity"' in page and "flips within the estimates" in page


def test_report_without_sensitivity_marks_nothing(cli, machines, tmp_path):
    study = tmp_path / "plain.toml"
    study.write_text(STUDY.format(machine=machines[1], remote=REMOTE, local=LOCAL).replace("sensitivity = true\n", "").replace('"sens"', '"plain"'))
    results = tmp_path / "results"
    assert cli("study", str(study), "--results", str(results), "--workers", "1")[0] == 0
    md = tmp_path / "r.md"
    assert cli("report", str(study), "--results", str(results), "-o", str(md))[0] == 0
    text = md.read_text()
    assert "†" not in text and "## Sensitivity" not in text


def test_runs_equal_up_to_rounding_are_identical_not_an_interval():
    from numalab.report.stats import estimate
    from numalab.report.tables import format_estimate

    e = estimate([2.83, 2.83 * (1 + 1e-15), 2.83])
    assert e.identical and e.half_width is None
    assert format_estimate(e) == "2.83 (3 identical runs)"
    assert not estimate([2.83, 2.84]).identical
