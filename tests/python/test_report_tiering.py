"""Reports of runs on machines with memory tiers (docs/tiering.md): pages per node name each node's
tier, the tiering counters (vmstat pgdemote_*, pgpromote_*) get a table per case with only the
counters that moved, and the timelines plot them apart from the balancing counters."""

from __future__ import annotations

import pandas as pd
import pytest

from numalab.report import write_report
from numalab.report.data import ReportData
from numalab.report.figures import Drawer, timeline_figure
from numalab.report.tables import pages_grid, tiering_counters

from inline_backend import run_stored

STUDY = """
name = "tiers"
machine = "spr8480-2s-cxl"
workload = "stream"
params = { n = 20000000, threads = 4 }
sample_rate = 0.1
seeds = [1]
[baseline]
placement = "cpunodebind=0"
[sweep]
placement = ["cpunodebind=0", "interleave=0,2:cpunodebind=0"]
balancing = [false, "2:demotion-enabled"]
"""


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    from numalab.study.executors import LocalBackend

    root = tmp_path_factory.mktemp("tiers")
    assert run_stored(STUDY, root / "tiers.toml", root / "results", lambda: LocalBackend(1)).ok == 4
    return write_report(root / "tiers.toml", root / "tiers.md", results=root / "results").read_text()


def test_pages_name_each_nodes_tier(report):
    header = next(line for line in report.splitlines() if line.startswith("| configuration | node0"))
    assert header == "| configuration | node0 (tier 0) | node1 (tier 0) | node2 (tier 1) | node3 (tier 1) |"


def test_timelines_are_headed_as_tiers_and_balancing(report):
    assert "## Memory tiers and balancing over time" in report and "## Balancing over time" not in report


def _doc(vmstat, timeline_vmstat=None):
    points = [{"t_s": t, "pages_per_node": [100 + t, 0, 50, 0], **({"vmstat": {k: v * t for k, v in timeline_vmstat.items()}}
                                                                   if timeline_vmstat else {})} for t in (1, 2, 3)]
    return {"memory_tiers": [0, 0, 1, 1], "vmstat": vmstat, "pages": {"page_size_bytes": 4096, "per_node": [103, 0, 50, 0], "nodes": [0, 1, 2, 3]},
            "timeline": points}


def _data(docs):
    frame = pd.DataFrame([{"case": "stream", "label": label, "status": "ok", "seed": 1, "hash": label} for label in docs])
    return ReportData("s", None, frame, docs=docs)


def test_tiering_counters_table_keeps_the_counters_that_moved():
    data = _data({"first touch": _doc({"pgdemote_kswapd": 0, "pgpromote_success": 0, "numa_pte_updates": 5}),
                  "tiering": _doc({"pgdemote_kswapd": 1200, "pgdemote_direct": 0, "pgpromote_success": 300, "numa_pte_updates": 9})})
    g = tiering_counters(data, "stream")
    assert g.rows == ["first touch", "tiering"]
    assert g.cols == ["pgdemote_kswapd", "pgpromote_success"]  # pgdemote_direct never moved; numa_* is balancing's
    assert g.cells == [[0, 0], [1200, 300]]
    assert pages_grid(data, "stream").cols == ["node0 (tier 0)", "node1 (tier 0)", "node2 (tier 1)", "node3 (tier 1)"]
    assert tiering_counters(_data({"a": {**_doc({"numa_pte_updates": 3}), "memory_tiers": None}}), "stream") is None


def test_timeline_plots_tiering_counters_in_their_own_panel(tmp_path):
    doc = _doc({}, {"pgdemote_kswapd": 1000, "pgpromote_success": 10, "numa_pte_updates": 10 ** 8})
    fig = timeline_figure(Drawer(tmp_path), "stream", "tiering", doc)
    svg = fig.svg.read_text()
    assert "tiering counters (vmstat)" in svg and "balancing counters (vmstat)" in svg
    assert "pages per memory tier (GiB)" in svg
    only_balancing = timeline_figure(Drawer(tmp_path / "b"), "stream", "x", {**_doc({}, {"numa_pte_updates": 5}), "memory_tiers": None})
    svg = only_balancing.svg.read_text()
    assert "tiering counters" not in svg and "balancing counters (vmstat)" in svg and "pages per node" in svg
