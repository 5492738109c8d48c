"""The counter registry (``numalab_model::counters`` via ``_core.counters()``): every counter
name a table, a report or a store column shows comes from it."""

import json

from numalab import _core, counters
from numalab.cli.summary import VMSTAT_KEYS
from numalab.report.tables import is_tiering_counter
from numalab.results.derived import columns
from numalab.vm import check

SMALL = ("--machine", "vm-4", "--workload", "stream", "--n", "200000", "--threads", "4")
BALANCING = ("--balancing", "on", "--scan-delay-ms", "100", "--scan-period-min-ms", "100")


def test_the_registry_describes_every_counter():
    reg = _core.counters()
    assert {c["kind"] for c in reg} == {"numastat", "vmstat", "sched"}
    for c in reg:
        assert set(c) == {"name", "kind", "file", "topic", "unit", "gauge", "simulated", "meaning", "source"}
        assert c["meaning"] and ": " in c["source"], c
    assert len({(c["kind"], c["name"]) for c in reg}) == len(reg)
    hit = next(c for c in reg if c["name"] == "numa_hit" and c["kind"] == "numastat")
    assert hit["file"] == "/sys/devices/system/node/nodeN/numastat"
    assert {"thp_fault_alloc", "thp_collapse_alloc_failed", "pgdemote_direct", "numa_hint_faults_local"} <= set(counters.names("vmstat"))


def rows(text: str, header: str) -> list[str]:
    """The first word of each row of the table whose title or header line starts with ``header``."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(header))
    out = []
    for line in lines[start + 1:]:
        if not line.strip():
            break
        if not line.startswith(("─", " ")):
            out.append(line.split()[0])
    return out


def test_sim_summary_tables_name_registry_counters(cli):
    code, out, err = cli("sim", *SMALL, *BALANCING)
    assert code == 0, err
    assert rows(out, "numastat (allocations)") == list(counters.names("numastat"))
    vm = rows(out, "/proc/vmstat")
    assert vm == list(VMSTAT_KEYS) and set(vm) <= set(counters.names("vmstat"))


def test_store_columns_and_report_counters_come_from_the_registry(cli):
    code, out, err = cli("sim", *SMALL, *BALANCING, "--json")
    assert code == 0, err
    doc = json.loads(out)
    doc["vmstat"]["pgdemote_proactive"] = 3  # a kernel counter numalab does not report
    cols = [k.removeprefix("vmstat_") for k in columns(doc) if k.startswith("vmstat_")]
    assert cols and set(cols) <= set(counters.names("vmstat")) and "pgdemote_proactive" not in cols
    assert set(doc["vmstat"]) - {"pgdemote_proactive"} <= set(counters.names("vmstat", simulated=True))


def test_vm_check_and_report_lists_are_the_registrys():
    assert check.NUMASTAT == counters.names("numastat")
    assert set(check.COUNTERS + check.TIER_COUNTERS) <= set(counters.names("numastat") + counters.names("vmstat"))
    assert check.TIER_COUNTERS == ("pgpromote_success", "pgpromote_candidate", "pgdemote_kswapd", "pgdemote_direct")
    assert is_tiering_counter("pgdemote_khugepaged") and not is_tiering_counter("pgdemote_proactive")
    assert not is_tiering_counter("numa_pages_migrated")


def test_host_documents_read_the_registry():
    from numalab.results.agent import BALANCING_COUNTERS

    assert BALANCING_COUNTERS == VMSTAT_KEYS == counters.names("vmstat", "balancing")
