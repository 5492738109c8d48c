"""The report as Markdown (GitHub-flavoured tables) for terminals and papers; figures are linked
as the PNG files saved beside it."""

from __future__ import annotations

import os
from pathlib import Path

from numalab.report.build import Content
from numalab.report.tables import Grid, describe_baseline, format_estimate, oriented


def render(c: Content, out: Path) -> str:
    lines = [f"# {c.title}", ""]
    spec = c.data.spec
    missing = c.planned - sum(c.counts.values())
    meta = f"Study `{c.data.study}`" + (f", follows {spec.design}" if spec and spec.design else "")
    meta += f"; {c.planned} runs planned: " + (", ".join(f"{n} {k}" for k, n in sorted(c.counts.items())) or "none stored yet")
    lines += [meta + (f", {missing} not run yet." if missing > 0 else "."), ""]
    if c.data.source:
        lines += ["## Configuration", "", "```toml", c.data.source.rstrip(), "```", ""]
    base = f" Baseline: {describe_baseline(spec.baseline)}." if spec and spec.baseline else ""
    lines += ["## Speedup", "", f"time(baseline) / time(configuration); mean ± 95% CI half-width (Student's t) with repetitions.{base}", ""]
    lines += _grid(c.speedup, 2) + ["", "### Time (s)", ""] + _grid(c.times, 4) + [""]
    if c.maps:
        lines += ["## Access maps", "", "% of all DRAM accesses; rows: CPU node, columns: memory node; last row: memory node totals.", ""]
        for case, maps in c.maps:
            lines += [f"### {case}", ""]
            for label, m in maps:
                lines += [f"**{label}** (local {m.local_pct:.1f}%, remote {m.remote_pct:.1f}% of accesses by node)", ""]
                lines.append("| cpu \\ mem | " + " | ".join(m.names) + " | total |")
                lines.append("|---" * (len(m.names) + 2) + "|")
                for name, row, total in zip(m.names, m.pct, m.row_totals):
                    lines.append(f"| {name} | " + " | ".join(f"{v:.1f}" for v in row) + f" | {total:.1f} |")
                lines.append("| **total** | " + " | ".join(f"**{v:.1f}**" for v in m.concentration) + " | 100.0 |")
                lines.append("")
    if c.pages:
        lines += ["## Pages per node", ""]
        for grid, fig in c.pages:
            lines += [f"**{grid.title}**", ""] + _plain(grid) + [""]
            if fig:
                lines += [f"![{fig.title}]({_rel(fig.png, out)})", ""]
    if c.timelines:
        lines += ["## Balancing over time", ""] + [f"![{f.title}]({_rel(f.png, out)})" for f in c.timelines] + [""]
    if c.scatters:
        lines += ["## Scatter plots", ""] + [f"![{f.title}]({_rel(f.png, out)})" for _, f in c.scatters if f] + [""]
    if c.failed:
        lines += [f"## Failed runs ({len(c.failed)})", "", "| case | configuration | seed | hash | error |", "|---|---|---|---|---|"]
        lines += [f"| {f['case']} | {f['label']} | {f['seed']} | {f['hash']} | {str(f['error']).replace('|', '/')} |" for f in c.failed]
        lines.append("")
    return "\n".join(lines)


def _grid(g: Grid, digits: int) -> list[str]:
    if not g.rows:
        return ["No finished runs yet."]
    g = oriented(g)
    out = [f"| {g.corner} | " + " | ".join(g.cols) + " |", "|---" * (len(g.cols) + 1) + "|"]
    out += [f"| {name} | " + " | ".join(format_estimate(e, digits) for e in row) + " |" for name, row in zip(g.rows, g.cells)]
    return out


def _plain(g: Grid) -> list[str]:
    out = [f"| {g.corner} | " + " | ".join(g.cols) + " |", "|---" * (len(g.cols) + 1) + "|"]
    out += [f"| {name} | " + " | ".join(f"{v:.1f}" for v in row) + " |" for name, row in zip(g.rows, g.cells)]
    return out


def _rel(path: Path, out: Path) -> str:
    return os.path.relpath(path, out.parent).replace(os.sep, "/")
