"""Estimated numbers and their ranges (docs/machines.md §3.6): every preset writes out its
loaded-latency curve with a source, every [estimates] range contains the number it covers, and
varying a number changes exactly what its path names."""

from __future__ import annotations

import json
import re
import tomllib

import pytest

from numalab.exceptions import UsageError
from numalab.machine.presets import PRESET_DIR, preset_names
from numalab.study import uncertainty as u
from numalab.workload import descriptor

_CITED = re.compile(r"\b(source|estimate)\b", re.IGNORECASE)


def _curve_comment(text: str) -> list[str]:
    """The comment block right above ``loaded_curve = [``."""
    lines = text.splitlines()
    i = next(k for k, line in enumerate(lines) if line.startswith("loaded_curve"))
    block = []
    while i > 0 and lines[i - 1].lstrip().startswith("#"):
        i -= 1
        block.append(lines[i])
    return block


@pytest.mark.parametrize("name", preset_names())
def test_every_preset_states_its_curve_and_where_it_comes_from(name):
    text = (PRESET_DIR / f"{name}.toml").read_text(encoding="utf-8")
    data = tomllib.loads(text)
    curve = data["latency"].get("loaded_curve")
    assert curve, f"{name}: no latency.loaded_curve (the engine's default must not be borrowed silently)"
    assert curve[0] == [0.0, 1.0] and all(f >= 1.0 for _, f in curve)
    assert [u_ for u_, _ in curve] == sorted(u_ for u_, _ in curve)
    block = " ".join(_curve_comment(text))
    assert _CITED.search(block), f"{name}: the curve's comment block cites no source"


@pytest.mark.parametrize("name", preset_names())
def test_preset_estimate_ranges_contain_the_preset_value(name):
    params = u.machine_estimates(name)  # raises if a range excludes its number or names nothing
    data = tomllib.loads((PRESET_DIR / f"{name}.toml").read_text(encoding="utf-8"))
    for p in params:
        assert p.low <= (1.0 if p.factor else p.value) <= p.high
        assert p.source
    if not name.startswith("vm-"):  # the QEMU guests' timing numbers are placeholders
        assert any(p.path == u.CURVE for p in params), f"{name}: the borrowed curve has no range"
    assert set(data.get("estimates", {})) == {p.path for p in params}


@pytest.mark.parametrize("name", descriptor.library_names())
def test_workload_estimate_ranges_contain_one_and_name_numbers(name):
    params = u.workload_estimates(name)
    for p in params:
        assert p.factor and p.low <= 1.0 <= p.high
    if params:
        u.check_workload_paths(params, descriptor.resolve(name, {}))


def test_estimate_outside_its_range_is_refused():
    data = {"latency": {"local_ns": 95.0}, "estimates": {"latency.local_ns": {"low": 80.0, "high": 90.0, "source": "x"}}}
    with pytest.raises(UsageError, match=r"m.toml: \[estimates\] 'latency.local_ns': the value 95.0 is outside its range \[80.0, 90.0\]"):
        u.machine_parameters("m", data, "m.toml")


@pytest.mark.parametrize(
    "entry, message",
    [
        ({"low": 1.0, "high": 2.0}, "source must say"),
        ({"low": 2.0, "high": 1.0, "source": "s"}, "needs 0 < low <= high"),
        ({"low": 1.0, "high": 2.0, "source": "s", "step": 1}, "unknown key 'step'"),
        ({"low": "a", "high": 2.0, "source": "s"}, "low must be a finite number"),
    ],
)
def test_malformed_estimate_entries_are_one_line_errors(entry, message):
    data = {"core": {"mlp": 1.5}, "estimates": {"core.mlp": entry}}
    with pytest.raises(UsageError, match=re.escape(message)):
        u.machine_parameters("m", data, "m.toml")


def test_a_matrix_cell_varies_every_pair_at_that_distance():
    data = {"latency": {"matrix_ns": [[100.0, 150.0, 200.0], [150.0, 100.0, 150.0], [200.0, 150.0, 100.0]]}}
    p = u.Parameter("machine", "m", "latency.matrix_ns[0][1]", 140.0, 170.0, "s", 150.0)
    u.set_machine_value(data, p, 170.0)
    assert data["latency"]["matrix_ns"] == [[100.0, 170.0, 200.0], [170.0, 100.0, 170.0], [200.0, 170.0, 100.0]]


def test_a_link_varies_every_link_of_that_bandwidth():
    data = {"links": [{"nodes": [0, 1], "gbps": 12.8}, {"nodes": [1, 2], "gbps": 6.4}, {"nodes": [0, 2], "gbps": 12.8}]}
    p = u.Parameter("machine", "m", "links[0].gbps", 6.4, 12.8, "s", 12.8)
    u.set_machine_value(data, p, 6.4)
    assert [link["gbps"] for link in data["links"]] == [6.4, 6.4, 6.4]


def test_curve_factor_scales_the_rise_above_idle():
    data = {"latency": {"loaded_curve": [[0.0, 1.0], [0.5, 1.2], [1.0, 1.6]]}}
    p = u.Parameter("machine", "m", u.CURVE, 0.5, 2.0, "s")
    u.set_machine_value(data, p, 2.0)
    assert [f for _, f in data["latency"]["loaded_curve"]] == pytest.approx([1.0, 1.4, 2.2])


def test_varied_preset_machine_carries_the_new_number():
    p = next(p for p in u.machine_estimates("e5-2620v4-2s") if p.path == "bandwidth.node_gbps")
    m = json.loads(u.varied_machine("e5-2620v4-2s", [(p, p.low)]).to_json())
    assert [n["bandwidth_gbps"] for n in m["nodes"]] == [p.low, p.low]


def test_workload_factor_scales_the_named_phase_only():
    params = u.workload_parameters("dgemv", {"phases.mult.cycles": {"low": 0.5, "high": 2.0, "source": "s"}}, "dgemv.toml")
    w = descriptor.resolve("dgemv", {"n": 1000})
    before = {ph["name"]: ph["cycles"] for ph in w["phases"]}
    u.workload_adjuster([(params[0], 2.0)])(w)
    after = {ph["name"]: ph["cycles"] for ph in w["phases"]}
    assert after == {"init": before["init"], "mult": 2.0 * before["mult"]}


@pytest.mark.parametrize("threads", [1, 2, 4, 64])
def test_a_factor_keeps_cgs_shared_reads_a_fraction(threads):
    """CG's shared_rd = min(1, 2 / threads); the upper end of its range (4x) must not make a thread
    read the shared arrays from DRAM more than once per sweep."""
    params = [p for p in u.workload_estimates("cg") if p.path == "phases.sparse_fill.access.acol.rd"]
    w = descriptor.resolve("cg", {"class": "S", "threads": threads})
    u.workload_adjuster([(params[0], params[0].high)])(w)
    fill = next(ph for ph in w["phases"] if ph["name"] == "sparse_fill")
    acol = next(a for a in fill["accesses"] if w["regions"][a["region"]]["name"] == "acol")
    assert acol["rd"] == min(1.0, params[0].high * 2.0 / threads)


def test_workload_path_naming_nothing_is_refused():
    params = u.workload_parameters("dgemv", {"phases.nosuch.cycles": {"low": 0.5, "high": 2.0, "source": "s"}}, "dgemv.toml")
    with pytest.raises(UsageError, match=r"names no number of the workload \(phases: init, mult; regions: A\)"):
        u.check_workload_paths(params, descriptor.resolve("dgemv", {"n": 1000}))
