"""Machines: presets, the host, hwloc XML files.

``load(spec)`` accepts a preset name (``opteron6282-4p``), ``host``, a preset-format ``.toml``
file or an hwloc ``.xml`` file, and returns a validated :class:`numalab._core.Machine`.
"""

from __future__ import annotations

from pathlib import Path

from numalab._core import Machine
from numalab.exceptions import UsageError
from numalab.machine.presets import list_presets, load_preset, load_spec_file, preset_names


def load(spec: str | Path) -> Machine:
    """Load a machine by preset name, ``host``, or a ``.toml`` / ``.xml`` file path."""
    s = str(spec)
    if not s.strip():
        raise UsageError("empty machine name: give a preset name (numalab topo --list), host, or a .toml or .xml file")
    if s == "host":
        from numalab.machine.host import from_host

        return from_host()
    if s.endswith(".xml"):
        from numalab.machine.hwloc_xml import load_hwloc_xml

        return load_hwloc_xml(Path(s))
    if s.endswith(".toml"):
        return load_spec_file(Path(s))
    if "/" in s or Path(s).exists():
        # A path that is neither kind: say so, rather than "unknown preset '/tmp/x'".
        raise UsageError(f"{s}: a machine file must be a preset-format .toml or an hwloc .xml (lstopo --of xml)")
    return load_preset(s)


__all__ = ["Machine", "load", "load_preset", "load_spec_file", "list_presets", "preset_names"]
