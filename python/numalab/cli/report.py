"""``numalab report STUDY_OR_DB -o report.html``: tables, access-map heatmaps and figures from
the results store, as one self-contained HTML file or Markdown."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from numalab.cli.study import RESULTS


def report(
    target: Path = typer.Argument(..., metavar="STUDY_OR_DB", help="A study file (.toml), a results directory or a numalab.db."),
    output: Path = typer.Option(Path("report.html"), "--output", "-o", help="File to write (its directory must exist); figures go to <name>-figures/ beside it."),
    fmt: Optional[str] = typer.Option(None, "--format", "-f", help="html (self-contained, opens offline) or md (Markdown); default: md for a .md output, else html."),
    results: Path = RESULTS,
    study: Optional[str] = typer.Option(None, "--study", help="Study to report when the store holds several."),
) -> None:
    """Write a report of a study's results: speedups with confidence intervals, access maps,
    pages per node, balancing timelines and the scatter plots the study asks for."""
    from numalab.console.text import printable
    from numalab.report import write_report

    out = write_report(target, output, fmt, results, study, warn=lambda m: typer.echo(f"numalab: warning: {printable(m)}", err=True))
    typer.echo(f"wrote {out} (figures in {out.parent / (out.stem + '-figures')})")
