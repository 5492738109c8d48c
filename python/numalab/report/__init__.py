"""Reports from the results store: tables, access-map heatmaps and matplotlib figures, written as
one self-contained HTML file (or Markdown), with the figures also saved as PNG and SVG beside it.

``write_report(target, out, fmt=None, results="results", study=None)``: ``target`` is a study
file, a results directory or a ``numalab.db``; ``fmt`` defaults to ``md`` for a ``.md`` output
and ``html`` otherwise. The output's directory must exist; nothing is computed before the output
path is known to be writable.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from numalab.console.progress import Progress
from numalab.exceptions import UsageError

FORMATS = ("html", "md")


def output_format(out: str | Path, fmt: str | None) -> str:
    if fmt is None:
        return "md" if Path(out).suffix.lower() in (".md", ".markdown") else "html"
    if fmt not in FORMATS:
        raise UsageError(f"--format: '{fmt}' is not accepted (expected one of: {', '.join(FORMATS)})")
    return fmt


def steps(**kwargs: Any) -> Progress:
    """A report's progress: reading the store and writing the file, plus what ``build`` adds
    (each case, timeline and scatter plot); shown once the report has taken a second."""
    return Progress("report", 2, **{"delay_s": 1.0, **kwargs})


def write_report(target: str | Path, out: str | Path, fmt: str | None = None, results: str | Path = "results", study: str | None = None,
                 progress: Any = None, warn: Any = None) -> Path:
    """``warn(message)`` is told of each run left out (its stored document is damaged); the
    report itself says so too."""
    from numalab.report import html, markdown
    from numalab.report.build import build
    from numalab.report.data import gather, resolve_target
    from numalab.results.frame import writable_file
    from numalab.results.outfile import check_output, write_text_atomic

    fmt = output_format(out, fmt)
    out = Path(out)
    writable_file(out, "--output", f"report.{fmt}")
    _regular(out)
    figures = out.parent / f"{out.stem}-figures"
    if figures.exists() and not figures.is_dir():
        raise UsageError(f"--output {out}: its figures go to {figures}, which is a file (move it away or choose another name)")
    progress = progress or steps()
    try:
        db, name, study_file = resolve_target(target, results, study)
        check_output(out, "--output", db)
        data = gather(db, name, study_file)
        for skipped in data.skipped if warn else ():
            warn(f"{db}: {skipped}; left out of the report")
        progress.step("read the store")
        try:
            content = build(data, figures, progress)
        except OSError as e:
            raise UsageError(f"--output {out}: cannot write the figures in {figures} ({e.strerror or e})") from None
        text = html.render(content) if fmt == "html" else markdown.render(content, out)
        write_text_atomic(out, text, "--output")
        progress.step("wrote the report")
    finally:
        progress.stop()
    return out


def _regular(out: Path) -> None:
    """A report is a file with its figures in a directory beside it: a device or a pipe (``-o
    /dev/stdout``) has no such place."""
    import stat

    try:
        mode = out.stat().st_mode
    except OSError:
        return
    if not stat.S_ISREG(mode):
        raise UsageError(f"--output {out}: is not a regular file (a report is a file, with its figures in a directory beside it; "
                         "give a file name, e.g. report.html)")


__all__ = ["FORMATS", "output_format", "steps", "write_report"]
