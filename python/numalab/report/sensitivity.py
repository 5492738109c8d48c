"""The report's view of a study's sensitivity (``sensitivity = true``, docs/studies.md §8): which
conclusions flip when the estimated numbers move within their stated ranges. ``numalab study``
writes ``<study>.sensitivity.json`` beside the store; the speedup table marks the flipping cells
with :data:`MARK` and a section lists every comparison."""

from __future__ import annotations

import json
from dataclasses import dataclass
from html import escape
from pathlib import Path
from typing import Any

MARK = "†"
MARK_NOTE = "† the winner against the baseline flips within the stated ranges of the estimated numbers (see Sensitivity)"


@dataclass(frozen=True)
class Row:
    case: str
    label: str
    baseline: str
    speedup: float | None
    low: float | None
    high: float | None
    flipped_by: list[str]
    speedups: dict[str, float] | None = None  # every variant's speedup

    @property
    def conclusion(self) -> str:
        """``holds``, or where it flips: each flipping variant with the speedup it gives."""
        if not self.flipped_by:
            return "holds"
        at = self.speedups or {}
        return "flips: " + ", ".join(f"{v} ({at[v]:.3f})" if at.get(v) is not None else v for v in self.flipped_by)

    @property
    def range(self) -> str:
        if self.low is not None and self.low == self.high:
            return f"{_num(self.low)} (no variant moves it)"
        return f"{_num(self.low)} - {_num(self.high)}"


@dataclass(frozen=True)
class View:
    rows: list[Row]
    parameters: list[dict[str, Any]]
    variants: int
    note: str | None = None

    @property
    def flipped(self) -> set[tuple[str, str]]:
        return {(r.case, r.label) for r in self.rows if r.flipped_by}


def load(db: Path, study: str) -> View | None:
    """The sensitivity stored beside ``db`` for ``study``, or None when the study has none."""
    path = Path(db).parent / f"{study}.sensitivity.json"
    if not path.is_file():
        return None
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return View([], [], 0, f"{path} could not be read; run the study again to redo its sensitivity")
    rows = [Row(c["case"], c["config"], c["baseline"], c.get("speedup"), c.get("speedup_low"), c.get("speedup_high"),
                list(c.get("flipped_by") or []), dict(c.get("speedups") or {})) for c in doc.get("comparisons", [])]
    return View(rows, list(doc.get("parameters", [])), max(0, len(doc.get("variants", [])) - 1), doc.get("note"))


def _num(x: float | None) -> str:
    return "-" if x is None else f"{x:.3f}"


def _intro(v: View) -> str:
    return (f"Each estimated number ({len(v.parameters)}) set to the low and the high end of its stated range, one at a "
            f"time, then all low and all high together ({v.variants} variants, first seed). A conclusion flips when some "
            "variant makes the other side win (speedup = time(baseline) / time(configuration) crosses 1); the variants that "
            "flip it are named with the speedup each gives: they are the numbers to measure.")


def html_section(v: View) -> str:
    out = ['<h2 id="sensitivity">Sensitivity</h2>']
    if v.note:
        out.append(f'<p class="meta">{escape(v.note)}</p>')
    if not v.rows:
        return "".join(out)
    flips = sum(1 for r in v.rows if r.flipped_by)
    out.append(f'<p class="meta">{escape(_intro(v))} {flips} of {len(v.rows)} conclusions flip.</p>')
    flip = ' class="down"'
    body = "".join(
        f'<tr><th scope="row">{escape(r.case)}</th><td style="text-align:left">{escape(r.label)} vs {escape(r.baseline)}</td>'
        f"<td>{_num(r.speedup)}</td><td>{escape(r.range)}</td>"
        f'<td style="text-align:left"{flip if r.flipped_by else ""}>{escape(r.conclusion)}</td></tr>'
        for r in v.rows
    )
    out.append('<div class="scroll"><table><thead><tr><th>case</th><th>comparison</th><th>speedup</th><th>range</th>'
               f"<th>conclusion</th></tr></thead><tbody>{body}</tbody></table></div>")
    params = "".join(
        f"<li><code>{escape(p['id'])}</code> {'x' if p.get('factor') else escape(str(p.get('value')))} "
        f"[{p['low']:g}, {p['high']:g}]: {escape(p.get('source', ''))}</li>"
        for p in v.parameters
    )
    out.append(f"<details><summary>estimated numbers and their ranges</summary><ul>{params}</ul></details>")
    return "".join(out)


def md_section(v: View, text: Any) -> list[str]:
    """Markdown lines; ``text`` escapes user strings as the rest of the Markdown report does."""
    lines = ["## Sensitivity", ""]
    if v.note:
        lines += [text(v.note), ""]
    if not v.rows:
        return lines
    flips = sum(1 for r in v.rows if r.flipped_by)
    lines += [f"{_intro(v)} {flips} of {len(v.rows)} conclusions flip.", "",
              "| case | comparison | speedup | range | conclusion |", "|---|---|---|---|---|"]
    lines += [f"| {text(r.case)} | {text(r.label)} vs {text(r.baseline)} | {_num(r.speedup)} | {text(r.range)} | "
              f"{text(r.conclusion)} |" for r in v.rows]
    lines += ["", "Estimated numbers and their ranges:", ""]
    lines += [f"- `{p['id']}` {'x' if p.get('factor') else p.get('value')} [{p['low']:g}, {p['high']:g}]: {text(p.get('source', ''))}"
              for p in v.parameters]
    return lines + [""]
