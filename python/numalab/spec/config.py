"""The config mini-language: one run's options in one string, items joined by ``:``.

It writes every option of ``numalab sim`` (``numalab compare --configs``, study ``placement``
keys, ``numalab.simulate(..., "interleave=all")``)::

    default | first-touch          localalloc | local         interleave=NODES
    membind=NODES                  preferred=NODE            preferred-many=NODES
    membind-balancing[=on|off]     latency-balanced          (docs/allocation.md §12)
    latbal-threshold-ns=N          latbal-window-ms=N        latbal-sample-us=N
    weighted-interleave=NODES      weights=0=5,1=2           cpunodebind=NODES
    physcpubind=CPUS               omp-proc-bind=spread      omp-places=cores
    balancing[=on|off|0-3]         scan-delay-ms=N           scan-period-min-ms=N
    scan-period-max-ms=N           scan-size-mb=N            kernel=2.6.32|3.13|6.1|6.13
    hot-threshold-ms=N             promote-rate-limit-mbps=N demotion-enabled[=on|off]
    weighted-interleave-auto[=on|off]
    thp=always|madvise|never       seed=N                    sample-rate=R
    corun=stream*2+milc*2          pin-copies[=on|off]       (co-runs, spec/corun.py)

Each setting has one spelling, the one ``numalab sim`` takes (``--demotion-enabled on`` is
``demotion-enabled=on``; ``--weights 0=5,1=2`` is ``weights=0=5,1=2``); the older spellings
``demotion`` and weights as ``0:5,1:2`` are accepted too (``ALIASES``, ``parse_weights``).

Anything else written ``name=value`` is a workload parameter (``init=serial``, ``threads=16``).
``interleave=all:init=serial`` is one configuration. An option given twice, or two memory
policies, is an error: the string would not say which one applies.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field

from numalab.exceptions import UsageError
from numalab.spec.balancing import KNOBS, SWITCH_ALIASES, SWITCHES

#: config item -> numactl policy name (numactl's ``--membind`` is the kernel's ``bind``).
POLICY_ITEMS = {
    "interleave": "interleave",
    "weighted-interleave": "weighted-interleave",
    "membind": "bind",
    "preferred": "preferred",
    "preferred-many": "preferred-many",
}
FLAG_POLICIES = {"default": "default", "first-touch": "default", "localalloc": "local", "local": "local",
                 "latency-balanced": "latency-balanced"}
#: The latency-balanced policy's settings (docs/allocation.md §12); "latbal", not "lb", which is
#: ``numalab lb``'s task load balancing.
LATBAL_ITEMS = ("latbal-threshold-ns", "latbal-window-ms", "latbal-sample-us")
PLACEMENT_ITEMS = ("cpunodebind", "physcpubind", "omp-proc-bind", "omp-places", "weights", "membind-balancing")
#: numactl's ``-b`` with ``--membind`` (MPOL_F_NUMA_BALANCING): ``membind=0-1:membind-balancing``.
FLAG_PLACEMENTS = ("membind-balancing",)
#: Items that may stand alone (meaning on): balancing and the tiering switches (docs/tiering.md).
FLAG_SETTINGS = ("balancing", "pin-copies") + tuple(SWITCHES)
SETTING_ITEMS = ("balancing", "kernel", "thp", "seed", "sample-rate", "noise", "omp-wait-policy", "npb", "corun", "pin-copies") + LATBAL_ITEMS + tuple(SWITCHES) + tuple(k.replace("_", "-") for k in KNOBS)
#: The option names an item may be confused with, for "did you mean".
KNOWN = tuple(POLICY_ITEMS) + tuple(FLAG_POLICIES) + PLACEMENT_ITEMS + SETTING_ITEMS
#: Other spellings of an item -> its one spelling (the CLI option's name without ``--``).
ALIASES = {**SWITCH_ALIASES, "npb-version": "npb"}


@dataclass
class Items:
    """A parsed config string: each item once, by kind."""

    policy: tuple[str, str | None] | None = None  # (numactl policy name, node string)
    placement: dict[str, str] = field(default_factory=dict)  # cpunodebind, physcpubind, omp-*, weights
    settings: dict[str, str] = field(default_factory=dict)  # balancing, scan-*, kernel, thp, seed, sample-rate
    params: dict[str, str] = field(default_factory=dict)  # workload parameters


def split_configs(text: str) -> list[str]:
    """``--configs`` is comma separated, but node lists hold commas too (``interleave=0,1``):
    a piece that does not start with an item name is glued to the previous one."""
    out: list[str] = []
    for piece in text.split(","):
        piece = piece.strip()
        head = piece.split(":")[0].split("=")[0].strip()
        starts_item = head and not head[0].isdigit() and head[0] not in "!+"
        if out and not starts_item:
            out[-1] += "," + piece
        elif piece:
            out.append(piece)
    return out


def parse(text: str) -> Items:
    """Parse one config string; every error names the string and the item."""
    items = [i.strip() for i in _outside_parens(str(text), ":") if i.strip()]
    if not items:
        raise UsageError("empty config (expected e.g. default, interleave=all, membind=0, init=serial)")
    out = Items()
    seen: set[str] = set()
    # weights=0=5,1=2 holds ':'-free text, but the CLI spelling 0:5,1:2 splits into items: rejoin.
    for item in _rejoin_weights(items):
        key, eq, value = item.partition("=")
        key, value = key.strip().lstrip("-").lower(), value.strip()
        key = ALIASES.get(key, key)
        where = f"config '{shown(text)}'"
        if key in seen:
            raise UsageError(f"{where}: '{key}' is given twice (give each option once)")
        seen.add(key)
        if key in FLAG_POLICIES or key in POLICY_ITEMS:
            if out.policy is not None:
                raise UsageError(f"{where}: two memory policies ({_policy_item(out.policy)} and {key}); give at most one")
            if key in FLAG_POLICIES:
                if eq:
                    raise UsageError(f"{where}: {key} takes no value")
                out.policy = (FLAG_POLICIES[key], None)
            else:
                if not value:
                    raise UsageError(f"{where}: {key} needs a node list ({key}=NODES, e.g. {key}=all)")
                out.policy = (POLICY_ITEMS[key], value)
        elif key in PLACEMENT_ITEMS or key in SETTING_ITEMS:
            if not eq and key not in FLAG_SETTINGS + FLAG_PLACEMENTS:
                raise UsageError(f"{where}: {key} needs a value ({key}=...)")
            (out.placement if key in PLACEMENT_ITEMS else out.settings)[key] = value if eq else "on"
        elif eq and key:
            close = difflib.get_close_matches(key, KNOWN, n=1, cutoff=0.8)
            if close:
                raise UsageError(f"{where}: unknown option '{key}'; did you mean {close[0]}?")
            out.params[key.replace("-", "_")] = value
        else:
            raise UsageError(f"{where}: unknown item '{item}' (expected a placement such as interleave=all, or name=value)")
    return out


def shown(text: object) -> str:
    """The config as an error message shows it: on one line (control characters escaped)."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in str(text))


