"""Access maps as coloured HTML tables: rows CPU node, columns memory node, cell colour by share
of all DRAM accesses on one scale for the whole report (so maps compare at a glance), a total
column per CPU node and a concentration row per memory node."""

from __future__ import annotations

from html import escape

from numalab.report.tables import AccessMap

# Sequential blues (ColorBrewer "Blues" end points), interpolated in RGB.
_LOW = (247, 251, 255)
_HIGH = (8, 48, 107)


def colour(value: float, vmax: float) -> tuple[str, str]:
    """(background, text colour) for ``value`` on a 0..vmax scale."""
    w = 0.0 if vmax <= 0 else max(0.0, min(1.0, value / vmax))
    rgb = tuple(round(a + w * (b - a)) for a, b in zip(_LOW, _HIGH))
    return f"#{rgb[0]:02x}{rgb[1]:02x}{rgb[2]:02x}", ("#ffffff" if w > 0.55 else "#111111")


def heatmap_table(m: AccessMap, caption: str, vmax: float, kind: str = "cpu node") -> str:
    head = "".join(f'<th scope="col">{escape(n)}</th>' for n in m.names)
    rows = []
    for name, row, total in zip(m.names, m.pct, m.row_totals):
        cells = []
        for v in row:
            bg, fg = colour(v, vmax)
            cells.append(f'<td class="hm" style="background:{bg};color:{fg}">{v:.1f}</td>')
        rows.append(f'<tr><th scope="row">{escape(name)}</th>{"".join(cells)}<td class="tot">{total:.1f}</td></tr>')
    conc = "".join(f'<td class="tot">{c:.1f}</td>' for c in m.concentration)
    rows.append(f'<tr class="conc"><th scope="row">memory node total</th>{conc}<td class="tot">100.0</td></tr>')
    group = f" · within a package {m.same_group_pct:.1f}%" if m.same_group_pct is not None else ""
    busiest = "package" if m.same_group_pct is not None else "memory node"
    summary = f'<p class="lr">local {m.local_pct:.1f}% · remote {m.remote_pct:.1f}%{group} · busiest {busiest} {max(m.concentration):.1f}%</p>'
    return (
        f'<figure class="map"><table class="heatmap"><caption>{escape(caption)}</caption>'
        f'<thead><tr><th class="corner">{escape(kind)} \\ memory</th>{head}<th>total</th></tr></thead>'
        f'<tbody>{"".join(rows)}</tbody></table>{summary}</figure>'
    )


def legend(vmax: float) -> str:
    stops = [0, 0.25, 0.5, 0.75, 1.0]
    cells = "".join(
        f'<span style="background:{colour(s * vmax, vmax)[0]};color:{colour(s * vmax, vmax)[1]}">{s * vmax:.1f}%</span>' for s in stops
    )
    return f'<p class="legend">colour scale (share of all DRAM accesses): {cells}</p>'
