"""The co-run section of a report (docs/corun.md §4): unfairness, maximum slowdown and mean
process time per scenario (case) and configuration, and every process's slowdown."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from numalab.report.data import ReportData
from numalab.report.tables import Grid, speedup_grid

#: Scenario figures: store column, title, digits.
FIGURES = (
    ("unfairness", "Unfairness: max slowdown / min slowdown (1 = every process slowed alike)", 3),
    ("max_slowdown", "Maximum slowdown (T shared / T alone of the most slowed process)", 3),
    ("mean_process_time_s", "Mean process run time (s)", 4),
    ("weighted_speedup", "Weighted speedup (sum of T alone / T shared)", 3),
)


@dataclass
class Section:
    figures: list[tuple[Grid, int]]
    slowdowns: list[Grid]  # one per scenario: processes x configurations


def section(data: ReportData) -> Section | None:
    """None when no run of the study is a co-run."""
    f = data.finished()
    if not len(f) or "unfairness" not in f or f["unfairness"].dropna().empty:
        return None
    figures = []
    for col, title, digits in FIGURES:
        if col in f:
            g = speedup_grid(data, col)
            cells = [[None if e is None else e.mean for e in row] for row in g.cells]
            figures.append((Grid(title, "scenario", g.rows, g.cols, cells), digits))
    slowdowns = []
    for case in data.cases:
        docs = {label: data.first_seed(case, label) for label in data.labels}
        procs = next((d["processes"] for d in docs.values() if d and d.get("fairness")), None)
        if not procs:
            continue
        rows = [f"{p['pid']} {p['name']}" for p in procs]
        cells = [[_slowdown(docs[label], i) for label in data.labels] for i in range(len(procs))]
        slowdowns.append(Grid(f"{case}: slowdown per process (first seed)", "process", rows, list(data.labels), cells))
    return Section(figures, slowdowns)


def _slowdown(doc: dict[str, Any] | None, i: int) -> float | None:
    procs = (doc or {}).get("processes") or []
    return procs[i].get("slowdown") if i < len(procs) else None


def _fmt(v: Any, digits: int) -> str:
    return "-" if v is None else f"{v:.{digits}f}"


def markdown(s: Section, text: Any) -> list[str]:
    lines = ["## Co-runs: fairness", "", "Slowdown of a process = its time in the co-run / its time alone on the same machine and "
             "placement (docs/corun.md §4).", ""]
    for g, digits in [*s.figures, *((g, 3) for g in s.slowdowns)]:
        lines += [f"**{text(g.title)}**", "", f"| {text(g.corner)} | " + " | ".join(text(c) for c in g.cols) + " |",
                  "|---" * (len(g.cols) + 1) + "|"]
        lines += [f"| {text(r)} | " + " | ".join(_fmt(v, digits) for v in row) + " |" for r, row in zip(g.rows, g.cells)]
        lines.append("")
    return lines


def html(s: Section) -> str:
    out = ['<h2 id="corun">Co-runs: fairness</h2><p class="meta">Slowdown of a process = its time in the co-run / its time '
           "alone on the same machine and placement (docs/corun.md §4).</p>"]
    for g, digits in [*s.figures, *((g, 3) for g in s.slowdowns)]:
        out.append(g.html(functools.partial(_fmt, digits=digits)))
    return "".join(out)
