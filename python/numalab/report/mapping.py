"""The data mapping section of a report (study key ``mapping_metrics``, docs/mapping.md): per
case, each configuration's application exclusivity at 4 KiB, 2 MiB and 1 GiB with numalize's
Loc_App and B_Acc of first touch, and the histogram of page exclusivity."""

from __future__ import annotations

from dataclasses import dataclass
from html import escape
from typing import Any

from numalab.report.data import ReportData
from numalab.report.tables import Grid

#: Store columns (results/derived.py: mapping_columns) and their headings.
COLUMNS = (
    ("exclusivity_4k_pct", "exclusivity 4 KiB %"),
    ("exclusivity_2m_pct", "exclusivity 2 MiB %"),
    ("exclusivity_1g_pct", "exclusivity 1 GiB %"),
    ("first_touch_loc_app_pct", "Loc_App first touch %"),
    ("first_touch_b_acc_pct", "B_Acc first touch %"),
)

NOTE = ("Exclusivity of a page: the share of its accesses made from its most frequent node; of the application: weighted by "
        "accesses, with pages merged into 2 MiB and 1 GiB pages too (1/N: shared evenly by N nodes, 100 %: each page used by one "
        "node). Loc_App: % of accesses to pages that first touch places on their most frequent node; B_Acc: how much more the "
        "busiest node serves than the mean under first touch, in %. They describe the workload's accesses from the nodes its "
        "threads started on, whatever the run's own placement (its local accesses are the access maps'; docs/mapping.md).")


@dataclass
class Section:
    # Per case: configurations x COLUMNS, and configurations x exclusivity bins (% of accesses,
    # first seed) when the documents have the histogram.
    cases: list[tuple[Grid, Grid | None]]


def section(data: ReportData) -> Section | None:
    """None when no finished run of the study carries the analysis."""
    f = data.finished()
    if not len(f) or COLUMNS[0][0] not in f or f[COLUMNS[0][0]].dropna().empty:
        return None
    cases = []
    for case in data.cases:
        sel = f[f["case"] == case]
        labels = [label for label in data.labels if sel[sel["label"] == label][COLUMNS[0][0]].notna().any()]
        if not labels:
            continue
        cells = [[_mean(sel[sel["label"] == label], col) for col, _ in COLUMNS] for label in labels]
        summary = Grid(f"{case}: exclusivity and first touch's scores", "configuration", labels, [h for _, h in COLUMNS], cells)
        cases.append((summary, _histogram(case, labels, [(data.first_seed(case, label) or {}).get("mapping") for label in labels])))
    return Section(cases)


def _mean(rows: Any, col: str) -> float | None:
    if col not in rows:
        return None
    values = rows[col].dropna()
    return float(values.mean()) if len(values) else None


def _histogram(case: str, labels: list[str], maps: list[dict[str, Any] | None]) -> Grid | None:
    """Bins no configuration fills are left out: below 1/N there can be none."""
    bins = sorted({b["exclusivity_pct"] for m in maps if m for b in m.get("histogram") or [] if b["pages"]})
    if not bins:
        return None
    cells = []
    for m in maps:
        shares = {b["exclusivity_pct"]: 100.0 * b["access_share"] for b in (m or {}).get("histogram") or []}
        cells.append([shares.get(b) if m else None for b in bins])
    return Grid(f"{case}: page exclusivity, % of accesses per bin (rounded to 10 %, first seed)", "configuration", labels,
                [f"{b}%" for b in bins], cells)


def _fmt(v: Any) -> str:
    return "-" if v is None else f"{v:.1f}"


def _grids(s: Section) -> list[Grid]:
    return [g for pair in s.cases for g in pair if g is not None]


def markdown(s: Section, text: Any) -> list[str]:
    lines = ["## Data mapping", "", text(NOTE), ""]
    for g in _grids(s):
        lines += [f"**{text(g.title)}**", "", f"| {text(g.corner)} | " + " | ".join(text(c) for c in g.cols) + " |",
                  "|---" * (len(g.cols) + 1) + "|"]
        lines += [f"| {text(r)} | " + " | ".join(_fmt(v) for v in row) + " |" for r, row in zip(g.rows, g.cells)]
        lines.append("")
    return lines


def html(s: Section) -> str:
    out = [f'<h2 id="mapping">Data mapping</h2><p class="meta">{escape(NOTE)}</p>']
    for g in _grids(s):
        out.append(g.html(_fmt))
    return "".join(out)
