"""numactl's node and CPU strings (``all``, ``0-3,5``, ``!1``, ``+0-1``), property-based: any text
either parses to indexes the machine has, exactly as a reference model of libnuma's grammar says,
or raises PolicyError with a message; never another exception, a panic or a hang."""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from numalab._core import Machine
from numalab.exceptions import PolicyError
from numalab.machine import load

#: Deterministic in CI: same examples every run, no example database written into the tree.
FAST = settings(max_examples=300, deadline=1000, derandomize=True, database=None, suppress_health_check=[HealthCheck.too_slow])

OPTERON = load("opteron6282-4p")  # nodes 0-7, CPUs 0-63
# Nodes 0, 2 and 5 with CPUs 0-1, 4-5 and 8,10: holes make "!", "+" and "all" mean something.
SPARSE = Machine.from_spec_json(
    json.dumps(
        {
            "name": "sparse",
            "nodes": [
                {"os_index": 0, "package": 0, "cpus": "0-1", "memory_bytes": 1 << 30},
                {"os_index": 2, "package": 0, "cpus": "4-5", "memory_bytes": 1 << 30},
                {"os_index": 5, "package": 1, "cpus": "8,10", "memory_bytes": 1 << 30},
            ],
            "distances": [[10, 12, 20], [12, 10, 20], [20, 20, 10]],
            "latency": {"local_ns": 80},
            "bandwidth": {"node_gbps": 10},
            "core": {"frequency_ghz": 2.0, "mlp": 10},
        }
    )
)
MACHINES = {
    "opteron": (OPTERON, list(range(8)), list(range(64))),
    "sparse": (SPARSE, [0, 2, 5], [0, 1, 4, 5, 8, 10]),
}


def reference(invert: bool, relative: bool, body: str | list[tuple[int, int]], allowed: list[int]) -> list[int] | None:
    """libnuma's numa_parse_nodestring semantics: None where it refuses the string."""
    if body == "all":
        chosen = set(allowed)
    else:
        chosen = set()
        for a, z in body:
            if z < a:
                return None
            for i in range(a, z + 1):
                if relative:
                    if i >= len(allowed):
                        return None
                    i = allowed[i]
                if i not in allowed:
                    return None
                chosen.add(i)
    if invert:
        chosen = set(allowed) - chosen
    return sorted(chosen) or None


spaces = st.sampled_from(["", " ", "  "])
ranges = st.lists(st.tuples(st.integers(0, 12), st.integers(0, 12)).map(lambda r: (r[0], r[0] + r[1] - 6)), min_size=1, max_size=4)


@st.composite
def grammar_strings(draw):
    """A string of numactl's grammar, with its parts for the reference model."""
    invert, relative = draw(st.booleans()), draw(st.booleans())
    body = draw(st.one_of(st.just("all"), ranges))
    if body == "all":
        text = "all"
    else:
        tokens = [str(a) if a == z and draw(st.booleans()) else f"{a}-{z}" for a, z in body]
        body = [(a, z) for a, z in body]
        text = ",".join(draw(spaces) + t + draw(spaces) for t in tokens)
    text = ("!" + draw(spaces) if invert else "") + ("+" + draw(spaces) if relative else "") + text
    return draw(spaces) + text + draw(spaces), invert, relative, body


@FAST
@given(machine=st.sampled_from(sorted(MACHINES)), case=grammar_strings(), cpus=st.booleans())
def test_grammar_strings_mean_what_libnuma_says(machine: str, case, cpus: bool) -> None:
    m, nodes, cpu_ids = MACHINES[machine]
    text, invert, relative, body = case
    parse, allowed = (m.parse_cpus, cpu_ids) if cpus else (m.parse_nodes, nodes)
    want = reference(invert, relative, body, allowed)
    if want is None:
        try:
            got = parse(text)
        except PolicyError as e:
            assert e.args and str(e.args[0]).strip(), "a PolicyError without a message"
            return
        raise AssertionError(f"{text!r} parsed to {got}, the grammar refuses it")
    assert parse(text) == want, text


#: Characters the grammar uses, plus some it does not, plus any other character that UTF-8 can
#: carry (lone surrogates cannot cross into Rust's &str: PyO3 raises UnicodeEncodeError first).
ALPHABET = st.one_of(st.sampled_from(list("0123456789-,!+ al\t")), st.characters(exclude_categories=["Cs"]))


@FAST
@given(machine=st.sampled_from(sorted(MACHINES)), text=st.text(ALPHABET, max_size=24), cpus=st.booleans())
def test_any_text_parses_to_existing_indexes_or_is_a_policy_error(machine: str, text: str, cpus: bool) -> None:
    m, nodes, cpu_ids = MACHINES[machine]
    parse, allowed = (m.parse_cpus, cpu_ids) if cpus else (m.parse_nodes, nodes)
    try:
        got = parse(text)
    except PolicyError as e:
        message = str(e.args[0]) if e.args else ""
        assert message.strip() and ("node" in message or "cpu" in message), message
        return
    assert got and got == sorted(set(got)) and set(got) <= set(allowed), (text, got)


@FAST
@given(a=st.integers(0, 2**40), z=st.integers(0, 2**40), relative=st.booleans())
def test_huge_numbers_are_refused_without_a_long_loop(a: int, z: int, relative: bool) -> None:
    text = ("+" if relative else "") + f"{a}-{z}"
    try:
        got = OPTERON.parse_nodes(text)
    except PolicyError:
        return
    assert set(got) <= set(range(8))
