"""Task graphs by name or file: the generators of Charm++'s benchmarks (``lb_test``,
``kneighbor``, ``jacobi2d``), built by the Rust core, and user graphs read from a file.

A graph is described by its name and its parameters (``GraphSpec``); ``build()`` makes the
``_core.TaskGraph``. Parameter names, defaults and minimums are declared once here
(``GENERATORS``), so the CLI, study files and the docs agree; the defaults follow study S3's
settings (docs/taskgraph.md §2): lb_test and kNeighbor with 200 objects, jacobi2D with 100.

Files (formats in docs/taskgraph.md §4), whatever their name: a file whose first record is
``lbdump <version> <n_pes>`` is the text form of a Charm++ LB dump, any other a numalab edge list
(``obj, id, load_ns, state_bytes`` and ``edge, a, b, msgs, bytes`` records). The core names the
file, line and reason of any malformed line.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from numalab.exceptions import UsageError

#: name -> parameter -> (type, default, minimum). A default of None leaves the parameter to the
#: core's generator (crates/numalab-tasks/src/gen.rs), which documents it; ``seed`` is each run's.
GENERATORS: dict[str, dict[str, tuple[type, Any, float | None]]] = {
    # tests/charm++/load_balancing/lb_test: loads min + (max - min) U^4, RandGraph topology.
    "lb_test": {"n_objects": (int, 200, 2), "min_us": (float, None, 0), "max_us": (float, None, 0), "topology": (str, None, None),
                "ratio": (float, None, 0), "msg_bytes": (int, None, 0), "state_bytes": (int, None, 0)},
    # examples/charm++/load_balancing/kNeighbor: ring, k neighbours each side, load ~ N^2.
    "kneighbor": {"n_objects": (int, 200, 1), "k": (int, 3, 1), "msg_bytes": (int, 8192, 0), "calc_per_step": (int, None, 1),
                  "ns_per_op": (float, None, 0), "base_ns": (float, None, 0), "state_bytes": (int, None, 0)},
    # examples/charm++/jacobi2d-2d-decomposition: (nx / block) x (ny / block) chares.
    "jacobi2d": {"nx": (int, 1000, 1), "ny": (int, 1000, 1), "block": (int, 100, 1), "ns_per_point": (float, None, 0),
                 "jitter": (float, None, 0)},
}
#: What each generator takes as positional arguments (the rest go as keyword parameters).
POSITIONAL = {"lb_test": ("n_objects",), "kneighbor": ("n_objects", "k", "msg_bytes"), "jacobi2d": ("nx", "ny", "block")}


@dataclass(frozen=True)
class GraphSpec:
    """A graph generator and its typed parameters, or a file (``params`` empty)."""

    name: str
    params: tuple[tuple[str, Any], ...] = ()

    @property
    def is_file(self) -> bool:
        return self.name not in GENERATORS

    def as_dict(self) -> dict[str, Any]:
        return dict(self.params)

    def describe(self) -> str:
        return self.name + "".join(f" {k}={v}" for k, v in self.params)


def names() -> list[str]:
    return list(GENERATORS)


def graph_spec(name: str, given: dict[str, Any] | None = None) -> GraphSpec:
    """Check a graph name (or file) and its parameters; typed values with defaults filled in."""
    given = dict(given or {})
    if not name or not str(name).strip():
        raise UsageError(f"--graph: empty (expected one of {', '.join(GENERATORS)}, or a graph file)")
    name = str(name)
    if name not in GENERATORS:
        path = Path(name)
        if not path.is_file():
            what = "no such file" if ("/" in name or "." in name) else "unknown graph"
            raise UsageError(f"--graph: '{name}': {what} (expected one of {', '.join(GENERATORS)}, or a graph file: "
                             "a numalab edge list or the text form of a Charm++ LB dump)")
        if given:
            raise UsageError(f"--graph {name}: a graph file takes no parameters (got {', '.join(sorted(given))})")
        return GraphSpec(name)
    table = GENERATORS[name]
    unknown = sorted(set(given) - set(table))
    if unknown:
        raise UsageError(f"graph {name}: unknown parameter {', '.join(unknown)} (accepted: {', '.join(table)})")
    out = []
    for key, (kind, default, minimum) in table.items():
        if key in given or default is not None:
            out.append((key, coerce(f"graph {name}: {key}", given.get(key, default), kind, minimum)))
    objects = _objects(name, dict(out))
    if objects > MAX_OBJECTS:
        raise UsageError(f"graph {name}: {objects} objects; numalab simulates graphs of at most {MAX_OBJECTS} objects, "
                         "as many as a graph file may declare (a million objects take seconds per iteration)")
    return GraphSpec(name, tuple(out))


#: Objects of a generated graph, as of a graph file (crates/numalab-tasks/src/parse.rs:
#: MAX_FILE_OBJECTS): ten million took over a minute and 2 GB for two iterations.
MAX_OBJECTS = 1_000_000


def _objects(name: str, p: dict[str, Any]) -> int:
    """Objects the generator will make (jacobi2d: one chare per block of the grid)."""
    if name == "jacobi2d":
        return -(-p["nx"] // p["block"]) * -(-p["ny"] // p["block"])
    return int(p.get("n_objects", 0))


def coerce(what: str, value: Any, kind: type, minimum: float | None = None) -> Any:
    """``value`` (a string from the command line, or a TOML number) as ``kind``, >= ``minimum``."""
    if kind is str:
        return str(value)
    if isinstance(value, bool):
        raise UsageError(f"{what}: expected a number, got {value!r}")
    try:
        # Text in ASCII only (int() and float() also read '５' and '٣'), and no longer than a
        # number the core can take, so nothing huge is built from it.
        if isinstance(value, str) and not (value.isascii() and len(value) <= 40):
            raise ValueError
        if kind is int:
            if isinstance(value, float) and not value.is_integer():
                raise ValueError
            v: Any = int(str(value).replace("_", "")) if isinstance(value, str) else int(value)
            if abs(v) >= 1 << 63:
                raise UsageError(f"{what}: expected an integer below 2^63, got {_short(str(value))}")
        else:
            v = float(value)
            if v != v or v in (float("inf"), float("-inf")):
                raise ValueError
    except (TypeError, ValueError, OverflowError):
        noun = "an integer" if kind is int else "a number"
        raise UsageError(f"{what}: expected {noun}, got '{_short(str(value))}'") from None
    if minimum is not None and v < minimum:
        raise UsageError(f"{what}: must be >= {minimum:g}, got {v}")
    return v


def _short(text: str) -> str:
    """A value as quoted in a message: long ones cut, so the message stays one line."""
    return text if len(text) <= 40 else text[:37] + "..."


def file_kind(path: Path) -> str:
    """``lb-dump`` when the first record is ``lbdump <version> <n_pes>``, else ``edge-list``."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                s = line.split("#")[0].replace(",", " ").split()
                if s:
                    return "lb-dump" if s[0] == "lbdump" else "edge-list"
    except OSError as e:
        raise UsageError(f"{path}: cannot read the graph file ({e.strerror or e})") from None
    return "edge-list"


def build(spec: GraphSpec, seed: int) -> Any:
    """The ``_core.TaskGraph`` of ``spec`` (generators draw from ``seed``)."""
    from numalab import _core

    p = spec.as_dict()
    if spec.is_file:
        path = Path(spec.name)
        if file_kind(path) == "lb-dump":
            return _core.TaskGraph.from_lb_dump(str(path))
        return _core.TaskGraph.from_edge_list(str(path))
    args = [p.pop(k) for k in POSITIONAL[spec.name]]
    make = {"lb_test": _core.TaskGraph.lb_test, "kneighbor": _core.TaskGraph.kneighbor, "jacobi2d": _core.TaskGraph.jacobi2d}[spec.name]
    return make(*args, seed, **p)
