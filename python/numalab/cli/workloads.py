"""``numalab workloads``: the workload library, or one workload's parameters and classes."""

from __future__ import annotations

import json
from typing import Any, Optional

import typer

from numalab.console.text import printable
from numalab.spec.run import NPB_DEFAULT, NPB_IMPLEMENTATIONS
from numalab.workload import descriptor


def workloads(
    name: Optional[str] = typer.Argument(None, help="A workload to describe."),
    as_json: bool = typer.Option(False, "--json", help="Print the list (name, description) or the workload (parameters with defaults, choices, classes, versions) as JSON."),
) -> None:
    """List the workload library, or show one workload's parameters, classes and source."""
    if name is None:
        listed = [(n, descriptor.load(n)[0].description) for n in descriptor.library_names()]
        if as_json:
            typer.echo(json.dumps([{"name": n, "description": d} for n, d in listed], indent=2))
            return
        for n, d in listed:
            typer.echo(printable(f"{n:10s} {d}"))
        typer.echo(f"NPB implementations (--npb): {', '.join(NPB_IMPLEMENTATIONS)} (default {NPB_DEFAULT}; "
                   "NAS's Fortran releases, RWCP's NPB2.3-omp-C, SNU's NPB3.3-OMP-C)")
        return
    desc, path, _ = descriptor.load(name)
    if as_json:
        typer.echo(json.dumps(_document(desc, path), indent=2, sort_keys=True))
        return
    typer.echo(printable(f"{desc.name}: {desc.description}"))
    typer.echo(f"file: {path}")
    typer.echo("parameters (--name value):")
    for k, v in desc.params.items():
        allowed = desc.choices.get(k)
        extra = f"  (one of: {', '.join(map(str, allowed))})" if allowed else ""
        typer.echo(printable(f"  --{k.replace('_', '-')} {v!r}{extra}"))
    if desc.classes:
        typer.echo(printable(f"classes: {', '.join(desc.classes)}"))
    if desc.versions:
        typer.echo(f"implementations (--npb): {', '.join(descriptor.versions(desc))} (default {desc.version})")
    typer.echo(printable(_timer_text(desc)))
    if desc.source:
        typer.echo(printable(f"source: {desc.source}"))


def _document(desc: descriptor.WorkloadDesc, path: Any) -> dict[str, Any]:
    """What the text shows, as data: parameters with their defaults (options are ``--`` + the
    name with ``-`` for ``_``), allowed values, minimums, class tables and NPB releases."""
    return {
        "name": desc.name,
        "description": desc.description,
        "file": str(path),
        "parameters": desc.params,
        "choices": desc.choices,
        "minimum": desc.minimum,
        "classes": desc.classes,
        "versions": descriptor.versions(desc) if desc.versions else [],
        "default_version": desc.version if desc.versions else None,
        "source": desc.source or None,
        "timed_phases": _timed_phases(desc),
    }


def _timed_phases(desc: descriptor.WorkloadDesc) -> list[str] | None:
    """Phases inside the program's own timer, in program order (None: no timer, the program
    reports its whole run; docs/workloads.md §1.2)."""
    if not any(s.timed for s in desc.program):
        return None
    return list(dict.fromkeys(p for s in desc.program if s.timed for p in s.phases))


def _timer_text(desc: descriptor.WorkloadDesc) -> str:
    timed = _timed_phases(desc)
    if timed is None:
        return "timer: none (the time it reports is the whole run)"
    return f"timer: {', '.join(timed)} (reported_time_s; the whole run is time_s)"
