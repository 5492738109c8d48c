"""Matplotlib figures of a report, saved as PNG and SVG beside it and embedded in the HTML.

Figures are drawn on ``matplotlib.figure.Figure`` objects (no pyplot, no GUI backend, safe in any
process) with fixed metadata and SVG id salt, so the same results give the same files.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from numalab.report.data import ReportData
from numalab.report.tables import is_tiering_counter, pages_grid

# text.usetex off whatever a matplotlibrc says: user text is never TeX (literal_texts).
_STYLE: Any = {"text.usetex": False, "svg.hashsalt": "numalab", "svg.fonttype": "none", "font.size": 9, "axes.spines.top": False, "axes.spines.right": False}


@dataclass(frozen=True)
class Figure:
    name: str
    title: str
    png: Path
    svg: Path


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", text).strip("-").lower()[:60] or "figure"


# Lists the figures a report wrote in its figures directory: the only files a later report of
# the same name removes there (the user's own files beside them stay).
MANIFEST = ".numalab-figures.json"
_FIGURE = re.compile(r"\d{2}-[a-z0-9-]+\.(png|svg)")


class Drawer:
    """Creates figures in ``directory`` with unique names; ``finish()`` removes the figures of
    the previous report there that this one did not write again."""

    def __init__(self, directory: Path):
        self.directory = directory
        self.figures: list[Figure] = []
        self.previous = read_manifest(directory)
        self.written: list[str] = []

    def new(self, width: float = 6.4, height: float = 3.6) -> Any:
        from matplotlib.figure import Figure as MplFigure

        return MplFigure(figsize=(width, height), layout="constrained")

    def save(self, fig: Any, title: str) -> Figure:
        import matplotlib

        from numalab.results.outfile import write_atomic

        self.directory.mkdir(parents=True, exist_ok=True)
        name = f"{len(self.figures) + 1:02d}-{_slug(title)}"
        png, svg = self.directory / f"{name}.png", self.directory / f"{name}.svg"
        # Listed before they are written: a report stopped half-way still owns its files.
        self.written += [png.name, svg.name]
        self._manifest(sorted(set(self.previous) | set(self.written)))
        literal_texts(fig)
        with matplotlib.rc_context(_STYLE):
            write_atomic(png, lambda f: fig.savefig(f, format="png", dpi=110, metadata={"Software": None}), "--output")
            write_atomic(svg, lambda f: fig.savefig(f, format="svg", metadata={"Date": None, "Creator": None}), "--output")
        out = Figure(name, title, png, svg)
        self.figures.append(out)
        return out

    def finish(self) -> None:
        stale = [n for n in self.previous if n not in self.written]
        for n in stale:
            try:
                (self.directory / n).unlink()
            except FileNotFoundError:
                pass
        if self.written or stale:
            self._manifest(self.written)

    def _manifest(self, names: list[str]) -> None:
        import json

        from numalab.results.outfile import write_text_atomic

        doc = {"written_by": "numalab report", "files": names}
        write_text_atomic(self.directory / MANIFEST, json.dumps(doc, indent=1) + "\n", "--output")


def literal(text: str) -> str:
    """``text`` as matplotlib draws it literally: an unescaped ``$`` pair starts mathtext (TeX),
    so a label such as ``cost $5 and $6`` or ``$\\q$`` would be typeset or fail to parse;
    ``\\$`` is a plain dollar, and a backslash outside mathtext is itself."""
    return text.replace("$", "\\$")


def literal_texts(fig: Any) -> None:
    """Every text of ``fig`` (titles, axis labels, legends, fixed tick labels) drawn as written:
    labels, study and experiment names are user text. Tick labels that formatters compute at
    draw time (log-scale powers of ten) keep their mathtext."""
    from matplotlib.text import Text
    from matplotlib.ticker import FixedFormatter, FuncFormatter

    for t in fig.findobj(Text):
        t.set_text(literal(t.get_text()))
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            # set_ticks(..., labels) installs one of these two over the labels given.
            fmt = axis.get_major_formatter()
            if isinstance(fmt, (FixedFormatter, FuncFormatter)):
                axis.set_major_formatter(FuncFormatter(lambda x, pos=None, f=fmt: literal(f(x, pos))))


def read_manifest(directory: Path) -> list[str]:
    """The figure files the last report wrote in ``directory``; only names of the report's own
    pattern count, so an edited manifest cannot make a report remove other files."""
    import json

    try:
        doc = json.loads((directory / MANIFEST).read_text(encoding="utf-8"))
        names = doc["files"]
    except (OSError, ValueError, TypeError, KeyError):
        return []
    if not isinstance(names, list):
        return []
    return [n for n in dict.fromkeys(names) if isinstance(n, str) and _FIGURE.fullmatch(n)]


def pages_figure(drawer: Drawer, data: ReportData, case: str) -> Figure | None:
    grid = pages_grid(data, case)
    if grid is None:
        return None
    import matplotlib

    with matplotlib.rc_context(_STYLE):
        fig = drawer.new(6.4, 0.8 + 0.28 * len(grid.rows) * max(1, len(grid.cols)) ** 0.5)
        ax = fig.add_subplot()
        left = [0.0] * len(grid.rows)
        colors = matplotlib.colormaps["tab10"]
        # Beyond 10 GiB the MiB ticks run into each other (130000 next to 140000): GiB then.
        gib = max((sum(row) for row in grid.cells), default=0) > 10 * 1024
        for j, node in enumerate(grid.cols):
            widths = [row[j] / 1024 if gib else row[j] for row in grid.cells]
            ax.barh(range(len(grid.rows)), widths, left=left, label=node, color=colors(j % 10))
            left = [a + b for a, b in zip(left, widths)]
        ax.set_yticks(range(len(grid.rows)), grid.rows)
        ax.invert_yaxis()
        ax.set_xlabel(f"memory at the end of the run ({'GiB' if gib else 'MiB'}), by node")
        ax.set_title(f"{case}: pages per node")
        fig.legend(loc="outside right upper", fontsize=7, title="node", title_fontsize=7)
    return drawer.save(fig, f"pages {case}")


def timeline_series(doc: dict[str, Any]) -> dict[str, list[tuple[float, float]]]:
    """Counters the timeline carries besides pages and the access map (balancing counters such as
    numa_pages_migrated, flat or under ``vmstat``), as name -> [(t_s, value)]."""
    out: dict[str, list[tuple[float, float]]] = {}
    for point in doc.get("timeline") or []:
        t = point.get("t_s")
        flat = {**{k: v for k, v in point.items() if k not in ("t_s", "vmstat")}, **(point.get("vmstat") or {})}
        for k, v in flat.items():
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                out.setdefault(k, []).append((t, v))
    # Counters that never moved (numa_huge_pte_updates without THP, ...) only clutter the plot.
    return {k: v for k, v in out.items() if any(b for _, b in v)}


def timeline_figure(drawer: Drawer, case: str, label: str, doc: dict[str, Any]) -> Figure | None:
    series = timeline_series(doc)
    points = doc.get("timeline") or []
    if not points:
        return None
    import matplotlib
    from matplotlib.ticker import EngFormatter

    tiering = {k: v for k, v in series.items() if is_tiering_counter(k)}
    balancing = {k: v for k, v in series.items() if not is_tiering_counter(k)}
    panels = [("tiering counters (vmstat)", tiering), ("balancing counters (vmstat)", balancing)]
    panels = [(title, ss) for title, ss in panels if ss]
    tiers = bool(doc.get("memory_tiers"))
    indicator = latbal_series(doc)
    with matplotlib.rc_context(_STYLE):
        extra = len(panels) + bool(indicator)
        fig = drawer.new(6.4 if extra < 2 else 9.6, 3.0)
        axes = fig.subplots(1, 1 + extra, squeeze=False)[0]
        nodes = (doc.get("access_map") or doc["pages"])["nodes"]  # host runs without balancing have no map
        t = [p["t_s"] for p in points]
        # Tiered machines hold hundreds of GiB: memory per tier in GiB from 0 reads at a glance
        # (pages of 4 KiB would be tens of millions, and an axis from the minimum exaggerates moves).
        scale = (doc.get("pages") or {}).get("page_size_bytes", 4096) / (1 << 30) if tiers else 1.0
        for name, rows in _page_lines(doc, nodes).items():
            axes[0].plot(t, [scale * sum(p["pages_per_node"][j] for j in rows) for p in points], label=name)
        axes[0].set_xlabel("time (s)")
        if tiers:
            axes[0].set_ylabel("GiB")
            axes[0].set_ylim(bottom=0)
            axes[0].set_title("pages per memory tier (GiB)")
        else:
            axes[0].set_ylabel("pages")
            axes[0].set_title("pages per node")
        axes[0].legend(fontsize=7, ncols=2, loc="best" if tiers else None)
        for ax, (title, ss) in zip(axes[1:], panels):
            for name, values in sorted(ss.items()):
                ax.plot([a for a, _ in values], [b for _, b in values], label=name)
            ax.set_xlabel("time (s)")
            ax.set_ylabel("events (cumulative)")
            ax.yaxis.set_major_formatter(EngFormatter(sep=" "))
            ax.set_title(title)
            ax.legend(fontsize=7)
        if indicator:
            ax = axes[-1]
            for name, values in indicator.items():
                ax.plot([a for a, _ in values], [b for _, b in values], label=name)
            ax.axhline(min(b for v in indicator.values() for _, b in v) + doc["latency_balanced"]["threshold_ns"],
                       color="grey", linewidth=0.6, linestyle=":", label="lowest + threshold")
            ax.set_xlabel("time (s)")
            ax.set_ylabel("ns")
            ax.set_title("latency indicator per node (latency-balanced)")
            ax.legend(fontsize=7)
        fig.suptitle(f"{case} / {label}")
    return drawer.save(fig, f"timeline {case} {label}")


def latbal_series(doc: dict[str, Any]) -> dict[str, list[tuple[float, float]]]:
    """The latency-balanced policy's smoothed indicator (docs/allocation.md §12) per node:
    node name -> [(t_s, ns)]; empty for other runs."""
    lb = doc.get("latency_balanced") or {}
    nodes = (doc.get("access_map") or doc.get("pages") or {}).get("nodes") or []
    out: dict[str, list[tuple[float, float]]] = {}
    for t, values in lb.get("series") or []:
        for j, v in enumerate(values):
            out.setdefault(f"node{nodes[j] if j < len(nodes) else j}", []).append((t, v))
    return out


def _page_lines(doc: dict[str, Any], nodes: list[Any]) -> dict[str, list[int]]:
    """Lines of the pages plot: one per node, or per memory tier (0 = fastest) on a machine with
    tiers (the result's ``memory_tiers``, docs/tiering.md §2), each naming its nodes."""
    tiers = doc.get("memory_tiers")
    if not tiers:
        return {f"node{n}": [j] for j, n in enumerate(nodes)}
    out: dict[str, list[int]] = {}
    for k in sorted({x for x in tiers if x is not None}):
        rows = [j for j, x in enumerate(tiers) if x == k]
        out[f"tier {k} (node{','.join(str(nodes[j]) for j in rows)})"] = rows
    return out


# Axis names for terse metric columns (docs/studies.md §4).
_AXIS = {"mapki": "MAPKI (memory accesses per 1000 instructions)", "dram_gbps": "DRAM traffic (GB/s)"}


def axis_label(name: str) -> str:
    """``baseline.mapki`` -> "MAPKI (memory accesses per 1000 instructions), baseline run"."""
    base = name.removeprefix("baseline.")
    label = _AXIS.get(base, base)
    return f"{label}, baseline run" if base != name else label


def scatter_figure(drawer: Drawer, spec: Any, points: list[dict[str, Any]]) -> Figure | None:
    """``points``: dicts with x, y and group (see report.scatter.points)."""
    if not points:
        return None
    import matplotlib

    with matplotlib.rc_context(_STYLE):
        fig = drawer.new(6.4, 4.0)
        ax = fig.add_subplot()
        groups = list(dict.fromkeys(p["group"] for p in points))
        colors = matplotlib.colormaps["tab10" if len(groups) <= 10 else "tab20"]
        for i, g in enumerate(groups):
            sel = [p for p in points if p["group"] == g]
            ax.scatter([p["x"] for p in sel], [p["y"] for p in sel], label=g, color=colors(i % colors.N), s=24)
        if spec.log_x:
            ax.set_xscale("log")
        if spec.y == "speedup":
            ax.axhline(1.0, color="0.6", lw=0.8, ls="--")
        ax.set_xlabel(axis_label(spec.x))
        ax.set_ylabel(axis_label(spec.y))
        title = spec.title or f"{spec.y} vs {spec.x}"
        ax.set_title(title)
        ax.legend(fontsize=7, loc="best")
    return drawer.save(fig, f"scatter {title}")
