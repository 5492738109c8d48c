"""Derived metrics of one result document as flat store columns (docs/studies.md §4).

``local_pct``/``remote_pct``/``max_concentration_pct`` come from ``metrics.access_metrics``;
``dram_bytes`` and ``dram_gbps`` measure memory intensity (the x axis of "intensity vs gain"
plots); every other scalar metric keeps its name, and every vmstat counter of the registry
(:mod:`numalab.counters`) the document has becomes ``vmstat_<kernel name>``; a document with the
data mapping analysis (``mapping``) adds its headline figures (``mapping_columns``).
"""

from __future__ import annotations

import re
from functools import cache
from typing import Any

from numalab import counters
from numalab.results.metrics import access_metrics

METRIC_COLUMNS = ("time_s", "reported_time_s", "local_pct", "remote_pct", "max_concentration_pct", "dram_bytes", "dram_gbps")
# Bytes per access-map unit; the simulator counts 64-byte DRAM transfers.
_UNIT_BYTES = {"dram_transfers_64b": 64}
_NAME = re.compile(r"^[a-z][a-z0-9_]*$")


def columns(doc: dict[str, Any]) -> dict[str, Any]:
    am = doc.get("access_map") or {}
    matrix = am.get("matrix") or []
    met = doc.get("metrics") or access_metrics(matrix, am.get("nodes") or list(range(len(matrix))))
    time_s = doc.get("time_s")
    # Only a modelled map counts DRAM transfers; a host map counts hinting faults.
    unit = _UNIT_BYTES.get(am.get("unit", "")) if am.get("basis", "model") == "model" else None
    dram = sum(sum(r) for r in matrix) * unit if matrix and unit else None
    out: dict[str, Any] = {
        "time_s": time_s,
        # The time the program reports (its own timer, or the whole run when it has none).
        "reported_time_s": doc.get("reported_time_s"),
        "local_pct": met.get("local_pct"),
        "remote_pct": met.get("remote_pct"),
        "max_concentration_pct": met.get("max_concentration_pct"),
        "dram_bytes": dram,
        "dram_gbps": dram / time_s / 1e9 if dram is not None and time_s else None,
    }
    # Metrics the runner adds (hint_fault_locality_pct, balancing_cost_pct, ...) become columns too.
    for name, value in met.items():
        if name not in out and _NAME.match(name) and _number(value):
            out[name] = value
    out.update(mapping_columns(doc.get("mapping")))
    vmstat = _vmstat_names()
    for name, value in (doc.get("vmstat") or {}).items():
        if name in vmstat and _number(value):
            out[f"vmstat_{name}"] = value
    return out


@cache
def _vmstat_names() -> frozenset[str]:
    """The registry's vmstat counters, looked up once: a study computes the columns of every run."""
    return frozenset(counters.names("vmstat"))


# Page sizes the data mapping analysis merges pages into (docs/mapping.md §2), by column suffix.
_MAPPING_SIZES = {4 << 10: "4k", 2 << 20: "2m", 1 << 30: "1g"}


def mapping_columns(m: dict[str, Any] | None) -> dict[str, float]:
    """The data mapping analysis' headline figures (docs/mapping.md), in % as the other
    ``_pct`` columns: application exclusivity per page size and numalize's Loc_App and B_Acc
    of first touch. None of them without the analysis, so other runs' rows are unchanged."""
    if not m:
        return {}
    out = {f"exclusivity_{_MAPPING_SIZES[s['page_bytes']]}_pct": 100.0 * s["exclusivity"]
           for s in m.get("by_page_size") or [] if s.get("page_bytes") in _MAPPING_SIZES}
    ft = next((s for s in m.get("mappings") or [] if s.get("mapping") == "first-touch"), None)
    if ft:
        out["first_touch_loc_app_pct"] = ft["loc_app"]
        out["first_touch_b_acc_pct"] = ft["b_acc"]
    return out


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)
