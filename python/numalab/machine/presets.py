"""Machine presets: TOML files in ``presets/``, each number with its source in a comment beside it.

A preset is a :class:`numalab_model::spec::MachineSpec` written in TOML (see
``crates/numalab-model/src/spec.rs``); loading resolves it in Rust into an explicit, validated
:class:`numalab._core.Machine`.
"""

from __future__ import annotations

import difflib
import json
import re
from dataclasses import dataclass
from pathlib import Path

from numalab._core import Machine, TopologyError
from numalab.exceptions import UsageError
from numalab.machine.limits import spec_bad_value, spec_too_large
from numalab.machine.tomlfile import load_toml, where

PRESET_DIR = Path(__file__).parent / "presets"


@dataclass(frozen=True)
class PresetInfo:
    name: str
    description: str
    path: Path


def preset_names() -> list[str]:
    return sorted(p.stem for p in PRESET_DIR.glob("*.toml"))


def list_presets() -> list[PresetInfo]:
    out = []
    for name in preset_names():
        path = PRESET_DIR / f"{name}.toml"
        data, _ = load_toml(path)
        out.append(PresetInfo(name, str(data.get("description", "")), path))
    return out


def load_spec_file(path: Path) -> Machine:
    """Load a machine spec TOML file; errors name the file, line and key."""
    data, text = load_toml(path)
    too_large = spec_bad_value(data) or spec_too_large(data)
    if too_large is not None:
        key, reason = too_large
        raise UsageError(f"{where(path, text, key)}: {key}: {reason}")
    try:
        # [estimates] (ranges for `numalab sensitivity`, study/uncertainty.py) is not part of the machine
        return Machine.from_spec_json(json.dumps({k: v for k, v in data.items() if k != "estimates"}))
    except TopologyError as e:
        key = e.args[1] if len(e.args) > 1 else ""
        raise TopologyError(f"{where(path, text, key)}: {e.args[0]}", key) from None


#: What a preset name can be (the files in presets/): a name of any other shape is unknown without
#: asking the file system, which refuses names longer than NAME_MAX (255) with an error of its own.
_PRESET_NAME = re.compile(r"[A-Za-z0-9._-]{1,64}")


def load_preset(name: str) -> Machine:
    path = PRESET_DIR / f"{name}.toml"
    if not _PRESET_NAME.fullmatch(name) or not path.is_file():
        names = preset_names()
        close = difflib.get_close_matches(name[:64], names, n=1, cutoff=0.5)
        hint = f"; did you mean {close[0]}?" if close else ""
        shown = name if len(name) <= 60 else f"{name[:57]}... ({len(name)} characters)"
        raise UsageError(f"unknown machine preset '{shown}' (`numalab topo --list` lists all {len(names)}){hint}")
    return load_spec_file(path)
