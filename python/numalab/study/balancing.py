"""Automatic NUMA balancing settings as a study axis.

A study writes balancing three ways, all normalised to :class:`Balancing`:

* ``false`` / ``true`` or ``"off"`` / ``"on"``;
* a config string as ``numalab compare`` takes it: ``"on:scan-period-min-ms=100:scan-size-mb=128"``
  (a leading ``balancing`` item is accepted too);
* a table with the kernel's knob names: ``{ enabled = true, scan_period_min_ms = 100 }``.

Knobs left out keep the kernel's default (linux-numa.md: 1000 / 1000 / 60000 ms, 256 MB), so they
are left out of the resolved configuration too and do not change its hash.
"""

from __future__ import annotations

import re
from typing import Any, Optional

from pydantic import BaseModel, ConfigDict, Field, model_validator

KNOBS = ("scan_delay_ms", "scan_period_min_ms", "scan_period_max_ms", "scan_size_mb")
_ON = ("on", "true", "yes", "1", "balancing")
_OFF = ("off", "false", "no", "0")
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s)?\s*$")
_SIZE = re.compile(r"^\s*(\d+)\s*(mb|mib|gb|gib)?\s*$", re.IGNORECASE)


def _knob_value(name: str, value: Any) -> Any:
    """Kernel knobs are whole ms / MB; ``"1s"`` and ``"1GiB"`` are accepted at this edge only."""
    if isinstance(value, bool) or not isinstance(value, str):
        return value
    if name.endswith("_ms"):
        m = _DURATION.match(value)
        if not m:
            raise ValueError(f"{name}: '{value}' is not a duration (expected whole ms, e.g. 500 or \"500ms\" or \"2s\")")
        ms = float(m.group(1)) * (1000 if m.group(2) == "s" else 1)
        return int(ms) if ms == int(ms) else ms
    m = _SIZE.match(value)
    if not m:
        raise ValueError(f"{name}: '{value}' is not a size (expected whole MB, e.g. 128 or \"128MiB\")")
    unit = (m.group(2) or "mb").lower()
    return int(m.group(1)) * (1024 if unit in ("gb", "gib") else 1)


def parse_items(text: str) -> dict[str, Any]:
    """``"on:scan-size-mb=128"`` -> ``{"enabled": True, "scan_size_mb": 128}``."""
    out: dict[str, Any] = {}
    for item in filter(None, (i.strip() for i in text.split(":"))):
        key, eq, value = item.partition("=")
        key = key.strip().lstrip("-").replace("-", "_")
        if not eq and key.lower() in _ON:
            out["enabled"] = True
        elif not eq and key.lower() in _OFF:
            out["enabled"] = False
        elif key == "balancing" and value.strip().lower() in _ON + _OFF:
            out["enabled"] = value.strip().lower() in _ON
        elif key in KNOBS and eq:
            out[key] = value.strip()
            out.setdefault("enabled", True)
        else:
            knobs = ", ".join(k.replace("_", "-") for k in KNOBS)
            raise ValueError(f"balancing item '{item}' is not accepted (expected on, off, or one of {knobs} =VALUE)")
    return out


class Balancing(BaseModel):
    """Automatic NUMA balancing: on or off, and the scanner knobs (``kernel.numa_balancing_*``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    enabled: bool = Field(False, description="numa_balancing on (true) or off (false).")
    scan_delay_ms: Optional[int] = Field(None, ge=0, description="Delay before the first scan of a new process, ms (kernel default 1000).")
    scan_period_min_ms: Optional[int] = Field(None, ge=0, description="Shortest scan period, ms (kernel default 1000).")
    scan_period_max_ms: Optional[int] = Field(None, ge=0, description="Longest scan period, ms (kernel default 60000).")
    scan_size_mb: Optional[int] = Field(None, ge=1, description="Address space scanned per period, MB (kernel default 256).")

    @model_validator(mode="before")
    @classmethod
    def _spellings(cls, value: Any) -> Any:
        if isinstance(value, bool):
            return {"enabled": value}
        if isinstance(value, str):
            value = parse_items(value)
            if not value:
                raise ValueError("empty balancing setting (expected on, off, or on:scan-size-mb=128 ...)")
        if isinstance(value, dict):
            return {k: (_knob_value(k, v) if k in KNOBS else v) for k, v in value.items()}
        return value

    @model_validator(mode="after")
    def _consistent(self) -> "Balancing":
        if not self.enabled and any(getattr(self, k) is not None for k in KNOBS):
            raise ValueError("scan settings are given but balancing is off (set enabled = true or drop them)")
        lo, hi = self.scan_period_min_ms, self.scan_period_max_ms
        if lo is not None and hi is not None and lo > hi:
            raise ValueError(f"scan_period_min_ms ({lo}) is above scan_period_max_ms ({hi})")
        return self

    @classmethod
    def __get_pydantic_json_schema__(cls, core_schema: Any, handler: Any) -> dict[str, Any]:
        # The before-validator also takes booleans and config strings; say so in the schema.
        schema = handler(core_schema)
        return {
            "anyOf": [
                {"type": "boolean"},
                {"type": "string", "examples": ["off", "on", "on:scan-period-min-ms=100:scan-size-mb=128"]},
                schema,
            ],
            "description": "Automatic NUMA balancing: true/false, a config string, or a table of knobs.",
        }

    def resolved(self) -> dict[str, Any]:
        """The configuration's ``balancing``: only what was set, so defaults do not change hashes."""
        out: dict[str, Any] = {"enabled": self.enabled}
        out.update({k: getattr(self, k) for k in KNOBS if getattr(self, k) is not None})
        return out


def config_items(resolved: dict[str, Any]) -> list[str]:
    """Config items for ``placement.parse_config``: nothing when off (off is the engine's default),
    else ``balancing`` and one ``scan-...=N`` item per knob set."""
    if not resolved.get("enabled"):
        return []
    return ["balancing"] + [f"{k.replace('_', '-')}={resolved[k]}" for k in KNOBS if k in resolved]


def label(resolved: dict[str, Any]) -> str:
    """Short description for tables: ``off``, ``on``, ``on scan-period 100-500 ms``."""
    if not resolved.get("enabled"):
        return "off"
    parts = ["on"]
    lo, hi = resolved.get("scan_period_min_ms"), resolved.get("scan_period_max_ms")
    if lo is not None or hi is not None:
        parts.append(f"scan-period {'' if lo is None else lo}-{'' if hi is None else hi} ms")
    if "scan_delay_ms" in resolved:
        parts.append(f"delay {resolved['scan_delay_ms']} ms")
    if "scan_size_mb" in resolved:
        parts.append(f"size {resolved['scan_size_mb']} MB")
    return " ".join(parts[:1]) + (" " + ", ".join(parts[1:]) if parts[1:] else "")
