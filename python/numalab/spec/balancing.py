"""Automatic NUMA balancing as a run asks for it: ``kernel.numa_balancing`` (0-3), the scanner
and memory-tiering knobs, and the tiering switches beside it (``demotion_enabled``, weighted
interleave's ``auto`` weights; docs/tiering.md).

The knobs (names, defaults, ranges) are defined once, in the engine (``_core.balancing_knobs()``,
``crates/numalab-sim/src/input.rs``), which also checks them; this module only reads the ways a
user writes them:

* ``true``/``false``, ``on``/``off``, or the sysctl's value ``0``-``3`` (``2`` = memory tiering
  only, ``3`` = both; ``tiering`` is ``2``);
* config items as ``numalab compare`` takes them: ``balancing:scan-period-min-ms=100:scan-size-mb=128``
  (``on:...`` in a study's ``balancing`` key);
* a table with the kernel's names: ``{ enabled = true, scan_period_min_ms = 100 }``,
  ``{ numa_balancing = 2, demotion_enabled = true }``;
* ``demotion-enabled`` and ``weighted-interleave-auto`` items (``on:demotion-enabled``,
  ``2:demotion-enabled:hot-threshold-ms=500``); alone they leave ``numa_balancing`` at 0.

Durations accept ``"2s"``/``"500ms"`` and sizes ``"1GiB"``/``"128MiB"``, converted here, at the
edge. Knobs left out keep the kernel's default and stay out of the canonical configuration, so
they do not change a run's hash.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Any

from numalab._core import balancing_knobs
from numalab.exceptions import UsageError

KNOBS: dict[str, dict[str, Any]] = {k["name"]: k for k in balancing_knobs()}
ON = ("on", "true", "yes", "1")
OFF = ("off", "false", "no", "0")
#: ``kernel.numa_balancing`` values beyond on/off: (NUMA_BALANCING_NORMAL, NUMA_BALANCING_MEMORY_TIERING).
MODES = {"2": (False, True), "tiering": (False, True), "3": (True, True)}
#: Knobs that belong to memory-tiering mode (the rest drive the scanner).
TIERING_KNOBS = ("hot_threshold_ms", "promote_rate_limit_mbps")
SCAN_KNOBS = tuple(k for k in KNOBS if k not in TIERING_KNOBS)
#: Switches beside numa_balancing: config item -> engine/table key.
SWITCHES = {"demotion-enabled": "demotion_enabled", "weighted-interleave-auto": "weighted_interleave_auto"}
#: Older spellings of a switch item (``--demotion on`` was the CLI's), accepted as the switch.
SWITCH_ALIASES = {"demotion": "demotion-enabled"}
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


def mode(value: Any, what: str) -> tuple[bool, bool]:
    """``kernel.numa_balancing`` as (normal, memory tiering) from any of its spellings."""
    if isinstance(value, bool):
        return value, False
    v = str(value).strip().lower()
    if v in MODES:
        return MODES[v]
    try:
        return on_off(v, what), False
    except UsageError:
        raise UsageError(f"{what}: '{value}' is not on or off, nor a numa_balancing value 0-3 (2 = memory tiering, 3 = both)") from None


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
    """``kernel.numa_balancing`` (bit 0 ``enabled``, bit 1 ``tiering``), the knobs the user set (the
    rest keep the kernel's defaults), ``demotion_enabled`` and weighted interleave's auto weights."""

    enabled: bool = False
    knobs: tuple[tuple[str, int], ...] = ()
    explain: bool = field(default=False, compare=False)
    tiering: bool = False
    demotion: bool = False
    wi_auto: bool = False

    @classmethod
    def parse(cls, value: Any) -> "Balancing":
        """Any of the spellings in the module docstring."""
        if isinstance(value, Balancing):
            return value
        if isinstance(value, bool):
            return cls(enabled=value)
        if isinstance(value, int):
            value = str(value)
        if isinstance(value, str):
            items = [i.strip() for i in value.split(":") if i.strip()]
            if not items:
                raise UsageError("empty balancing setting (expected on, off, 0-3, or on:scan-size-mb=128 ...)")
            table: dict[str, Any] = {}
            for item in items:
                key, eq, v = item.partition("=")
                key = key.strip().lstrip("-").lower()
                key = SWITCH_ALIASES.get(key, key)
                if not eq and (key in ON + OFF + ("balancing",) or key in MODES):
                    table["numa_balancing"] = "on" if key == "balancing" else key
                elif key == "balancing" or key == "numa-balancing":
                    table["numa_balancing"] = v.strip()
                elif key in SWITCHES:
                    table[SWITCHES[key]] = on_off(v, key) if eq else True
                elif key.replace("-", "_") in KNOBS and eq:
                    table[key.replace("-", "_")] = v.strip()
                else:
                    names = ", ".join(option(k)[2:] for k in KNOBS)
                    raise UsageError(f"balancing item '{item}' is not accepted (expected on, off, 0-3, demotion-enabled, weighted-interleave-auto, or one of {names} =VALUE)")
            if "numa_balancing" not in table:
                # A knob alone turns on what it belongs to; the switches alone turn on nothing.
                table["enabled"] = any(k in table for k in SCAN_KNOBS)
                table["memory_tiering"] = any(k in table for k in TIERING_KNOBS)
            value = table
        if isinstance(value, dict):
            allowed = set(KNOBS) | {"enabled", "numa_balancing", "memory_tiering"} | set(SWITCHES.values())
            unknown = sorted(set(value) - allowed)
            if unknown:
                raise UsageError(f"balancing: unknown key '{unknown[0]}' (expected enabled, numa_balancing, demotion_enabled, weighted_interleave_auto, {', '.join(KNOBS)})")
            if "numa_balancing" in value:
                normal, tiering = mode(value["numa_balancing"], "balancing.numa_balancing")
            else:
                normal = on_off(value.get("enabled", False), "balancing.enabled")
                tiering = on_off(value.get("memory_tiering", False), "balancing.memory_tiering")
            knobs = tuple((k, knob_value(k, value[k])) for k in KNOBS if k in value and value[k] is not None)
            return cls(enabled=normal, knobs=knobs, tiering=tiering,
                       demotion=on_off(value.get("demotion_enabled", False), "balancing.demotion_enabled"),
                       wi_auto=on_off(value.get("weighted_interleave_auto", False), "balancing.weighted_interleave_auto"))
        raise UsageError(f"balancing: {value!r} is not on/off, 0-3, a config string or a table of knobs")

    @property
    def mode(self) -> int:
        """``kernel.numa_balancing``: 0-3."""
        return int(self.enabled) | (int(self.tiering) << 1)

    @property
    def scanning(self) -> bool:
        """The NUMA scanner runs (either bit of numa_balancing)."""
        return self.enabled or self.tiering

    def with_mode(self, value: Any, what: str = "--balancing") -> "Balancing":
        normal, tiering = mode(value, what)
        return replace(self, enabled=normal, tiering=tiering)

    def with_knobs(self, **knobs: Any) -> "Balancing":
        merged = dict(self.knobs)
        merged.update({k: knob_value(k, v) for k, v in knobs.items() if v is not None})
        return replace(self, knobs=tuple((k, merged[k]) for k in KNOBS if k in merged))

    def value(self, name: str) -> int:
        return dict(self.knobs).get(name, KNOBS[name]["default"])

    def canonical(self) -> dict[str, Any]:
        """Only what was set, so defaults do not change hashes."""
        out: dict[str, Any] = {"enabled": self.enabled, **dict(self.knobs)}
        if self.tiering:
            out["memory_tiering"] = True
        if self.demotion:
            out["demotion_enabled"] = True
        if self.wi_auto:
            out["weighted_interleave_auto"] = True
        return out

    def engine(self) -> dict[str, Any]:
        return {"enabled": self.enabled, "explain": self.explain, "memory_tiering": self.tiering,
                "demotion_enabled": self.demotion, "weighted_interleave_auto": self.wi_auto,
                **{k: self.value(k) for k in KNOBS}}

    def describe(self, kernel: str) -> dict[str, Any]:
        """The result document's ``placement.balancing``."""
        switches = {k: True for k, on in (("demotion_enabled", self.demotion), ("weighted_interleave_auto", self.wi_auto)) if on}
        if not self.scanning:
            return {"enabled": False, **switches}
        knobs = SCAN_KNOBS + (TIERING_KNOBS if self.tiering else ())
        mode_item = {"numa_balancing": self.mode} if self.tiering else {}
        return {"enabled": self.enabled, **mode_item, "kernel": kernel, **{k: self.value(k) for k in knobs}, **switches}

    def items(self) -> list[str]:
        """Config items that write this setting (nothing when all is off and no knob is set)."""
        out = []
        if self.scanning:
            out.append("balancing" if not self.tiering else f"balancing={self.mode}")
            out += [f"{k.replace('_', '-')}={v}" for k, v in self.knobs]
        out += [item for item, on in (("demotion-enabled", self.demotion), ("weighted-interleave-auto", self.wi_auto)) if on]
        return out

    def label(self) -> str:
        """Short description for tables: ``off``, ``on``, ``on scan-period 100-500 ms, size 128 MB``."""
        return label(self.canonical())


def label(resolved: dict[str, Any]) -> str:
    """``label`` of a canonical balancing dict (as stored in a run's configuration)."""
    extra = [name for key, name in (("demotion_enabled", "demotion"), ("weighted_interleave_auto", "wi-auto")) if resolved.get(key)]
    normal, tiering = bool(resolved.get("enabled")), bool(resolved.get("memory_tiering"))
    if not normal and not tiering:
        return "off" + (" + " + " + ".join(extra) if extra else "")
    parts = []
    lo, hi = resolved.get("scan_period_min_ms"), resolved.get("scan_period_max_ms")
    if lo is not None or hi is not None:
        parts.append(f"scan-period {'' if lo is None else lo}-{'' if hi is None else hi} ms")
    if "scan_delay_ms" in resolved:
        parts.append(f"delay {resolved['scan_delay_ms']} ms")
    if "scan_size_mb" in resolved:
        parts.append(f"size {resolved['scan_size_mb']} MB")
    if "hot_threshold_ms" in resolved:
        parts.append(f"hot {resolved['hot_threshold_ms']} ms")
    if "promote_rate_limit_mbps" in resolved:
        parts.append(f"promote {resolved['promote_rate_limit_mbps']} MB/s")
    name = {(True, False): "on", (False, True): "tiering", (True, True): "on+tiering"}[(normal, tiering)]
    return name + (" " + ", ".join(parts) if parts else "") + (" + " + " + ".join(extra) if extra else "")
