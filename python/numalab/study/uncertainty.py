"""Estimated numbers and their stated ranges: the ``[estimates]`` tables of machine presets and
workload descriptors, and how one setting of them turns into a machine or a workload.

A preset's table names numbers of the preset file by key path, with the range the number may
take in its own unit (docs/machines.md §3.6)::

    [estimates]
    "latency.local_ns" = { low = 80.0, high = 90.0, source = "2-socket Intel 80-90 ns" }
    "latency.matrix_ns[0][1]" = { low = 127.5, high = 144.5, source = "NUMA factor 1.5-1.7" }
    "latency.loaded_curve" = { low = 0.5, high = 2.0, source = "..." }

A cell of a numeric array stands for every cell of that array holding the same value (all pairs
at that distance keep one latency). ``latency.loaded_curve`` is the one curve-valued entry: its
``low``/``high`` scale the curve's rise above idle (``factor - 1``; 1 = as written).

A workload descriptor's table names numbers of the *resolved* workload, and its ``low``/``high``
are factors on them (the descriptor's numbers are expressions of the parameters; 1 = as
written): ``phases.<phase>.cycles``, ``phases.<phase>.mlp``,
``phases.<phase>.access.<region>.<rd|wr|passes>``, ``...access.<region>.cached.<rd|wr|window>``;
``*`` for a phase or a region takes them all.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable

from numalab.exceptions import UsageError

CURVE = "latency.loaded_curve"
ACCESS_FIELDS = {"rd": "rd", "wr": "wr", "passes": "passes"}
CACHED_FIELDS = {"rd": "rd", "wr": "wr", "window": "window_bytes"}
_SEGMENT = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)((?:\[\d+\])*)$")


@dataclass(frozen=True)
class Parameter:
    """One estimated number of one machine or workload, with its stated range."""

    kind: str  # "machine" or "workload"
    owner: str  # the machine or workload as runs name it
    path: str
    low: float
    high: float
    source: str
    value: float | None = None  # the number as written; None where low/high are factors

    @property
    def id(self) -> str:
        return f"{self.owner}:{self.path}"

    @property
    def factor(self) -> bool:
        return self.value is None

    def describe(self) -> str:
        unit = "x" if self.factor else ""
        nominal = "1" if self.factor else f"{self.value:g}"
        return f"{self.id} = {nominal}{unit} [{self.low:g}{unit}, {self.high:g}{unit}]"


def _entry(where: str, key: str, e: Any) -> tuple[float, float, str]:
    if not isinstance(e, dict):
        raise UsageError(f"{where}: [estimates] '{key}': expected {{ low = ..., high = ..., source = \"...\" }}")
    extra = sorted(set(e) - {"low", "high", "source"})
    if extra:
        raise UsageError(f"{where}: [estimates] '{key}': unknown key '{extra[0]}' (accepted: low, high, source)")
    for k in ("low", "high"):
        v = e.get(k)
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            raise UsageError(f"{where}: [estimates] '{key}': {k} must be a finite number, got {v!r}")
    if not isinstance(e.get("source"), str) or not e["source"].strip():
        raise UsageError(f"{where}: [estimates] '{key}': source must say where the range comes from")
    if not 0 < e["low"] <= e["high"]:
        raise UsageError(f"{where}: [estimates] '{key}': needs 0 < low <= high, got low {e['low']}, high {e['high']}")
    return float(e["low"]), float(e["high"]), e["source"].strip()


# ---------------------------------------------------------------- machines


def _path(where: str, key: str) -> list[str | int]:
    out: list[str | int] = []
    for part in key.split("."):
        m = _SEGMENT.match(part)
        if not m:
            raise UsageError(f"{where}: [estimates] '{key}': not a key path (e.g. latency.local_ns, links[0].gbps, latency.matrix_ns[0][1])")
        out.append(m.group(1))
        out.extend(int(i) for i in re.findall(r"\[(\d+)\]", m.group(2)))
    return out


def _get(data: Any, path: list[str | int]) -> Any:
    for seg in path:
        if isinstance(seg, int):
            if not isinstance(data, list) or seg >= len(data):
                raise KeyError(seg)
            data = data[seg]
        else:
            if not isinstance(data, dict) or seg not in data:
                raise KeyError(seg)
            data = data[seg]
    return data


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def machine_parameters(owner: str, data: dict[str, Any], where: str) -> list[Parameter]:
    """The ``[estimates]`` of one machine spec (a preset's parsed TOML), each checked against the
    number it names."""
    table = data.get("estimates") or {}
    if not isinstance(table, dict):
        raise UsageError(f"{where}: [estimates] must be a table")
    out = []
    for key, e in table.items():
        low, high, source = _entry(where, key, e)
        if key == CURVE:
            curve = (data.get("latency") or {}).get("loaded_curve")
            if not curve:
                raise UsageError(f"{where}: [estimates] '{key}': the machine has no latency.loaded_curve to vary")
            if not low <= 1.0 <= high:
                raise UsageError(f"{where}: [estimates] '{key}': the range scales the curve's rise, so it must contain 1, got [{low}, {high}]")
            out.append(Parameter("machine", owner, key, low, high, source))
            continue
        path = _path(where, key)
        try:
            value = _get(data, path)
        except KeyError:
            raise UsageError(f"{where}: [estimates] '{key}': the machine has no such number") from None
        if not _number(value):
            raise UsageError(f"{where}: [estimates] '{key}': names {type(value).__name__}, not a number")
        if not low <= value <= high:
            raise UsageError(f"{where}: [estimates] '{key}': the value {value} is outside its range [{low}, {high}]")
        out.append(Parameter("machine", owner, key, low, high, source, float(value)))
    return out


def set_machine_value(data: dict[str, Any], p: Parameter, value: float) -> None:
    """Set ``p`` to ``value`` in a machine spec (in place): a factor on the curve's rise, or the
    number itself together with every number equal to it at the same place in the other
    elements of the first array the path enters (all cells of a latency matrix at that
    distance, every link of that bandwidth)."""
    if p.path == CURVE:
        lat = data["latency"]
        lat["loaded_curve"] = [[u, 1.0 + (f - 1.0) * value] for u, f in lat["loaded_curve"]]
        return
    path = _path(p.path, p.path)
    old = _get(data, path)
    first = next((i for i, seg in enumerate(path) if isinstance(seg, int)), None)
    if first is None:
        _get(data, path[:-1])[path[-1]] = value
        return

    def walk(node: Any, rest: list[str | int]) -> Any:
        if not rest:
            return value if _number(node) and node == old else node
        seg = rest[0]
        if isinstance(seg, int):  # any element, not only the one the path names
            return [walk(x, rest[1:]) for x in node] if isinstance(node, list) else node
        if isinstance(node, dict) and seg in node:
            node = dict(node)
            node[seg] = walk(node[seg], rest[1:])
        return node

    parent = _get(data, path[: first - 1])
    parent[path[first - 1]] = walk(parent[path[first - 1]], path[first:])


@lru_cache(maxsize=64)
def _machine_file(path: str) -> str:
    """JSON of a parsed preset-format file (parsed once per process)."""
    from numalab.machine.tomlfile import load_toml

    data, _ = load_toml(Path(path))
    return json.dumps(data)


def machine_spec(machine: str) -> tuple[dict[str, Any], str] | None:
    """A copy of the spec data of a preset or preset .toml file; None for machines that have no
    such file (``host``, hwloc XML, synthetic descriptions): they state no estimates."""
    from numalab.machine.presets import PRESET_DIR

    path = Path(machine) if machine.endswith(".toml") else PRESET_DIR / f"{machine}.toml"
    if "/" in machine and not machine.endswith(".toml") or not path.is_file():
        from numalab.spec.run import load_machine

        load_machine(machine)  # an unknown name fails here with the usual one-line error
        return None
    return json.loads(_machine_file(str(path))), str(path)


def machine_estimates(machine: str) -> list[Parameter]:
    found = machine_spec(machine)
    if found is None:
        return []
    data, where = found
    return machine_parameters(machine, data, where)


def varied_machine(machine: str, settings: list[tuple[Parameter, float]]) -> Any:
    """The machine with each (parameter, value) applied, resolved and validated by the model."""
    from numalab._core import Machine, TopologyError

    data, where = machine_spec(machine)  # type: ignore[misc]
    for p, v in settings:
        set_machine_value(data, p, v)
    data.pop("estimates", None)
    try:
        return Machine.from_spec_json(json.dumps(data))
    except TopologyError as e:
        names = ", ".join(f"{p.path}={v:g}" for p, v in settings)
        raise UsageError(f"{where}: with {names}: {e.args[0]}") from None


# ---------------------------------------------------------------- workloads


def _workload_path(where: str, key: str) -> tuple[str, str | None, str]:
    """``phases.<phase>.<field>`` or ``phases.<phase>.access.<region>[.cached].<field>`` ->
    (phase, region or None, field)."""
    parts = key.split(".")
    fields = ("cycles", "mlp")
    if len(parts) == 3 and parts[0] == "phases" and parts[2] in fields:
        return parts[1], None, parts[2]
    if len(parts) == 5 and parts[0] == "phases" and parts[2] == "access" and parts[4] in ACCESS_FIELDS:
        return parts[1], parts[3], parts[4]
    if len(parts) == 6 and parts[0] == "phases" and parts[2] == "access" and parts[4] == "cached" and parts[5] in CACHED_FIELDS:
        return parts[1], parts[3], "cached." + parts[5]
    raise UsageError(
        f"{where}: [estimates] '{key}': not a workload number (accepted: phases.<phase>.cycles|mlp, "
        "phases.<phase>.access.<region>.rd|wr|passes, phases.<phase>.access.<region>.cached.rd|wr|window; * for any phase or region)"
    )


def _targets(w: dict[str, Any], phase: str, region: str | None, fld: str) -> list[tuple[dict[str, Any], str]]:
    """(dict, key) of every number of the resolved workload ``w`` that a path names."""
    names = [r["name"] for r in w["regions"]]
    out = []
    for ph in w["phases"]:
        if phase not in ("*", ph["name"]):
            continue
        if region is None:
            if ph.get(fld) is not None:
                out.append((ph, fld))
            continue
        for a in ph["accesses"]:
            if region not in ("*", names[a["region"]]):
                continue
            if fld.startswith("cached."):
                if a.get("cached"):
                    out.append((a["cached"], CACHED_FIELDS[fld.split(".", 1)[1]]))
            else:
                out.append((a, ACCESS_FIELDS[fld]))
    return out


def workload_parameters(owner: str, table: dict[str, Any], where: str) -> list[Parameter]:
    out = []
    for key, e in table.items():
        low, high, source = _entry(where, key, e)
        _workload_path(where, key)
        if not low <= 1.0 <= high:
            raise UsageError(f"{where}: [estimates] '{key}': workload ranges are factors on the number as written, so they must contain 1, got [{low}, {high}]")
        out.append(Parameter("workload", owner, key, low, high, source))
    return out


def workload_estimates(workload: str) -> list[Parameter]:
    from numalab.workload import descriptor

    desc, path, _ = descriptor.load(workload)
    return workload_parameters(workload, dict(desc.estimates), str(path))


def check_workload_paths(params: list[Parameter], w: dict[str, Any]) -> None:
    """Every workload parameter must name at least one number of the resolved workload."""
    for p in params:
        phase, region, fld = _workload_path(p.owner, p.path)
        if not _targets(w, phase, region, fld):
            phases = ", ".join(ph["name"] for ph in w["phases"])
            regions = ", ".join(r["name"] for r in w["regions"])
            raise UsageError(f"workload {p.owner}: [estimates] '{p.path}': names no number of the workload (phases: {phases}; regions: {regions})")


def workload_adjuster(settings: list[tuple[Parameter, float]]) -> Callable[[dict[str, Any]], None] | None:
    """A function scaling the resolved workload's numbers by each setting's factor, or None."""
    if not settings:
        return None

    def adjust(w: dict[str, Any]) -> None:
        from numalab.workload.descriptor import SHARED_FRACTION_MAX

        for p, factor in settings:
            phase, region, fld = _workload_path(p.owner, p.path)
            for d, k in _targets(w, phase, region, fld):
                # a phase's own misses in flight stay a count of at least one
                d[k] = max(1.0, d[k] * factor) if k == "mlp" else d[k] * factor
                if d.get("pattern") == "shared" and k in ("rd", "wr"):
                    # a shared sweep's traffic is a fraction (descriptor.SHARED_FRACTION_MAX): past one
                    # DRAM read per thread the range's end means every thread reads from DRAM
                    d[k] = min(d[k], SHARED_FRACTION_MAX)

    return adjust
