"""The report as Markdown (GitHub-flavoured tables) for terminals and papers; figures are linked
as the PNG files saved beside it.

Every string that comes from the user (study name, description, design, labels, cases, errors,
figure titles) goes through ``text``: HTML-significant characters become entities (a Markdown
renderer passes raw HTML through, so ``<script>`` in a label would run), Markdown punctuation is
backslash-escaped, ``|`` cannot end a table cell and newlines cannot end a line. The study file
itself is shown in a code fence longer than any run of backticks in it.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from numalab.report.build import Content
from numalab.report.tables import TIME_LABELS, Grid, compared_time, describe_baseline, format_estimate, oriented

# Punctuation that starts inline markup (emphasis, code, links, strikethrough) or ends a cell;
# line-start markup (lists, headings) cannot occur: user text never starts a line here.
_MARKDOWN = re.compile(r"([\\`*_\[\]|~])")
_ENTITIES = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}


def text(value: Any) -> str:
    """``value`` as literal text in a Markdown paragraph, heading or table cell."""
    s = " ".join(str(value).split())  # newlines (and runs of blanks) would end a cell or a line
    s = "".join(_ENTITIES.get(ch, ch) for ch in s)
    return _MARKDOWN.sub(r"\\\1", s)


def _fence(body: str, lang: str) -> list[str]:
    ticks = "`" * max(3, 1 + max((len(m) for m in re.findall(r"`+", body)), default=0))
    return [f"{ticks}{lang}", body, ticks]


def render(c: Content, out: Path) -> str:
    lines = [f"# {text(c.title)}", ""]
    spec = c.data.spec
    missing = c.planned - sum(c.counts.values())
    from numalab.report.html import long_design

    long = bool(spec and spec.design and long_design(spec.design))
    meta = f"Study {text(c.data.study)}" + (f", follows {text(spec.design)}" if spec and spec.design and not long else "")
    meta += f"; {c.planned} runs planned: " + (", ".join(f"{n} {text(k)}" for k, n in sorted(c.counts.items())) or "none stored yet")
    lines += [meta + (f", {missing} not run yet." if missing > 0 else "."), ""]
    if long and spec:
        lines += [f"Design: {text(spec.design)}", ""]
    for note in c.data.notes:
        lines += [f"> {text(note)}", ""]
    if c.data.source:
        src = c.data.source.rstrip()
        n = src.count("\n") + 1
        # A long study file (S3's 90 lines) would push the results far down: folded, as in the HTML.
        fold = n > 30
        lines += ["## Configuration", ""] + ([f"<details><summary>study file ({n} lines)</summary>", ""] if fold else [])
        lines += _fence(src, "toml") + [""] + (["</details>", ""] if fold else [])
    if c.taskgraph_only:  # each experiment has its own tables (report/taskgraph.py)
        lines += _taskgraph(c, out)
        if c.sensitivity:
            from numalab.report import sensitivity as sens

            lines += sens.md_section(c.sensitivity, text)
    else:
        lines += _speedups(c)
    if c.corun:
        from numalab.report import corun

        lines += corun.markdown(c.corun, text)
    if c.mapping:
        from numalab.report import mapping

        lines += mapping.markdown(c.mapping, text)
    if c.maps:
        lines += ["## Access maps", "", "% of all DRAM accesses; rows: CPU node, columns: memory node; last row: memory node totals.", ""]
        for case, maps in c.maps:
            lines += [f"### {text(case)}", ""]
            for label, m in maps:
                lines += [f"**{text(label)}** (local {m.local_pct:.1f}%, remote {m.remote_pct:.1f}% of accesses by node)", ""]
                lines.append("| cpu \\\\ mem | " + " | ".join(text(n) for n in m.names) + " | total |")
                lines.append("|---" * (len(m.names) + 2) + "|")
                for name, row, total in zip(m.names, m.pct, m.row_totals):
                    lines.append(f"| {text(name)} | " + " | ".join(f"{v:.1f}" for v in row) + f" | {total:.1f} |")
                lines.append("| **total** | " + " | ".join(f"**{v:.1f}**" for v in m.concentration) + " | 100.0 |")
                lines.append("")
    if c.pages:
        lines += ["## Pages per node", ""]
        for i, (grid, fig) in enumerate(c.pages):
            lines += [f"**{text(grid.title)}**", ""] + _plain(grid) + [""]
            counters = c.counters[i] if i < len(c.counters) else None
            if counters:
                lines += [f"**{text(counters.title)}**", ""] + _plain(counters, "{:,.0f}") + [""]
            if fig:
                lines += [_image(fig, out), ""]
    if c.timelines:
        from numalab.report.html import TIMELINE_TITLE

        lines += [f"## {TIMELINE_TITLE[c.timelines_tiered]}", ""] + [_image(f, out) for f in c.timelines] + [""]
        if c.timelines_left_out:
            lines += [f"{c.timelines_left_out} more timelines left out (see the PNG/SVG files beside the report).", ""]
    if not c.taskgraph_only:
        lines += _taskgraph(c, out)
    if c.scatters:
        lines += ["## Scatter plots", ""]
        for s, f in c.scatters:
            lines.append(_image(f, out) if f else f"Scatter plot {text(s.title or s.y + ' vs ' + s.x)}: no finished runs with both metrics.")
        lines.append("")
    if c.failed:
        lines += [f"## Failed runs ({len(c.failed)})", "", "| case | configuration | seed | hash | error |", "|---|---|---|---|---|"]
        lines += [f"| {text(f['case'])} | {text(f['label'])} | {f['seed']} | {text(f['hash'])} | {text(f['error'])} |" for f in c.failed]
        lines.append("")
    return "\n".join(lines)


def _speedups(c: Content) -> list[str]:
    spec = c.data.spec
    base = f" Baseline: {text(describe_baseline(spec.baseline))}." if spec and spec.baseline else ""
    time = compared_time(c.data)
    lines = ["## Speedup", "", f"time(baseline) / time(configuration), time being {text(TIME_LABELS[time])}; mean ± 95% CI half-width (Student's t) with repetitions; "
              f"\"n identical runs\" where every repetition gave the same value (no interval); \"(baseline)\": the baseline's own "
             f"column, 1 by definition.{base}", ""]
    from numalab.report import sensitivity as sens

    marks = c.sensitivity.flipped if c.sensitivity else set()
    lines += _grid(c.speedup, 2, marks) + (["", sens.MARK_NOTE] if marks else [])
    lines += ["", f"### Time (s): {time}", ""] + _grid(c.times, 4) + [""]
    if c.sensitivity:
        lines += sens.md_section(c.sensitivity, text)
    return lines


def _taskgraph(c: Content, out: Path) -> list[str]:
    """Each experiment's tables with its figures under them (report/taskgraph.py)."""
    from numalab.report.taskgraph import NOTE

    if not c.taskgraph and not c.experiments:
        return []
    lines = ["## Task graphs", ""] + ([NOTE, ""] if c.experiments else [])
    for e in c.experiments:
        lines += [f"### {text(e.name)}", "", text(e.note), ""]
        for t in e.tables:
            lines += [f"**{text(t.caption)}**", "", "| " + " | ".join(text(h) for h in t.head) + " |", "|---" * len(t.head) + "|"]
            lines += ["| " + " | ".join(text(cell.text) for cell in row) + " |" for row in t.rows]
            lines.append("")
        lines += [_image(f, out) for f in e.figures] + ([""] if e.figures else [])
    lines += [_image(f, out) for f in c.taskgraph] + ([""] if c.taskgraph else [])
    return lines


