"""A co-run's processes and fairness as text (``numalab sim --corun``, docs/corun.md §4)."""

from __future__ import annotations

from typing import Any

from numalab.console.tables import render, table


def corun_text(doc: dict[str, Any]) -> str:
    nodes = doc["access_map"]["nodes"]
    page = doc["pages"]["page_size_bytes"]

    def secs(v: Any) -> str:
        return "-" if v is None else f"{v:.4f}"

    def where(p: dict[str, Any]) -> str:
        per = p.get("pages_per_node") or []
        total = sum(per)
        return " ".join(f"node{n} {100 * c / total:.0f}%" for n, c in zip(nodes, per) if c) if total else "-"

    rows = [
        [p["pid"], p["name"], p.get("group", 0), p.get("placement", ""), f"{1000 * p.get('start_s', 0.0):g}", p.get("threads", 1),
         f"{sum(p.get('pages_per_node') or []) * page / 2**20:.0f}", where(p), secs(p.get("alone_time_s")), secs(p["time_s"]),
         "-" if p.get("slowdown") is None else f"{p['slowdown']:.3f}"]
        for p in doc["processes"]
    ]
    head = ["pid", "workload", "group", "placement", "start ms", "threads", "MiB", "pages on", "alone s", "shared s", "slowdown"]
    out = [f"co-run {doc['workload']['params'].get('corun', '')}", render(table(head, rows, "processes (slowdown = shared time / alone time)"))]
    f = doc.get("fairness") or {}

    def num(k: str) -> str:
        return "-" if f.get(k) is None else f"{f[k]:.3f}"

    out.append(f"unfairness (max/min slowdown) {num('unfairness')}   max slowdown {num('max_slowdown')}   "
               f"weighted speedup {num('weighted_speedup')}   harmonic speedup {num('harmonic_speedup')}   "
               f"mean process time {num('mean_process_time_s')} s")
    return "\n".join(out)
