"""Machines: presets, the host, hwloc XML files.

``load(spec)`` accepts a preset name (``opteron6282-4p``), ``host``, a preset-format ``.toml``
file, an hwloc ``.xml`` file or an hwloc synthetic description (``synthetic:pack:2 core:8 pu:2``),
and returns a validated :class:`numalab._core.Machine`. An XML file or synthetic description may
carry ``?memory-per-node-mib=N`` (what ``--memory-per-node-mib`` adds): the memory of each node
whose size it does not give.
"""

from __future__ import annotations

from pathlib import Path

from numalab._core import Machine
from numalab.exceptions import UsageError
from numalab.machine.presets import list_presets, load_preset, load_spec_file, preset_names


#: The machine-name suffix that gives nodes without a size in the source their memory.
MEMORY_OPTION = "?memory-per-node-mib="


def with_memory_per_node(name: str, mib: int | None) -> str:
    """``name`` with ``--memory-per-node-mib`` folded in (so a RunSpec's machine says it)."""
    if mib is None:
        return name
    if mib <= 0:
        raise UsageError(f"--memory-per-node-mib must be a whole number of MiB above 0, got {mib}")
    return f"{name}{MEMORY_OPTION}{mib}"


def load(spec: str | Path) -> Machine:
    """Load a machine by preset name, ``host``, a ``.toml`` / ``.xml`` file path or ``synthetic:...``."""
    s = str(spec)
    if not s.strip():
        raise UsageError("empty machine name: give a preset name (numalab topo --list), host, or a .toml or .xml file")
    s, _, mib_text = s.partition(MEMORY_OPTION)
    mib = None
    if mib_text:
        if not mib_text.isascii() or not mib_text.isdigit() or int(mib_text) == 0:
            raise UsageError(f"{spec}: memory-per-node-mib={mib_text}: expected a whole number of MiB above 0")
        mib = int(mib_text)
        if not (s.startswith("synthetic:") or s.endswith(".xml")):
            raise UsageError(
                f"{spec}: --memory-per-node-mib applies to hwloc XML files and synthetic descriptions "
                "(presets, .toml files and host give every node's memory)"
            )
    if s.startswith("synthetic:"):
        from numalab.machine.synthetic import load_synthetic

        return load_synthetic(s, mib)
    if s == "host":
        from numalab.machine.host import from_host

        return from_host()
    if s.endswith(".xml"):
        from numalab.machine.hwloc_xml import load_hwloc_xml

        return load_hwloc_xml(Path(s), mib)
    if s.endswith(".toml"):
        return load_spec_file(Path(s))
    if "/" in s or _exists(s):
        # A path that is neither kind: say so, rather than "unknown preset '/tmp/x'".
        raise UsageError(f"{s}: a machine file must be a preset-format .toml or an hwloc .xml (lstopo --of xml)")
    return load_preset(s)


def _exists(name: str) -> bool:
    """Whether a file of this name exists; a name the file system refuses (too long) does not."""
    try:
        return Path(name).exists()
    except OSError:
        return False


__all__ = ["MEMORY_OPTION", "Machine", "load", "with_memory_per_node", "load_preset", "load_spec_file", "list_presets", "preset_names"]
