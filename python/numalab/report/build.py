"""Assemble a report's content once (tables, maps, figures); ``html`` and ``markdown`` render it."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from numalab.console.progress import Progress
from numalab.report import figures as figs
from numalab.report.data import ReportData
from numalab.report.scatter import points
from numalab.report.tables import (
    AccessMap,
    Grid,
    access_map,
    compared_time,
    failed_runs,
    pages_grid,
    speedup_grid,
    status_counts,
    tiering_counters,
)
from numalab.study import kinds

# Timelines are one figure per run; past this many the report says how many it left out.
MAX_TIMELINES = 24


@dataclass
class Content:
    data: ReportData
    title: str
    planned: int
    counts: dict[str, int]
    speedup: Grid
    times: Grid
    maps: list[tuple[str, list[tuple[str, AccessMap]]]] = field(default_factory=list)
    vmax: float = 0.0
    pages: list[tuple[Grid, figs.Figure | None]] = field(default_factory=list)
    counters: list[Grid | None] = field(default_factory=list)  # tiering counters beside each pages grid
    timelines: list[figs.Figure] = field(default_factory=list)
    timelines_left_out: int = 0
    timelines_tiered: bool = False  # some timeline is of a machine with memory tiers (pages per tier, tiering counters)
    scatters: list[tuple[Any, figs.Figure | None]] = field(default_factory=list)
    taskgraph: list[figs.Figure] = field(default_factory=list)  # task-graph figures no experiment claims
    experiments: list[Any] = field(default_factory=list)  # task-graph experiments (report.taskgraph), figures attached
    taskgraph_only: bool = False  # a task-graph study: per-experiment tables replace the speedup grid
    failed: list[dict[str, Any]] = field(default_factory=list)
    sensitivity: Any = None  # report.sensitivity.View when the study ran its sensitivity
    corun: Any = None  # report.corun.Section when the study has co-runs
    mapping: Any = None  # report.mapping.Section when the study ran the data mapping analysis (mapping_metrics)


def build(data: ReportData, figure_dir: Path, progress: Any = None) -> Content:
    """``progress``: a ``console.progress.Progress`` told of each case, timeline and scatter plot."""
    progress = progress or Progress("report", quiet=True)
    spec = data.spec
    title = data.options.title or (f"{data.study}: {spec.description}" if spec and spec.description else data.study)
    c = Content(data, title, _planned(data), status_counts(data), speedup_grid(data), speedup_grid(data, compared_time(data)))
    drawer = figs.Drawer(figure_dir)
    groups = data.options.access_map_groups
    progress.add(len(data.cases) + len(data.options.scatter))
    for case in data.cases:
        maps = []
        for label in data.labels:
            doc = data.first_seed(case, label)
            m = access_map(doc, groups) if doc else None
            if m:
                maps.append((label, m))
                c.vmax = max(c.vmax, max(max(r) for r in m.pct))
        if maps:
            c.maps.append((case, maps))
        grid = pages_grid(data, case)
        if grid:
            c.pages.append((grid, figs.pages_figure(drawer, data, case)))
            c.counters.append(tiering_counters(data, case))
        progress.step(f"case {case}")
    _timelines(c, data, drawer, progress)
    for i, s in enumerate(data.options.scatter):
        c.scatters.append((s, figs.scatter_figure(drawer, s, points(data, s, i))))
        progress.step(f"scatter plot {i + 1}")
    from numalab.report import taskgraph as tg

    c.experiments = tg.experiments(data)
    c.taskgraph = tg.attach_figures(c.experiments, [f for k in kinds.registered() if k.figures for f in k.figures(drawer, data)])
    c.taskgraph_only = tg.is_taskgraph(data)
    c.failed = failed_runs(data)
    from numalab.report.corun import section as corun_section

    c.corun = corun_section(data)
    from numalab.report.mapping import section as mapping_section

    c.mapping = mapping_section(data)
    from numalab.report.sensitivity import load as load_sensitivity

    c.sensitivity = load_sensitivity(data.db, data.study)
    drawer.finish()
    return c


def _planned(data: ReportData) -> int:
    from numalab.results.store import Store

    with Store(data.db, create=False) as store:
        info = store.study_source(data.study) or {}
    return len(json.loads(info.get("resolved") or "[]"))


def _timelines(c: Content, data: ReportData, drawer: figs.Drawer, progress: Any) -> None:
    """Runs with balancing on, whose timeline carries counters, or on a machine with memory tiers
    (pages per tier over time, docs/tiering.md): how pages and counters move."""
    f = data.finished()
    if not len(f):
        return
    wanted = []
    for case in data.cases:
        for label in data.labels:
            doc = data.first_seed(case, label)
            if doc and ((doc.get("placement") or {}).get("balancing", {}).get("enabled") or _balancing_on(f, case, label)
                        or figs.timeline_series(doc) or doc.get("memory_tiers") or figs.latbal_series(doc)):
                wanted.append((case, label, doc))
    progress.add(min(len(wanted), MAX_TIMELINES))
    for case, label, doc in wanted[:MAX_TIMELINES]:
        fig = figs.timeline_figure(drawer, case, label, doc)
        if fig:
            c.timelines.append(fig)
            c.timelines_tiered = c.timelines_tiered or bool(doc.get("memory_tiers"))
        progress.step(f"timeline {case} / {label}")
    c.timelines_left_out = max(0, len(wanted) - MAX_TIMELINES)


def _balancing_on(f: Any, case: str, label: str) -> bool:
    if "balancing_enabled" not in f:
        return False
    sel = f[(f["case"] == case) & (f["label"] == label)]["balancing_enabled"]
    return bool(sel.fillna(False).astype(bool).any())
