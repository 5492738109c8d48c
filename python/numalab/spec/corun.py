"""Co-runs: several processes in one run (docs/corun.md).

A co-run is written as a list of process groups::

    stream*8                                 eight copies of stream
    stream*2,leslie3d*2,milc*2,gemsfdtd*2    a mix, two copies each
    stream*2@500                             two copies started 500 ms after the run
    lu*2(threads=4:membind=0)                two 4-thread copies of LU, memory on node 0
    stream*2(shared=a)                       two copies mapping one segment as their region a
    stream(cpunodebind=0:split=a)+stream(cpunodebind=1:split=a)
                                             the same, each copy working on its own half of it

``NAME[*COPIES][@START_MS][(CONFIG)]``: COPIES >= 1 (default 1), START_MS >= 0 (default 0),
CONFIG a config string of the group's own placement and workload parameters (the run's
placement applies where a group gives none). Groups are separated by ``,`` (or ``+``, which a
``--configs`` list does not split). Every process is a copy of its workload with its own regions,
except the regions its group names with ``shared=REGION`` (repeatable): every process of the run
that names a region so maps one segment of that name (shared memory or a shared file mapping,
docs/corun.md §6). ``split=REGION`` shares it too and divides it: of the P processes mapping the
segment, the k-th (in the order the groups are given) works on block k of it, its threads
splitting that block (every mapper must say ``split``). The engine runs them together
(``numalab_sim::corun``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from numalab.exceptions import UsageError
from numalab.spec import config as cfg

#: The workload name a co-run's RunSpec carries (its groups name the workloads).
WORKLOAD = "corun"
SYNTAX = "NAME[*COPIES][@START_MS][(CONFIG)], e.g. stream*8 or stream*2,leslie3d*2@100"
_ITEM = re.compile(r"(?P<name>[A-Za-z0-9_.\-/]+)(?:\*(?P<copies>[^@()]*))?(?:@(?P<start>[^()]*))?(?:\((?P<config>[^()]*)\))?")
#: The most processes in one co-run (the engine's thread limit is checked when it binds).
MAX_COPIES = 4096


@dataclass(frozen=True)
class Group:
    """``copies`` processes of one workload, started at ``start_ms``, with their own config."""

    workload: str
    copies: int = 1
    start_ms: float = 0.0
    config: str = ""
    #: Regions its processes map from the run's segment of that name (``shared=REGION``).
    shared: tuple[str, ...] = ()
    #: The shared regions its processes split (``split=REGION``): each works on its own block.
    split: tuple[str, ...] = ()

    def text(self) -> str:
        out = self.workload + (f"*{self.copies}" if self.copies != 1 else "")
        if self.start_ms:
            out += f"@{self.start_ms:g}"
        items = [f"{'split' if r in self.split else 'shared'}={r}" for r in self.shared]
        config = ":".join(([self.config] if self.config else []) + items)
        return out + (f"({config})" if config else "")


#: A region name as ``shared=`` takes it (a descriptor's region names).
_REGION = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]*")


def _shared(config: str, raw: str, item: str, where: str) -> tuple[str, tuple[str, ...], tuple[str, ...]]:
    """The group's config without its ``shared=REGION`` and ``split=REGION`` items, the regions
    they share in order, and those split (``split`` implies ``shared``)."""
    keep: list[str] = []
    names: list[str] = []
    split: list[str] = []
    for part in config.split(":"):
        key, eq, value = part.partition("=")
        key = key.strip()
        if key not in ("shared", "split"):
            keep.append(part)
            continue
        name = value.strip()
        if not eq or not _REGION.fullmatch(name):
            raise UsageError(f"{where} '{raw}': item '{item}': {key} '{value}' is not a region name (expected {key}=REGION, e.g. {key}=a)")
        seen = split if key == "split" else [n for n in names if n not in split]
        if name in seen:
            raise UsageError(f"{where} '{raw}': item '{item}': region '{name}' is {key} twice")
        if name not in names:
            names.append(name)
        if key == "split":
            split.append(name)
    return ":".join(keep), tuple(names), tuple(split)


def parse(text: str, where: str = "--corun") -> tuple[Group, ...]:
    """Parse a co-run; every error is one line naming the item and the accepted form."""
    raw = str(text).strip()
    if not raw:
        raise UsageError(f"{where}: empty co-run (expected {SYNTAX})")
    groups = []
    for piece in _split(raw):
        item = piece.strip()
        m = _ITEM.fullmatch(item)
        if not item or m is None:
            raise UsageError(f"{where} '{raw}': bad item '{item}' (expected {SYNTAX})")
        copies = _copies(m.group("copies"), raw, item, where)
        start = _start(m.group("start"), raw, item, where)
        config, shared, split = _shared((m.group("config") or "").strip(), raw, item, where)
        if config:
            items = cfg.parse(config)
            if items.settings:
                bad = ", ".join(sorted(items.settings))
                raise UsageError(f"{where} '{raw}': item '{item}': {bad} applies to the whole run, not one group (give it outside --corun)")
        groups.append(Group(m.group("name"), copies, start, config, shared, split))
    if sum(g.copies for g in groups) > MAX_COPIES:
        raise UsageError(f"{where} '{raw}': {sum(g.copies for g in groups)} processes; at most {MAX_COPIES}")
    return tuple(groups)


def is_corun(workload: str) -> bool:
    """A workload text that is a co-run (``stream*8``, ``stream,milc``) rather than one name or path."""
    return not workload.endswith(".toml") and any(c in workload for c in "*,+@(")


def text(groups: tuple[Group, ...]) -> str:
    """The one canonical spelling (what a study hashes)."""
    return ",".join(g.text() for g in groups)


def from_value(value: Any, where: str = "corun") -> tuple[Group, ...]:
    """A co-run as the API and study files give it: the text, or a list of groups each a text
    or a table ``{workload, copies, start_ms, config}``."""
    if isinstance(value, str):
        return parse(value, where)
    if isinstance(value, (list, tuple)):
        out: list[Group] = []
        for i, g in enumerate(value):
            if isinstance(g, Group):
                out.append(g)
            elif isinstance(g, str):
                out.extend(parse(g, f"{where}[{i}]"))
            elif isinstance(g, dict):
                unknown = set(g) - {"workload", "copies", "start_ms", "config", "shared", "split"}
                if unknown or "workload" not in g:
                    raise UsageError(f"{where}[{i}]: expected keys workload, copies, start_ms, config, shared, split; got {', '.join(sorted(g))}")
                items = [str(g["config"])] if g.get("config") else []
                for key in ("shared", "split"):
                    names = g.get(key, [])
                    names = [names] if isinstance(names, str) else names
                    if not isinstance(names, (list, tuple)) or not all(isinstance(x, str) for x in names):
                        raise UsageError(f"{where}[{i}]: {key}: expected a region name or a list of them, got {names!r}")
                    items += [f"{key}={x}" for x in names]
                config = ":".join(items)
                piece = f"{g['workload']}*{g.get('copies', 1)}@{g.get('start_ms', 0)}" + (f"({config})" if config else "")
                out.extend(parse(piece, f"{where}[{i}]"))
            else:
                raise UsageError(f"{where}[{i}]: expected a text such as 'stream*2' or a table, got {type(g).__name__}")
        if not out:
            raise UsageError(f"{where}: empty co-run (expected {SYNTAX})")
        return tuple(out)
    raise UsageError(f"{where}: expected a text such as 'stream*2,milc*2' or a list of groups, got {type(value).__name__}")


def _split(raw: str) -> list[str]:
    """Split on , and + outside parentheses (a group's config may hold node lists: 0,1)."""
    out, depth, cur = [], 0, ""
    for ch in raw:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch in ",+" and depth == 0:
            out.append(cur)
            cur = ""
        else:
            cur += ch
    out.append(cur)
    return out


def _copies(value: str | None, raw: str, item: str, where: str) -> int:
    if value is None:
        return 1
    v = value.strip()
    if not re.fullmatch(r"[0-9]{1,6}", v) or int(v) < 1:
        raise UsageError(f"{where} '{raw}': item '{item}': copies '{value}' is not a whole number >= 1 (expected {SYNTAX})")
    return int(v)


def _start(value: str | None, raw: str, item: str, where: str) -> float:
    if value is None:
        return 0.0
    v = value.strip().removesuffix("ms")
    try:
        ms = float(v)
    except ValueError:
        ms = float("nan")
    if not ms >= 0 or ms == float("inf"):
        raise UsageError(f"{where} '{raw}': item '{item}': start '{value}' is not a number of milliseconds >= 0 (expected {SYNTAX})")
    return ms
