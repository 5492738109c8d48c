"""``numalab sim --mapping-metrics``: the run's data mapping analysis as text (docs/mapping.md):
exclusivity at 4 KiB, 2 MiB and 1 GiB, its histogram, the regions, and numalize's mapping scores
(with the simulated time of each mapping when the run measured them)."""

from __future__ import annotations

from typing import Any

from numalab.console.tables import render, table


def _pct(x: float) -> str:
    return f"{100.0 * x:.1f}%"


def mapping_text(m: dict[str, Any]) -> str:
    nodes = m["nodes"]
    sizes = ", ".join(f"{_size(s['page_bytes'])} {_pct(s['exclusivity'])}" for s in m["by_page_size"])
    head = (
        f"Data mapping ({m['pages']} pages of 4 KiB accessed): application exclusivity {_pct(m['exclusivity'])}"
        f" (merged pages: {sizes})"
    )
    hist = table(
        ["exclusivity", "pages", "accesses"],
        [(f"{b['exclusivity_pct']}%", b["pages"], _pct(b["access_share"])) for b in m["histogram"] if b["pages"]],
        title="Page exclusivity (rounded to 10 %, accesses weighted)",
    )
    regions = table(
        ["pid", "region", "pages", "exclusivity", "accesses by node", "first touch by node", "local under first touch"],
        [
            (r["pid"], r["region"], r["pages"], _pct(r["exclusivity"]), _shares(nodes, r["node_share"]),
             _shares(nodes, r["first_touch_share"]), _pct(r["first_touch_local"]))
            for r in m["regions"] if r["pages"]
        ],
        title="Regions",
    )
    timed = any("time_s" in s for s in m["mappings"])
    rows = []
    for s in m["mappings"]:
        row = [s["mapping"], f"{s['loc_pages']:.1f}", f"{s['loc_app']:.1f}", f"{s['b_pages']:.1f}", f"{s['b_acc']:.1f}"]
        if timed:
            row.append(f"{s['time_s']:.4g}" if s.get("time_s") is not None else "-")
        rows.append(row)
    headers = ["mapping", "Loc_Pages %", "Loc_App %", "B_Pages %", "B_Acc %"] + (["time s"] if timed else [])
    scores = table(headers, rows, title="Mappings (numalize's scores; Diener et al.)")
    c = m["comm"]
    comm = f"Communication: {c['threads']} threads, average {c['comm_avg']:.4g} lines per pair, balance {c['balance']:.1f}%"
    return "\n\n".join([head, render(hist), render(regions), render(scores), comm])


def _shares(nodes: list[int], v: list[float]) -> str:
    return " ".join(f"{n}:{100 * x:.0f}%" for n, x in zip(nodes, v) if x > 0.0005) or "-"


def _size(b: int) -> str:
    for unit, k in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if b >= k:
            return f"{b // k} {unit}"
    return f"{b} B"
