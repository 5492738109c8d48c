"""The report's tables as plain data (HTML and Markdown render the same numbers): speedups with
confidence intervals, access maps with their totals, pages per node, runs that failed."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from functools import lru_cache
from html import escape
from typing import Any, Callable

from numalab import counters
from numalab.exceptions import NumalabError
from numalab.report.data import ReportData
from numalab.results.metrics import access_map_percent, access_metrics
from numalab.report.stats import Estimate, estimate

MIB = 1 << 20


@dataclass(frozen=True)
class Grid:
    """Rows x columns of values (``None`` where a run is missing or failed)."""

    title: str
    corner: str
    rows: list[str]
    cols: list[str]
    cells: list[list[Any]]

    def html(self, cell: Callable[[Any], str]) -> str:
        """The grid as an HTML table of class ``counters``, each value written by ``cell``."""
        head = "".join(f'<th scope="col">{escape(c)}</th>' for c in self.cols)
        rows = "".join(f'<tr><th scope="row">{escape(r)}</th>{"".join(f"<td>{cell(v)}</td>" for v in row)}</tr>'
                       for r, row in zip(self.rows, self.cells))
        return (f'<table class="counters"><caption>{escape(self.title)}</caption><thead><tr><th>{escape(self.corner)}</th>{head}</tr>'
                f"</thead><tbody>{rows}</tbody></table>")


#: What each time a study may compare is (study/model.py: Study.compare_time), as the report says it.
TIME_LABELS = {
    "reported_time_s": "the time the program reports (reported_time_s: its own timer, e.g. NPB's \"Time in seconds\" over its "
    "timed section; the whole run for a program without a timer)",
    "time_s": "the whole run (time_s: from the program's start to its last thread's end)",
}


def compared_time(data: ReportData) -> str:
    """The time column the study's speedups compare."""
    return data.spec.compare_time if data.spec is not None else "reported_time_s"


def speedup_grid(data: ReportData, metric: str = "speedup") -> Grid:
    """Mean ``metric`` per case (rows) and configuration label (columns) over the seeds."""
    f = data.finished()
    cells = []
    for case in data.cases:
        row = []
        for label in data.labels:
            sel = f[(f["case"] == case) & (f["label"] == label)] if len(f) else f
            e = estimate(sel[metric].dropna()) if len(sel) and metric in sel else None
            if e is not None and metric == "speedup" and _own_baseline(sel):
                e = _baseline_estimate(e, sel, compared_time(data))
            row.append(e)
        cells.append(row)
    return Grid(metric, "workload", data.cases, data.labels, cells)


def _own_baseline(sel: Any) -> bool:
    """Every run of the cell is its own baseline (the baseline's column)."""
    return "baseline_hash" in sel and bool((sel["baseline_hash"] == sel["hash"]).all())


def _baseline_estimate(e: Estimate, sel: Any, time: str) -> Estimate:
    """The baseline's speedup over itself is 1 for every seed, so its runs would read as identical;
    they are said to be identical only when their times are, else the cell says it is the baseline."""
    times = estimate(sel[time].dropna()) if time in sel else None
    if e.identical and times is not None and (times.identical or times.n == 1):
        return e
    return Estimate(e.mean, e.n, None, baseline=True)


def oriented(g: Grid) -> Grid:
    """Put the longer list on the rows, so a study with a dozen configurations and a few
    workloads gives a tall table rather than one wider than the page."""
    if len(g.cols) <= max(6, len(g.rows)):
        return g
    cells = [[row[j] for row in g.cells] for j in range(len(g.cols))]
    return Grid(g.title, "configuration", g.cols, g.rows, cells)


def describe_baseline(patch: Any) -> str:
    """``placement default, balancing off, threads=1, init=serial``."""
    parts = []
    for key in ("machine", "workload", "placement", "kernel", "thp"):
        if getattr(patch, key) is not None:
            parts.append(f"{key} {getattr(patch, key)}")
    if patch.balancing is not None:
        parts.append("balancing " + patch.balancing.label())
    parts += [f"{k}={v}" for k, v in patch.params.items()]
    return ", ".join(parts) or "the run itself"


def format_estimate(e: Estimate | None, digits: int = 2) -> str:
    if e is None:
        return "-"
    if e.baseline:
        return f"{e.mean:.{digits}f} (baseline)"
    if e.identical:
        return f"{e.mean:.{digits}f} ({e.n} identical runs)"
    if e.half_width is None:
        return f"{e.mean:.{digits}f}"
    # An interval narrower than the last digit shown gets the digits that show it (two
    # significant), so a small but real spread never reads as "± 0.00".
    if 0 < e.half_width < 10 ** -digits:
        digits = min(9, 1 - math.floor(math.log10(e.half_width)))
    return f"{e.mean:.{digits}f} ± {e.half_width:.{digits}f}"


