"""THP in a run's result and in ``numalab sim --explain-thp`` (docs/allocation.md §3.2): huge
pages shared by two threads' blocks, the v6.13 fallback to 4 KiB pages when the faulting node
is full (v3.13 and MADV_HUGEPAGE regions take a remote huge page), khugepaged's counters."""

from __future__ import annotations

import json

import pytest

from numalab.cli.thp_explain import shared_pages
from numalab.runner import sim as runner
from numalab.spec.run import RunSpec

# DGEMV's A (n = 12000: 1.15 GB) written by the master thread on vm-4 (512 MiB per node).
FULL = {"n": 12000, "reps": 1, "init": "serial", "threads": 4}


def full_node(kernel: str) -> dict:
    spec = RunSpec.create("vm-4", "dgemv", params=FULL, kernel=kernel, thp="always", noise="off")
    return runner.run(spec).doc


def test_v6_13_falls_back_to_base_pages_v3_13_takes_remote_huge_pages() -> None:
    new, old = full_node("6.13"), full_node("3.13")
    a_new, a_old = new["thp"]["regions"][0], old["thp"]["regions"][0]
    assert new["vmstat"]["thp_fault_fallback"] > 0 and "node0" not in a_new["fault_fallback"]
    assert sum(a_new["fault_alloc"].values()) == a_new["fault_alloc"]["node0"], "huge pages only on the faulting node"
    assert old["vmstat"]["thp_fault_fallback"] == 0
    assert sum(v for k, v in a_old["fault_alloc"].items() if k != "node0") > 0, "3.13: remote huge pages"
    # The same memory either way.
    assert sum(new["pages"]["per_node"]) == sum(old["pages"]["per_node"])
    # Short runs: khugepaged's first wake-up is 10 s after the first THP fault.
    assert new["vmstat"]["thp_collapse_alloc"] == 0


def test_huge_pages_shared_by_two_blocks() -> None:
    # 16 threads split 3000 rows of 24 kB: 187 or 188 rows = 4.5 MB blocks, none 2 MiB aligned.
    region = {"bytes": 8 * 3000 * 3000, "planes": 3000}
    assert shared_pages(region, {"rows": 1}, 16) == 15
    # Blocks of exactly 2 MiB share no page.
    assert shared_pages({"bytes": 16 << 21, "planes": 16}, {"rows": 1}, 16) == 0


def test_explain_thp_says_where_thp_changed_placement(cli) -> None:
    code, out, err = cli("sim", "--machine", "vm-4", "--workload", "dgemv", "--n", "12000", "--reps", "1",
                         "--init", "serial", "--threads", "4", "--thp", "always", "--explain-thp")
    assert code == 0, err
    assert "transparent huge pages: enabled = always" in out
    assert "fell back to 4 KiB pages on other nodes" in out
    assert "khugepaged collapsed none: it scans 8 ranges of 2 MiB per 10 s" in out
    code, out, err = cli("sim", "--machine", "e5-2620v4-2s", "--workload", "dgemv", "--n", "3000", "--reps", "1",
                         "--kernel", "3.13", "--explain-thp")
    assert code == 0, err
    assert "(the 3.13 profile's default; --thp to change)" in out
    assert "15 huge pages hold the first writes of more than one thread's block" in out


@pytest.mark.parametrize("thp", ["never", "madvise"])
def test_without_huge_pages_the_explanation_says_why(cli, thp: str) -> None:
    code, out, _ = cli("sim", "--machine", "e5-2620v4-2s", "--workload", "dgemv", "--n", "2000", "--reps", "1",
                       "--thp", thp, "--explain-thp")
    assert code == 0
    assert {"never": "A (THP off)", "madvise": "A (not marked MADV_HUGEPAGE)"}[thp] in out


def test_the_counters_are_in_the_result_document(cli) -> None:
    code, out, _ = cli("sim", "--machine", "e5-2620v4-2s", "--workload", "dgemv", "--n", "2000", "--reps", "1", "--json")
    vm = json.loads(out)["vmstat"]
    assert {"thp_fault_alloc", "thp_fault_fallback", "thp_collapse_alloc", "thp_collapse_alloc_failed"} <= set(vm)
