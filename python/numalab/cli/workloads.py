"""``numalab workloads``: the workload library, or one workload's parameters and classes."""

from __future__ import annotations

from typing import Optional

import typer

from numalab.workload import descriptor


def workloads(name: Optional[str] = typer.Argument(None, help="A workload to describe.")) -> None:
    """List the workload library, or show one workload's parameters, classes and source."""
    if name is None:
        for n in descriptor.library_names():
            desc, _, _ = descriptor.load(n)
            typer.echo(f"{n:10s} {desc.description}")
        return
    desc, path, _ = descriptor.load(name)
    typer.echo(f"{desc.name}: {desc.description}")
    typer.echo(f"file: {path}")
    typer.echo("parameters (--name value):")
    for k, v in desc.params.items():
        allowed = desc.choices.get(k)
        extra = f"  (one of: {', '.join(map(str, allowed))})" if allowed else ""
        typer.echo(f"  --{k.replace('_', '-')} {v!r}{extra}")
    if desc.classes:
        typer.echo(f"classes: {', '.join(desc.classes)}")
    if desc.versions:
        typer.echo(f"versions (--npb-version): {', '.join(descriptor.versions(desc))} (default {desc.version})")
    if desc.source:
        typer.echo(f"source: {desc.source}")