def _grid(g: Grid, digits: int, marks: set[tuple[str, str]] | None = None) -> list[str]:
    """``marks``: (case, label) cells whose conclusion flips within the estimates' ranges."""
    from numalab.report.sensitivity import MARK

    if not g.rows:
        return ["No finished runs yet."]
    g = oriented(g)

    def cell(e: Any, name: str, col: str) -> str:
        key = (col, name) if g.corner == "configuration" else (name, col)
        return format_estimate(e, digits) + (f" {MARK}" if marks and key in marks else "")

    out = [f"| {text(g.corner)} | " + " | ".join(text(c) for c in g.cols) + " |", "|---" * (len(g.cols) + 1) + "|"]
    out += [f"| {text(name)} | " + " | ".join(cell(e, name, col) for e, col in zip(row, g.cols)) + " |" for name, row in zip(g.rows, g.cells)]
    return out


def _plain(g: Grid, fmt: str = "{:.1f}") -> list[str]:
    out = [f"| {text(g.corner)} | " + " | ".join(text(c) for c in g.cols) + " |", "|---" * (len(g.cols) + 1) + "|"]
    out += [f"| {text(name)} | " + " | ".join(fmt.format(v) for v in row) + " |" for name, row in zip(g.rows, g.cells)]
    return out


def _image(fig: Any, out: Path) -> str:
    # <...> keeps a path with spaces or parentheses one link destination.
    return f"![{text(fig.title)}](<{_rel(fig.png, out).replace('>', '%3E').replace('<', '%3C')}>)"


def _rel(path: Path, out: Path) -> str:
    return os.path.relpath(path, out.parent).replace(os.sep, "/")