@dataclass(frozen=True)
class AccessMap:
    """Percent of all DRAM accesses: rows CPU node (or package), columns memory node (or package).
    ``local_pct``/``remote_pct`` are always per node (the kernel's local/remote); with packages,
    ``same_group_pct`` is the share served within the CPU's own package."""

    names: list[str]
    pct: list[list[float]]
    row_totals: list[float]
    concentration: list[float]
    local_pct: float
    remote_pct: float
    same_group_pct: float | None = None


def access_map(doc: dict[str, Any], groups: str = "node") -> AccessMap | None:
    am = doc.get("access_map") or {}
    matrix, nodes = am.get("matrix"), am.get("nodes")
    if not matrix or not nodes:
        return None
    met = access_metrics(matrix, nodes)
    if met["local_pct"] is None:
        return None
    names, same_group = [f"node{n}" for n in nodes], None
    if groups == "package":
        matrix, names = _by_package(matrix, nodes, doc["machine"]["name"])
    pct = access_map_percent(matrix)
    if groups == "package":
        same_group = sum(pct[i][i] for i in range(len(pct)))
    return AccessMap(names, pct, [sum(r) for r in pct], [sum(r[j] for r in pct) for j in range(len(names))],
                     met["local_pct"], met["remote_pct"], same_group)


def _by_package(matrix: list[list[float]], nodes: list[int], machine: str) -> tuple[list[list[float]], list[str]]:
    """Sum the map over packages (as the S1 paper shows its 8-node maps in 4 groups)."""
    package = _packages(machine)
    groups = sorted({package.get(n, n) for n in nodes})
    index = {g: i for i, g in enumerate(groups)}
    out = [[0.0] * len(groups) for _ in groups]
    for i, a in enumerate(nodes):
        for j, b in enumerate(nodes):
            out[index[package.get(a, a)]][index[package.get(b, b)]] += matrix[i][j]
    return out, [f"package{g}" for g in groups]


@lru_cache(maxsize=16)
def _packages(machine: str) -> dict[int, int]:
    from numalab import machine as machines

    try:
        doc = json.loads(machines.load(machine).to_json())
    except NumalabError:  # a machine file gone since the run: fall back to per-node maps
        return {}
    return {n["os_index"]: n["package"] for n in doc["nodes"]}


def pages_grid(data: ReportData, case: str) -> Grid | None:
    """MiB per memory node at the end of the run, one row per configuration (lowest seed)."""
    rows, cells, cols = [], [], None
    for label in data.labels:
        doc = data.first_seed(case, label)
        if not doc or not (doc.get("access_map") or doc.get("pages")):  # task-graph runs have neither
            continue
        nodes = (doc.get("access_map") or doc["pages"])["nodes"]  # host runs without balancing have no map
        cols = cols or _node_names(nodes, doc.get("memory_tiers"))
        page = doc["pages"]["page_size_bytes"]
        rows.append(label)
        cells.append([p * page / MIB for p in doc["pages"]["per_node"]])
    return Grid(f"{case}: memory per node (MiB)", "configuration", rows, cols or [], cells) if rows else None


def _node_names(nodes: list[Any], tiers: list[Any] | None) -> list[str]:
    """``node2``, or ``node2 (tier 1)`` on a machine with memory tiers (0 = fastest, docs/tiering.md)."""
    if not tiers:
        return [f"node{n}" for n in nodes]
    return [f"node{n}" + (f" (tier {t})" if t is not None else "") for n, t in zip(nodes, tiers)]


def is_tiering_counter(name: str) -> bool:
    """vmstat counters of memory tiering (docs/tiering.md): demotion by kswapd, direct reclaim or
    khugepaged, promotion of hot slow-tier pages. Figures give them their own panel:
    numa_pte_updates counts in the hundreds of millions would flatten them on a shared axis."""
    return name in counters.names("vmstat", "tiering")


def tiering_counters(data: ReportData, case: str) -> Grid | None:
    """The tiering counters (vmstat ``pgdemote_*``, ``pgpromote_*``, in 4 KiB pages) at the end
    of each configuration's run (lowest seed); only counters that moved in some configuration."""
    rows, values = [], []
    for label in data.labels:
        doc = data.first_seed(case, label)
        if not doc or not (doc.get("memory_tiers") or any(is_tiering_counter(k) for k in doc.get("vmstat") or {})):
            continue
        rows.append(label)
        values.append({k: v for k, v in (doc.get("vmstat") or {}).items() if is_tiering_counter(k) and isinstance(v, (int, float))})
    cols = sorted({k for v in values for k, n in v.items() if n})
    if not rows or not cols:
        return None
    return Grid(f"{case}: tiering counters (vmstat, pages)", "configuration", rows, cols, [[v.get(k, 0) for k in cols] for v in values])


def failed_runs(data: ReportData) -> list[dict[str, Any]]:
    f = data.frame
    if not len(f):
        return []
    bad = f[f["status"] == "failed"]
    return [{"case": r["case"], "label": r["label"], "seed": r["seed"], "hash": r["hash"][:12], "error": r["error"]} for _, r in bad.iterrows()]


def status_counts(data: ReportData) -> dict[str, int]:
    f = data.frame
    return {k: int(v) for k, v in f["status"].value_counts().items()} if len(f) else {}
