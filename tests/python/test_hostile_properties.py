"""Hostile inputs, property-based: random expressions, random descriptor TOML, random graph files
and random synthetic descriptions either succeed or end in a usage error (``numalab: ...``,
exit code 2), never another exception, and each within a time bound."""

from __future__ import annotations

import math
import tempfile
import time
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from numalab.exceptions import USAGE_ERRORS, UsageError
from numalab.workload import descriptor
from numalab.workload.expr import MAX_VALUE, evaluate

SCRATCH = Path(tempfile.mkdtemp(prefix="numalab-hostile-props-"))


def checks(n: int, deadline_ms: int = 2000) -> settings:
    """Deterministic (same examples each run, no example database), each example within the deadline."""
    return settings(max_examples=n, deadline=deadline_ms, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])


# ---------------------------------------------------------------- expressions

_ATOMS = st.sampled_from([
    "0", "1", "2", "9", "63", "64", "1000", "2**62", "9223372036854775807", "1e308", "1e-308", "1e999", "0.5", "-1",
    "n", "threads", "init", "'serial'", "'x'", "True", "None", "nan", "inf", "x.y", "[1]", "{}", "lambda: 1",
])
_BINARY = st.sampled_from(["+", "-", "*", "/", "//", "%", "**", "==", "<", ">=", " and ", " or ", " if 1 else "])
_CALLS = st.sampled_from(["min", "max", "ceil", "floor", "log2", "int", "round", "len", "abs", "__import__"])


@st.composite
def expressions(draw, depth: int = 0) -> str:
    kind = draw(st.integers(0, 4 if depth < 6 else 0))
    if kind == 0:
        return draw(_ATOMS)
    if kind == 1:
        return f"({draw(expressions(depth + 1))}{draw(_BINARY)}{draw(expressions(depth + 1))})"
    if kind == 2:
        args = draw(st.lists(expressions(depth + 1), min_size=0, max_size=3))
        return f"{draw(_CALLS)}({', '.join(args)})"
    if kind == 3:
        return f"{draw(st.sampled_from(['-', 'not ', '+', '~']))}{draw(expressions(depth + 1))}"
    # Towers: the shape that used to hang.
    return "**".join(draw(st.lists(st.sampled_from(["9", "2", "10", "n", "1.5", "-3"]), min_size=2, max_size=6)))


ENV = {"n": 1000, "threads": 4, "init": "serial"}


@given(expressions())
@checks(400, deadline_ms=500)
def test_random_expressions_end_in_a_bounded_value_or_a_usage_error(text):
    t0 = time.monotonic()
    try:
        v = evaluate(text, ENV, "w")
    except UsageError as e:
        assert str(e).startswith("w: ") and "\n" not in str(e)
    else:
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            assert math.isfinite(v) and abs(v) <= MAX_VALUE, (text, v)
    assert time.monotonic() - t0 < 0.5


@given(st.text(max_size=200))
@checks(300, deadline_ms=500)
def test_random_text_as_an_expression(text):
    try:
        evaluate(text, ENV, "w")
    except UsageError:
        pass


# ---------------------------------------------------------------- descriptor TOML

_VALUES = st.one_of(
    expressions().map(lambda e: '"' + e.replace("\\", "").replace('"', "'") + '"'),
    st.sampled_from([
        "0", "-1", "1", "8000", "1e308", "-1e308", "nan", "inf", "-inf", "99999999999999999999999999",
        "1979-05-27T07:32:00Z", "07:32:00", "1979-05-27", "true", '"block"', '"gather"', "[1, 2]", "{ a = 1 }",
        '"' + "x" * 2000 + '"', "[" * 70 + "]" * 70,
    ]),
)
_FIELDS = [
    ("region", "bytes"), ("region", "planes"), ("region", "address"), ("region", "per_thread"), ("region", "thp"),
    ("phase", "cycles"), ("phase", "instructions"), ("phase", "mlp"), ("phase", "sync"), ("phase", "pipeline_steps"),
    ("access", "count"), ("access", "passes"), ("access", "rd"), ("access", "wr"), ("access", "chunk"),
    ("access", "rows"), ("access", "halo"), ("access", "pattern"), ("step", "repeat"), ("param", "n"), ("param", "threads"),
]


@st.composite
def descriptors(draw) -> str:
    values: dict[tuple[str, str], str] = {
        ("region", "bytes"): '"8 * n"', ("access", "pattern"): '"block"', ("access", "rd"): "1.0",
        ("param", "n"): "1000", ("param", "threads"): "2",
    }
    for f in draw(st.lists(st.sampled_from(_FIELDS), min_size=1, max_size=4, unique=True)):
        values[f] = draw(_VALUES)

    def of(kind: str) -> str:
        return "\n".join(f"{k} = {v}" for (t, k), v in values.items() if t == kind)

    access = ", ".join(f"{k} = {v}" for (t, k), v in values.items() if t == "access")
    repeat = values.get(("step", "repeat"), "1")
    return (
        f'name = "x"\nprogram = [{{ phases = ["p"], repeat = {repeat} }}]\n[params]\n{of("param")}\n'
        f'[[regions]]\nname = "a"\n{of("region")}\n[[phases]]\nname = "p"\n{of("phase")}\n'
        f'access = [{{ region = "a", {access} }}]\n'
    )


