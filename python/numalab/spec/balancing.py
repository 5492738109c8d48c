"""Automatic NUMA balancing as a run asks for it: on or off, and the scanner knobs.

The knobs (names, defaults, ranges) are defined once, in the engine (``_core.balancing_knobs()``,
``crates/numalab-sim/src/input.rs``), which also checks them; this module only reads the ways a
user writes them:

* ``true``/``false`` or ``on``/``off``;
* config items as ``numalab compare`` takes them: ``balancing:scan-period-min-ms=100:scan-size-mb=128``
  (``on:...`` in a study's ``balancing`` key);
* a table with the kernel's names: ``{ enabled = true, scan_period_min_ms = 100 }``.

Durations accept ``"2s"``/``"500ms"`` and sizes ``"1GiB"``/``"128MiB"``, converted here, at the
edge. Knobs left out keep the kernel's default and stay out of the canonical configuration, so
they do not change a run's hash.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from numalab._core import balancing_knobs
from numalab.exceptions import UsageError

KNOBS: dict[str, dict[str, Any]] = {k["name"]: k for k in balancing_knobs()}
ON = ("on", "true", "yes", "1")
OFF = ("off", "false", "no", "0")
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s)?\s*$")
_SIZE = re.compile(r"^\s*(\d+)\s*(mb|mib|gb|gib)?\s*$", re.IGNORECASE)


def option(name: str) -> str:
    """``scan_size_mb`` -> ``--scan-size-mb``."""
    return "--" + name.replace("_", "-")


def knob_value(name: str, value: Any) -> int:
    """A knob value as the kernel stores it (whole ms or MB, an unsigned int)."""
    if isinstance(value, bool):
        raise UsageError(f"{option(name)}: expected a whole number, got {value!r}")
    if isinstance(value, float):
        if value != int(value):
            raise UsageError(f"{option(name)}: expected a whole number, got {value!r}")
        value = int(value)
    if isinstance(value, str):
        if name.endswith("_ms"):
            m = _DURATION.match(value)
            if not m:
                raise UsageError(f"{option(name)}: '{value}' is not a duration (expected whole ms, e.g. 500, \"500ms\" or \"2s\")")
            ms = float(m.group(1)) * (1000 if m.group(2) == "s" else 1)
            if ms != int(ms):
                raise UsageError(f"{option(name)}: '{value}' is not a whole number of ms")
            value = int(ms)
        else:
            m = _SIZE.match(value)
            if not m:
                raise UsageError(f"{option(name)}: '{value}' is not a size (expected whole MB, e.g. 128, \"128MiB\" or \"1GiB\")")
            value = int(m.group(1)) * (1024 if (m.group(2) or "").lower() in ("gb", "gib") else 1)
    if not isinstance(value, int) or not 0 <= value < 2**32:
        # the kernel keeps each knob in an unsigned int; the engine checks each knob's own range
        raise UsageError(f"{option(name)}: expected a whole number 0..4294967295, got {value!r}")
    return value


def on_off(value: Any, what: str) -> bool:
    if isinstance(value, bool):
        return value
    v = str(value).strip().lower()
    if v in ON:
        return True
    if v in OFF:
        return False
    raise UsageError(f"{what}: '{value}' is not on or off")


@dataclass(frozen=True)
class Balancing:
    """``kernel.numa_balancing`` and the knobs the user set (the rest keep the kernel's defaults)."""

    enabled: bool = False
    knobs: tuple[tuple[str, int], ...] = ()
    explain: bool = field(default=False, compare=False)

    @classmethod
    def parse(cls, value: Any) -> "Balancing":
        """Any of the spellings in the module docstring."""
        if isinstance(value, Balancing):
            return value
        if isinstance(value, bool):
            return cls(enabled=value)
        if isinstance(value, str):
            items = [i.strip() for i in value.split(":") if i.strip()]
            if not items:
                raise UsageError("empty balancing setting (expected on, off, or on:scan-size-mb=128 ...)")
            table: dict[str, Any] = {}
            for item in items:
                key, eq, v = item.partition("=")
                key = key.strip().lstrip("-").lower()
                if not eq and key in ON + ("balancing",):
                    table["enabled"] = True
                elif not eq and key in OFF:
                    table["enabled"] = False
                elif key == "balancing":
                    table["enabled"] = on_off(v, "balancing")
                elif key.replace("-", "_") in KNOBS and eq:
                    table[key.replace("-", "_")] = v.strip()
                else:
                    names = ", ".join(option(k)[2:] for k in KNOBS)
                    raise UsageError(f"balancing item '{item}' is not accepted (expected on, off, or one of {names} =VALUE)")
            if "enabled" not in table:
                table["enabled"] = True  # a knob alone means balancing on
            value = table
        if isinstance(value, dict):
            unknown = sorted(set(value) - set(KNOBS) - {"enabled"})
            if unknown:
                raise UsageError(f"balancing: unknown key '{unknown[0]}' (expected enabled, {', '.join(KNOBS)})")
            enabled = on_off(value.get("enabled", False), "balancing.enabled")
            knobs = tuple((k, knob_value(k, value[k])) for k in KNOBS if k in value and value[k] is not None)
            return cls(enabled=enabled, knobs=knobs)
        raise UsageError(f"balancing: {value!r} is not on/off, a config string or a table of knobs")

    def with_knobs(self, **knobs: Any) -> "Balancing":
        merged = dict(self.knobs)
        merged.update({k: knob_value(k, v) for k, v in knobs.items() if v is not None})
        return Balancing(self.enabled, tuple((k, merged[k]) for k in KNOBS if k in merged), self.explain)

    def value(self, name: str) -> int:
        return dict(self.knobs).get(name, KNOBS[name]["default"])

    def canonical(self) -> dict[str, Any]:
        """Only what was set, so defaults do not change hashes."""
        return {"enabled": self.enabled, **dict(self.knobs)}

    def engine(self) -> dict[str, Any]:
        return {"enabled": self.enabled, "explain": self.explain, **{k: self.value(k) for k in KNOBS}}

    def describe(self, kernel: str) -> dict[str, Any]:
        """The result document's ``placement.balancing``."""
        if not self.enabled:
            return {"enabled": False}
        return {"enabled": True, "kernel": kernel, **{k: self.value(k) for k in KNOBS}}

    def items(self) -> list[str]:
        """Config items that write this setting (nothing when off and no knob is set)."""
        if not self.enabled:
            return []
        return ["balancing"] + [f"{k.replace('_', '-')}={v}" for k, v in self.knobs]

    def label(self) -> str:
        """Short description for tables: ``off``, ``on``, ``on scan-period 100-500 ms, size 128 MB``."""
        return label(self.canonical())


def label(resolved: dict[str, Any]) -> str:
    """``label`` of a canonical balancing dict (as stored in a run's configuration)."""
    if not resolved.get("enabled"):
        return "off"
    parts = []
    lo, hi = resolved.get("scan_period_min_ms"), resolved.get("scan_period_max_ms")
    if lo is not None or hi is not None:
        parts.append(f"scan-period {'' if lo is None else lo}-{'' if hi is None else hi} ms")
    if "scan_delay_ms" in resolved:
        parts.append(f"delay {resolved['scan_delay_ms']} ms")
    if "scan_size_mb" in resolved:
        parts.append(f"size {resolved['scan_size_mb']} MB")
    return "on" + (" " + ", ".join(parts) if parts else "")
