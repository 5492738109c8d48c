"""``numalab topo``: show a machine as ``numactl --hardware`` does, plus bandwidths, latencies
and links; list presets; export hwloc XML."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer

from numalab import machine as machines
from numalab.exceptions import UsageError
from numalab.machine.render import numactl_hardware, numalab_extras


def topo(
    machine: Optional[str] = typer.Option(None, "--machine", "-m", help="Preset name (see --list) or a preset .toml file."),
    host: bool = typer.Option(False, "--host", help="This machine, read from sysfs."),
    input: Optional[Path] = typer.Option(None, "--input", "-i", help="An hwloc XML file (lstopo --of xml)."),
    as_json: bool = typer.Option(False, "--json", help="Print the machine as JSON."),
    list_: bool = typer.Option(False, "--list", help="List the presets with a one-line description."),
    export_xml: Optional[Path] = typer.Option(None, "--export-xml", help="Write the machine as hwloc XML to this file."),
) -> None:
    """Show a NUMA machine: numactl --hardware layout, then bandwidth, idle latency and links."""
    if list_:
        for p in machines.list_presets():
            typer.echo(f"{p.name:24s} {p.description}")
        return
    chosen = [x for x in (machine, "host" if host else None, input) if x is not None]
    if len(chosen) > 1:
        raise UsageError("give one of --machine, --host, --input")
    if not chosen:
        raise UsageError("which machine? give --machine NAME (see --list), --host or --input FILE.xml")
    m = machines.load(chosen[0])
    doc = json.loads(m.to_json())
    if export_xml is not None:
        from numalab.machine.hwloc_xml import to_hwloc_xml

        export_xml.write_text(to_hwloc_xml(m), encoding="utf-8")
        typer.echo(f"wrote {export_xml}", err=True)
        return
    if as_json:
        typer.echo(json.dumps(doc, indent=2, sort_keys=True))
        return
    free = None
    if host:
        from numalab.machine.host import host_free_bytes

        free = host_free_bytes()
    typer.echo(f"machine: {doc['name']}: {doc['description']}")
    typer.echo(numactl_hardware(doc, free), nl=False)
    typer.echo(numalab_extras(doc), nl=False)
