"""Tiered memory from the CLI and the study layer (docs/tiering.md): the tiering study expands to
every configuration on both tiered presets, weighted interleave's auto weights and user weights
from the CLI, and the report's pages-per-tier lines."""

from __future__ import annotations

import json
from pathlib import Path

from numalab.report.figures import _page_lines
from numalab.study import expand
from numalab.study.load import load_study

STUDY = Path(__file__).parent.parent.parent / "studies" / "tiering.toml"
LABELS = {"default", "interleave", "weighted-interleave", "preferred-fast+demotion", "tiering"}


def test_tiering_study_runs_every_configuration_on_both_tiered_presets():
    runs = expand(load_study(STUDY)).runs
    assert len(runs) == 20
    cases = {r.case for r in runs}
    assert len(cases) == 4 and all(c.startswith(("spr8480-2s-cxl", "xeonmax9480-2s-flat")) for c in cases)
    for case in cases:
        assert {r.label for r in runs if r.case == case} == LABELS
    tiering = [r.config["balancing"] for r in runs if r.label == "tiering"]
    assert all(b.get("memory_tiering") and b.get("demotion_enabled") and not b["enabled"] for b in tiering)
    # preferred-fast is the DRAM node on the CXL machine and the HBM node on the Xeon Max
    fast = {r.config["machine"]: r.config["placement"] for r in runs if r.label == "preferred-fast+demotion"}
    assert fast["spr8480-2s-cxl"].startswith("preferred-many=0") and fast["xeonmax9480-2s-flat"].startswith("preferred-many=2")


def _pages(cli, *args):
    code, out, err = cli("sim", "--machine", "spr8480-2s-cxl", "--workload", "stream", "--n", "20000000", "--threads", "4",
                         "-N", "0", "--sample-rate", "0.1", "--json", *args)
    assert code == 0, err
    doc = json.loads(out)
    return doc, doc["pages"]["per_node"]


def test_weighted_interleave_auto_weights_and_user_weights_from_the_cli(cli):
    # 6.16 auto weights from bandwidth (230.4, 230.4, 52, 52 GB/s -> 13:13:2:2): nodes 0 and 2 at 13:2.
    doc, pages = _pages(cli, "-w", "0,2", "--weighted-interleave-auto")
    assert abs(pages[0] / (pages[0] + pages[2]) - 13 / 15) < 0.01, pages
    assert doc["placement"]["balancing"]["weighted_interleave_auto"] is True
    # without auto: weight 1 each (the 6.13 default)
    _, pages = _pages(cli, "-w", "0,2")
    assert abs(pages[0] / (pages[0] + pages[2]) - 0.5) < 0.01, pages
    # user weights win over auto
    _, pages = _pages(cli, "-w", "0,2", "--weights", "0:1,2:3", "--weighted-interleave-auto")
    assert abs(pages[0] / (pages[0] + pages[2]) - 0.25) < 0.01, pages


def test_results_name_the_tiers_and_the_report_plots_pages_per_tier(cli):
    doc, _ = _pages(cli)
    assert doc["memory_tiers"] == [0, 0, 1, 1]
    assert _page_lines(doc, [0, 1, 2, 3]) == {"tier 0 (node0,1)": [0, 1], "tier 1 (node2,3)": [2, 3]}
    assert _page_lines({}, [0, 1]) == {"node0": [0], "node1": [1]}