@given(descriptors())
@checks(300)
def test_random_descriptors_resolve_or_end_in_a_usage_error(text):
    path = SCRATCH / "w.toml"
    path.write_text(text, encoding="utf-8")
    try:
        w = descriptor.resolve(str(path))
    except UsageError as e:
        assert "\n" not in str(e)
        return
    for r in w["regions"]:
        assert 0 < r["bytes"] <= descriptor.MAX_ADDRESS
    for p in w["phases"]:
        assert math.isfinite(p["cycles"]) and 0 <= p["cycles"] <= MAX_VALUE


@given(st.binary(max_size=300))
@checks(200)
def test_random_bytes_as_a_descriptor(data):
    path = SCRATCH / "b.toml"
    path.write_bytes(data)
    try:
        descriptor.resolve(str(path))
    except UsageError:
        pass


# ---------------------------------------------------------------- synthetic descriptions

_LEVELS = st.sampled_from(["pack", "package", "numa", "node", "core", "co", "pu", "l3", "l2", "l1d", "die", "group",
                           "machine", "misc", "nuam", "[numa]", "pci", "l3u", "socket"])
_ARITIES = st.one_of(st.integers(0, 9).map(str), st.sampled_from(["64", "256", "1024", "65536", "4294967296",
                                                                  "99999999999999999999", "-1", "0x10", "", "x"]))
_ATTRS = st.sampled_from(["", "", "", "(memory=1GB)", "(size=32KiB)", "(indexes=0,1)", "(memory=99999999999TB)",
                          "(indexes=4294967295)", "(", "(memory=", "(bogus=1)"])


@st.composite
def synthetic(draw) -> str:
    items = []
    for _ in range(draw(st.integers(0, 6))):
        if draw(st.booleans()):
            items.append(f"{draw(_LEVELS)}:{draw(_ARITIES)}{draw(_ATTRS)}")
        else:
            items.append(draw(_ARITIES))
    return " ".join(items)


@given(st.one_of(synthetic(), st.text(max_size=60)))
@checks(300, deadline_ms=15000)
def test_random_synthetic_descriptions_load_or_end_in_a_usage_error(text):
    from numalab.machine import load

    t0 = time.monotonic()
    try:
        load("synthetic:" + text)
    except USAGE_ERRORS as e:
        assert "Traceback" not in str(e)
    assert time.monotonic() - t0 < 15


# ---------------------------------------------------------------- graph files

_GRAPH_LINES = st.one_of(
    st.builds(lambda i, load, s: f"obj, {i}, {load}, {s}", st.sampled_from(["0", "1", "2", "999999", "1000000", "-1",
                                                                       "9223372036854775807", "x"]),
              st.sampled_from(["0", "1", "1e308", "nan", "inf", "-1", "1e15", "1e16"]),
              st.sampled_from(["0", "8", "18446744073709551615", "281474976710656"])),
    st.builds(lambda a, b, m, n: f"edge, {a}, {b}, {m}, {n}", st.sampled_from(["0", "1", "2", "4294967295"]),
              st.sampled_from(["0", "1", "5"]), st.sampled_from(["1", "18446744073709551615"]),
              st.sampled_from(["8", "18446744073709551615", "-1"])),
    st.sampled_from(["", "# comment", "bogus", "lbdump 3 1", "objs 4000000000", "obj", "edge, 0"]),
)


@given(st.lists(_GRAPH_LINES, min_size=1, max_size=8))
@checks(200)
def test_random_graph_files_load_or_end_in_a_usage_error(lines):
    from numalab.tasks.graphs import GraphSpec, build

    path = SCRATCH / "g.txt"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    try:
        g = build(GraphSpec(str(path)), 1)
    except USAGE_ERRORS:
        return
    assert g is not None


# ---------------------------------------------------------------- preset TOML

_PRESET_KEYS = ["page_size_bytes = 4096", "packages = 8", "cores_per_node = 2", "node_gib = 4.0", "local_ns = 95.0",
                "{ nodes = [0, 1], gbps = 4.0 }"]
_PRESET_VALUES = st.sampled_from([
    "0", "-1", "1", "99999999999999999999", "18446744073709551616", "1e308", "-1e308", "nan", "inf", "1979-05-27",
    "07:32:00", "1979-05-27T07:32:00Z", '"x"', "true", "[1, 2]", "{ a = 1 }", "65536", "4096.5", "1e-300",
])


@given(st.lists(st.tuples(st.sampled_from(_PRESET_KEYS), _PRESET_VALUES), min_size=1, max_size=3))
@checks(150, deadline_ms=5000)
def test_random_preset_values_load_or_end_in_a_usage_error(changes):
    from numalab.machine.presets import PRESET_DIR, load_spec_file

    text = (PRESET_DIR / "numa16.toml").read_text(encoding="utf-8")
    for key, value in changes:
        if key.startswith("{"):
            text = text.replace(key, "{ nodes = [0, " + value + "], gbps = 4.0 }", 1)
        else:
            name = key.split(" = ")[0]
            text = text.replace(key, f"{name} = {value}", 1)
    path = SCRATCH / "m.toml"
    path.write_text(text, encoding="utf-8")
    try:
        load_spec_file(path)
    except USAGE_ERRORS as e:
        assert "\n" not in str(e).strip() and str(path) in str(e)
