"""One self-contained HTML file: inline CSS, figures as SVG data URIs, no script, no network."""

from __future__ import annotations

import base64
from html import escape
from typing import Any

from numalab._core import __version__
from numalab.report.build import Content
from numalab.report.heatmap import heatmap_table, legend
from numalab.report.stats import Estimate
from numalab.report.sensitivity import MARK
from numalab.report.tables import TIME_LABELS, Grid, compared_time, describe_baseline, format_estimate, oriented
from numalab.report.taskgraph import NOTE as TASKGRAPH_NOTE

# The timeline section's heading; with memory tiers it shows pages per tier and tiering counters too.
TIMELINE_TITLE = {False: "Balancing over time", True: "Memory tiers and balancing over time"}

CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#1b1b1b;margin:2rem auto;max-width:1200px;padding:0 1rem}
h1{font-size:1.6rem;margin-bottom:.2rem}h2{margin-top:2.2rem;border-bottom:1px solid #ddd;padding-bottom:.2rem}
.meta{color:#555}pre{background:#f6f8fa;padding:.8rem;overflow-x:auto;font-size:12px;border-radius:4px}
table{border-collapse:collapse;margin:.4rem 0 1rem}.scroll{overflow-x:auto}th,td{padding:.25rem .5rem;border:1px solid #d9d9d9;text-align:right}
th{background:#f3f3f3;font-weight:600}th[scope=row]{text-align:left}caption{caption-side:top;text-align:left;font-weight:600;padding:.2rem 0}
td.up{background:#e3f4e1}td.down{background:#fbe3e1}td.na{color:#999}td.err{text-align:left;font-family:monospace;font-size:12px}
.maps{display:flex;flex-wrap:wrap;gap:1rem}.map{margin:0}.heatmap td.hm{min-width:2.6rem;font-variant-numeric:tabular-nums}
.heatmap td.tot,.heatmap tr.conc td{background:#fafafa;font-weight:600}.heatmap th.corner{font-weight:400;font-size:11px;color:#555}
.lr{margin:.1rem 0 0;font-size:12px;color:#333}.legend span{display:inline-block;padding:.1rem .5rem;font-size:12px}
figure.plot{margin:1rem 0}figure.plot img{max-width:100%;height:auto;border:1px solid #eee}figcaption{font-size:12px;color:#555}
.tg{display:flex;flex-wrap:wrap;gap:0 1.5rem;align-items:flex-start}.tg figure.plot{flex:1 1 420px;max-width:640px;margin:.4rem 0}
table.taskgraph td{white-space:nowrap}details summary{cursor:pointer;color:#2a5db0}.note{background:#fff8e1;border-left:3px solid #f0b400;padding:.4rem .6rem}
"""


def render(c: Content) -> str:
    parts = [_header(c), _configuration(c), _speedups(c), _corun(c), _mapping(c), _maps(c), _pages(c), _timelines(c), _taskgraph(c), _scatters(c), _failed(c)]
    body = "\n".join(p for p in parts if p)
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{escape(c.title)}</title><style>{CSS}</style></head>\n<body>\n{body}\n"
        f'<footer class="meta"><p>numalab {escape(__version__)} · results from {escape(str(c.data.db))}</p></footer>\n</body></html>\n'
    )


def _corun(c: Content) -> str:
    from numalab.report import corun

    return corun.html(c.corun) if c.corun else ""


def _mapping(c: Content) -> str:
    from numalab.report import mapping

    return mapping.html(c.mapping) if c.mapping else ""


def _header(c: Content) -> str:
    spec = c.data.spec
    counts = ", ".join(f"{n} {k}" for k, n in sorted(c.counts.items()))
    missing = c.planned - sum(c.counts.values())
    lines = [f"<h1>{escape(c.title)}</h1>", f'<p class="meta">study <b>{escape(c.data.study)}</b>']
    if spec and spec.design and not long_design(spec.design):
        lines.append(f" · follows {escape(spec.design)}")
    lines.append(f" · {c.planned} runs planned: {escape(counts) or 'none stored yet'}")
    if missing > 0:
        lines.append(f", {missing} not run yet")
    lines.append("</p>")
    if spec and spec.design and long_design(spec.design):
        lines.append(f'<p class="meta">Design: {escape(" ".join(spec.design.split()))}</p>')
    lines.extend(f'<p class="note">{escape(note)}</p>' for note in c.data.notes)
    return "".join(lines)


def long_design(design: str) -> bool:
    """A design of several lines (S3's paragraph) gets its own paragraph, not "follows ..." in the header line."""
    return "\n" in design.strip() or len(design) > 100


def _configuration(c: Content) -> str:
    src = c.data.source
    runs = c.data.frame
    rows = "".join(
        f'<tr><td>{escape(r["hash"][:12])}</td><th scope="row">{escape(r["case"])}</th><td style="text-align:left">{escape(r["label"])}</td>'
        f'<td>{r["seed"]}</td><td>{escape(r["role"])}</td><td>{escape(r["status"])}</td><td>{_num(r.get("time_s"), 4)}</td>'
        f'<td>{_num(r.get("reported_time_s"), 4)}</td></tr>'
        for _, r in runs.iterrows()
    ) if len(runs) else ""
    table = (
        f'<details><summary>all {len(runs)} stored runs</summary><table><thead><tr><th>hash</th><th>case</th><th>configuration</th>'
        f"<th>seed</th><th>role</th><th>status</th><th>time_s</th><th>reported_time_s</th></tr></thead><tbody>{rows}</tbody></table></details>"
    )
    n = src.count("\n") + 1
    # A long study file would push the results below the fold; show it folded.
    source = (f"<details{' open' if n <= 30 else ''}><summary>study file ({n} lines)</summary><pre>{escape(src)}</pre></details>"
              if src else "<p>(study file not stored)</p>")
    return f'<h2 id="configuration">Configuration</h2><p class="meta">{escape(c.data.source_path)}</p>{source}{table}'


def _speedups(c: Content) -> str:
    from numalab.report import sensitivity as sens

    if c.taskgraph_only:  # each experiment has its own tables (report/taskgraph.py)
        return sens.html_section(c.sensitivity) if c.sensitivity else ""
    spec = c.data.spec
    base = f"; baseline: {describe_baseline(spec.baseline)}" if spec and spec.baseline else ""
    time = compared_time(c.data)
    note = (
        "<p class=\"meta\">speedup = time(baseline) / time(configuration), above 1 is faster"
        f"{escape(base)}. Time: {escape(TIME_LABELS[time])}. With repetitions: mean ± half-width of the 95% confidence interval (Student's t over the seeds); "
        "\"n identical runs\" where every repetition gave the same value, so there is no interval; "
        "\"(baseline)\": the baseline's own column, 1 by definition.</p>"
    )
    marks = c.sensitivity.flipped if c.sensitivity else set()
    flips = f'<p class="meta">{escape(sens.MARK_NOTE)}</p>' if marks else ""
    return (
        '<h2 id="speedup">Speedup</h2>' + note + _grid_table(c.speedup, "speedup", colour=True, marks=marks) + flips
        + f'<h3>Time (s): {time}</h3>' + _grid_table(c.times, "time_s", digits=4)
        + (sens.html_section(c.sensitivity) if c.sensitivity else "")
    )


def _grid_table(g: Grid, cls: str, colour: bool = False, digits: int = 2, marks: set[tuple[str, str]] | None = None) -> str:
    """``marks``: (case, label) cells whose conclusion flips within the estimates' ranges."""
    if not g.rows:
        return "<p>No finished runs yet.</p>"
    g = oriented(g)
    head = "".join(f'<th scope="col">{escape(col)}</th>' for col in g.cols)
    body = []
    for name, row in zip(g.rows, g.cells):
        cells = "".join(_estimate_cell(e, colour, digits, _marked(g, name, col, marks)) for e, col in zip(row, g.cols))
        body.append(f'<tr><th scope="row">{escape(name)}</th>{cells}</tr>')
    return (f'<div class="scroll"><table class="{cls}"><thead><tr><th>{escape(g.corner)}</th>{head}</tr></thead>'
            f'<tbody>{"".join(body)}</tbody></table></div>')


def _marked(g: Grid, row: str, col: str, marks: set[tuple[str, str]] | None) -> bool:
    """Whether the cell (row, col) of a possibly transposed grid is a marked (case, label)."""
    if not marks:
        return False
    return ((col, row) if g.corner == "configuration" else (row, col)) in marks


def _estimate_cell(e: Estimate | None, colour: bool, digits: int, flips: bool = False) -> str:
    if e is None:
        return '<td class="na">-</td>'
    cls = ""
    if colour:
        cls = ' class="up"' if e.mean > 1.005 else ' class="down"' if e.mean < 0.995 else ""
    interval = f", 95% CI [{e.low:.{digits + 2}g}, {e.high:.{digits + 2}g}]" if e.half_width is not None else ""
    flip = ", flips within the estimates' ranges" if flips else ""
    title = f' title="n={e.n}' + (", the baseline itself" if e.baseline else ", all identical" if e.identical else interval) + flip + '"'
    return f"<td{cls}{title}>{escape(format_estimate(e, digits))}{' ' + MARK if flips else ''}</td>"


def _maps(c: Content) -> str:
    if not c.maps:
        return ""
    kind = "package" if c.data.options.access_map_groups == "package" else "cpu node"
    out = ['<h2 id="access-maps">Access maps</h2>',
           "<p class=\"meta\">Share of all DRAM accesses (%) by CPU node (rows) and memory node (columns), lowest seed; "
           "the last column is each CPU node's total, the last row each memory node's (its concentration).</p>", legend(c.vmax)]
    for case, maps in c.maps:
        out.append(f"<h3>{escape(case)}</h3><div class=\"maps\">")
        out.extend(heatmap_table(m, label, c.vmax, kind) for label, m in maps)
        out.append("</div>")
    return "".join(out)


def _pages(c: Content) -> str:
    if not c.pages:
        return ""
    out = ['<h2 id="pages">Pages per node</h2>']
    for i, (grid, fig) in enumerate(c.pages):
        head = "".join(f'<th scope="col">{escape(n)}</th>' for n in grid.cols)
        rows = "".join(
            f'<tr><th scope="row">{escape(r)}</th>{"".join(f"<td>{v:.1f}</td>" for v in cells)}</tr>' for r, cells in zip(grid.rows, grid.cells)
        )
        out.append(f'<table class="pages"><caption>{escape(grid.title)}</caption><thead><tr><th>{escape(grid.corner)}</th>{head}</tr></thead><tbody>{rows}</tbody></table>')
        counters = c.counters[i] if i < len(c.counters) else None
        if counters:
            out.append(_counters_table(counters))
        if fig:
            out.append(_figure(fig))
    return "".join(out)


def _counters_table(g: Grid) -> str:
    """Final vmstat counts, with thousands separators: they run to tens of millions of pages."""
    return g.html(lambda v: f"{int(v):,}")


def _timelines(c: Content) -> str:
    if not c.timelines:
        return ""
    out = [f'<h2 id="timeline">{escape(TIMELINE_TITLE[c.timelines_tiered])}</h2>']
    out.extend(_figure(f) for f in c.timelines)
    if c.timelines_left_out:
        out.append(f"<p class=\"meta\">{c.timelines_left_out} more timelines left out (see the PNG/SVG files beside the report).</p>")
    return "".join(out)


def _taskgraph(c: Content) -> str:
    if not c.taskgraph and not c.experiments:
        return ""
    out = ['<h2 id="taskgraph">Task graphs</h2>']
    if c.experiments:
        out.append(f'<p class="meta">{escape(TASKGRAPH_NOTE)}</p>')
    for e in c.experiments:
        out.append(f'<h3>{escape(e.name)}</h3><p class="meta">{escape(e.note)}</p><div class="tg"><div>')
        out.extend(_tg_table(t) for t in e.tables)
        out.append("</div>" + "".join(_figure(f) for f in e.figures) + "</div>")
    out.extend(_figure(f) for f in c.taskgraph)
    return "".join(out)


def _tg_table(t: Any) -> str:
    head = "".join(f'<th scope="col">{escape(h)}</th>' for h in t.head)
    body = []
    for row in t.rows:
        keys = "".join(f'<th scope="row">{escape(cell.text)}</th>' for cell in row[:t.keys])
        cells = "".join(f'<td{f" class={chr(34)}{cell.cls}{chr(34)}" if cell.cls else ""}>{escape(cell.text)}</td>' for cell in row[t.keys:])
        body.append(f"<tr>{keys}{cells}</tr>")
    return (f'<div class="scroll"><table class="taskgraph"><caption>{escape(t.caption)}</caption><thead><tr>{head}</tr></thead>'
            f'<tbody>{"".join(body)}</tbody></table></div>')


def _scatters(c: Content) -> str:
    if not c.scatters:
        return ""
    out = ['<h2 id="scatter">Scatter plots</h2>']
    for spec, fig in c.scatters:
        out.append(_figure(fig) if fig else f"<p>{escape(spec.title or spec.y + ' vs ' + spec.x)}: no finished runs with both metrics.</p>")
    return "".join(out)


def _failed(c: Content) -> str:
    if not c.failed:
        return ""
    from collections import Counter

    causes = "".join(f"<li>{n} × <code>{escape(str(e))}</code></li>" for e, n in Counter(str(f["error"]) for f in c.failed).most_common())
    rows = "".join(
        f'<tr><th scope="row">{escape(f["case"])}</th><td style="text-align:left">{escape(f["label"])}</td><td>{f["seed"]}</td>'
        f'<td>{escape(f["hash"])}</td><td class="err">{escape(str(f["error"]))}</td></tr>'
        for f in c.failed
    )
    return (
        f'<h2 id="failed">Failed runs ({len(c.failed)})</h2><p class="meta">Tried again by the next <code>numalab study</code>.</p>'
        f'<ul>{causes}</ul><details{" open" if len(c.failed) <= 10 else ""}><summary>each failed run</summary>'
        f"<table><thead><tr><th>case</th><th>configuration</th><th>seed</th><th>hash</th><th>error</th></tr></thead><tbody>{rows}</tbody></table></details>"
    )


def _figure(fig: Any) -> str:
    data = base64.b64encode(fig.svg.read_bytes()).decode()
    return (
        f'<figure class="plot"><img alt="{escape(fig.title)}" src="data:image/svg+xml;base64,{data}">'
        f"<figcaption>{escape(fig.title)} ({escape(fig.png.name)}, {escape(fig.svg.name)})</figcaption></figure>"
    )


def _num(v: Any, digits: int) -> str:
    return "-" if v is None or v != v else f"{float(v):.{digits}f}"