def _outside_parens(text: str, sep: str) -> list[str]:
    """``text`` split on ``sep`` outside parentheses (a co-run group's own config, corun=lu*2(threads=4:membind=0))."""
    out, depth, cur = [], 0, ""
    for ch in text:
        depth += (ch == "(") - (ch == ")")
        if ch == sep and depth == 0:
            out.append(cur)
            cur = ""
        else:
            cur += ch
    return out + [cur]


def _rejoin_weights(items: list[str]) -> list[str]:
    out: list[str] = []
    for item in items:
        if out and out[-1].startswith("weights=") and "=" not in item and item.lower() not in KNOWN:
            out[-1] += ":" + item
        else:
            out.append(item)
    return out


def _policy_item(policy: tuple[str, str | None]) -> str:
    name, nodes = policy
    option = {v: k for k, v in POLICY_ITEMS.items()}.get(name, name)
    return f"{option}={nodes}" if nodes else {"local": "localalloc"}.get(name, name)


_DIGITS = re.compile(r"[0-9]{1,4}")


def parse_weights(text: str) -> tuple[tuple[int, int], ...]:
    """``0=5,1=2`` (or ``0:5,1:2``) -> ((0, 5), (1, 2)); the range (1..255) is the engine's rule."""
    out: dict[int, int] = {}
    for piece in str(text).split(","):
        node, sep, w = piece.replace("=", ":").partition(":")
        shown = piece if len(piece) <= 40 else piece[:37] + "..."
        # ASCII digits only (str.isdigit also takes '５' and '²'), and short enough to be a node
        # index (below 2^12) and a weight (1..255, checked by the engine) before int() reads them.
        if not sep or not _DIGITS.fullmatch(node.strip()) or not _DIGITS.fullmatch(w.strip()):
            raise UsageError(f"weights: bad item '{shown}' (expected NODE=WEIGHT in ASCII digits, e.g. 0=5,1=2; weights 1 to 255)")
        if int(node) in out:
            raise UsageError(f"weights: node {int(node)} is given twice")
        out[int(node)] = int(w)
    return tuple(sorted(out.items()))
