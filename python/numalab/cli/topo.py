"""``numalab topo``: show a machine as ``numactl --hardware`` does, plus bandwidths, latencies
and links; as ``lstopo-no-graphics`` draws it (``--tree``); as JSON; list presets; export hwloc XML."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer

from numalab import machine as machines
from numalab.console.text import printable
from numalab.exceptions import UsageError
from numalab.machine.render import lstopo_tree, machine_json, numactl_hardware, numalab_extras


def topo(
    machine: Optional[str] = typer.Option(None, "--machine", help="Preset name (see --list), host (as --host), a preset .toml or hwloc .xml file, or 'synthetic:pack:2 numa:2 core:8 pu:2' (hwloc's synthetic grammar)."),
    host: bool = typer.Option(False, "--host", help="This machine, read from sysfs (the same as --machine host)."),
    input: Optional[Path] = typer.Option(None, "--input", help="An hwloc XML file (lstopo --of xml)."),
    hardware: bool = typer.Option(False, "--hardware", "-H", help="Only the numactl --hardware block, as numactl -H prints it."),
    tree: bool = typer.Option(False, "--tree", help="The object tree as lstopo-no-graphics prints it (L# logical, P# OS index)."),
    as_json: bool = typer.Option(False, "--json", help="Print the machine as JSON."),
    list_: bool = typer.Option(False, "--list", help="List the presets with a one-line description."),
    export_xml: Optional[Path] = typer.Option(None, "--export-xml", help="Write the machine as hwloc XML to this file."),
    memory_per_node_mib: Optional[int] = typer.Option(None, "--memory-per-node-mib", min=1, help="Memory of each node an hwloc XML file or synthetic description gives no size (default: 4 GiB per core, an estimate, with a warning)."),
) -> None:
    """Show a NUMA machine: numactl --hardware layout, then bandwidth, idle latency and links."""
    if list_:
        for p in machines.list_presets():
            typer.echo(printable(f"{p.name:24s} {p.description}"))
        return
    # --machine and --input have no short letters here: every other command gives -m and -i
    # numactl's meanings (--membind, --interleave).
    sources = [x for x in (machine, "host" if host else None, input) if x is not None]
    if len(sources) > 1:
        raise UsageError("give one of --machine, --host, --input")
    if not sources:
        raise UsageError("which machine? give --machine NAME (see --list), --host or --input FILE.xml")
    modes = [name for name, on in (("-H/--hardware", hardware), ("--tree", tree), ("--json", as_json), ("--export-xml", export_xml)) if on]
    if len(modes) > 1:
        raise UsageError(f"give one of {', '.join(modes)}: each prints the machine its own way")
    if input is not None:
        from numalab.machine.hwloc_xml import load_hwloc_xml

        if input.suffix == ".toml":
            raise UsageError(f"--input {input}: --input reads hwloc XML; give a preset-format .toml with --machine")

        m = load_hwloc_xml(input, memory_per_node_mib)
    else:
        m = machines.load(machines.with_memory_per_node(str(sources[0]), memory_per_node_mib))
    if export_xml is not None:
        _export(m, export_xml)
        return
    doc = json.loads(m.to_json())
    if as_json:
        typer.echo(json.dumps(machine_json(doc), indent=2, sort_keys=True))
        return
    if tree:
        from numalab.machine.hwloc_export import topology_element

        typer.echo(lstopo_tree(topology_element(doc)), nl=False)
        return
    free = None
    if sources[0] == "host":  # --host and --machine host: one machine, one numactl -H (MemFree per node)
        from numalab.machine.host import host_free_bytes

        free = host_free_bytes()
    if hardware:
        typer.echo(numactl_hardware(doc, free), nl=False)
        return
    typer.echo(printable(f"machine: {doc['name']}: {doc['description']}"))
    typer.echo(numactl_hardware(doc, free), nl=False)
    typer.echo(numalab_extras(doc), nl=False)


def _export(m: machines.Machine, path: Path) -> None:
    from numalab.machine.hwloc_xml import to_hwloc_xml

    text = to_hwloc_xml(m)
    if path.is_dir():
        raise UsageError(f"--export-xml {path}: is a directory (give a file name, e.g. {path / 'machine.xml'})")
    if not path.parent.is_dir():
        raise UsageError(f"--export-xml {path}: directory {path.parent} does not exist")
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as e:
        raise UsageError(f"--export-xml {path}: cannot write: {e.strerror}") from None
    typer.echo(f"wrote {path}", err=True)
