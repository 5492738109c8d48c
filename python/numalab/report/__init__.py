"""Reports from the results store: tables, access-map heatmaps and matplotlib figures, written as
one self-contained HTML file (or Markdown), with the figures also saved as PNG and SVG beside it.

``write_report(target, out, fmt="html", results="results", study=None)``: ``target`` is a study
file, a results directory or a ``numalab.db``.
"""

from __future__ import annotations

from pathlib import Path

from numalab.exceptions import UsageError

FORMATS = ("html", "md")


def write_report(target: str | Path, out: str | Path, fmt: str = "html", results: str | Path = "results", study: str | None = None) -> Path:
    from numalab.report import html, markdown
    from numalab.report.build import build
    from numalab.report.data import gather, resolve_target

    if fmt not in FORMATS:
        raise UsageError(f"--format: '{fmt}' is not accepted (expected one of: {', '.join(FORMATS)})")
    out = Path(out)
    db, name, study_file = resolve_target(target, results, study)
    content = build(gather(db, name, study_file), out.parent / f"{out.stem}-figures")
    text = html.render(content) if fmt == "html" else markdown.render(content, out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text, encoding="utf-8")
    return out


__all__ = ["FORMATS", "write_report"]
