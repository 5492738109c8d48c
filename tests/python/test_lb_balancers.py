"""The Python balancers of the task-graph mode: METIS and Scotch partitioning (MetisLB.C,
ScotchLB.C) and random, against the core's greedy; balancer names and parameters."""

from __future__ import annotations

import pytest

from numalab import _core
from numalab.exceptions import UsageError
from numalab.spec.run import load_machine
from numalab.tasks import balancers as lb
from numalab.tasks import partition

needs_gpart = pytest.mark.skipif(partition.gpart_program() is None, reason="Scotch's gpart is not installed (Debian package scotch)")

RING = 64


def ring_file(tmp_path):
    """A ring of equal objects (1 ms each), each sending 1000 bytes to the next."""
    path = tmp_path / "ring.csv"
    objects = "".join(f"obj, {i}, 1000000, 1024\n" for i in range(RING))
    path.write_text(objects + "".join(f"edge, {i}, {(i + 1) % RING}, 1, 1000\n" for i in range(RING)))
    return path


def cut(edges, mapping) -> int:
    return sum(1 for a, b, *_ in edges if a != b and mapping[a] != mapping[b])


def final_mapping(graph, balancer, pes=8):
    r = _core.taskgraph_simulate(graph, load_machine("numa16"), balancer, iterations=2, lb_period=1, pes=pes, seed=1)
    return r["mapping_final"]


@pytest.mark.parametrize("name", ["metis", pytest.param("scotch", marks=needs_gpart)])
def test_partitioners_cut_fewer_ring_edges_than_greedy(tmp_path, name):
    g = _core.TaskGraph.from_edge_list(str(ring_file(tmp_path)))
    edges = g.edges
    greedy = cut(edges, final_mapping(g, "greedy"))
    how, _ = lb.resolve(lb.parse(name), seed=1)
    mine = final_mapping(g, how)
    # A ring into 8 balanced parts needs 8 cut edges; greedy ignores edges and cuts most of them.
    assert cut(edges, mine) <= 16 < greedy
    counts = [mine.count(p) for p in range(8)]
    assert max(counts) <= 1.1 * RING / 8 + 1  # within the imbalance MetisLB/ScotchLB allow


def test_metis_parts_follow_vertex_weights():
    # Two heavy objects and many light ones: the heavy ones must not share a part.
    loads = [100.0, 100.0] + [1.0] * 20
    parts = partition.metis_parts(loads, [(i, i + 1, 1, 10) for i in range(21)], 2, seed=1)
    assert parts[0] != parts[1]


def test_scotch_graph_format():
    text = partition.scotch_graph([2.0, 1.0, 0.0], [(0, 1, 1, 100), (1, 0, 1, 100), (1, 2, 1, 50), (2, 2, 1, 9)])
    lines = text.splitlines()
    # version, 3 vertices / 4 arcs, base 0 with vertex and edge weights; self-messages dropped,
    # both directions of 0-1 merged (200 bytes = the maximum -> 1024).
    assert lines[:3] == ["0", "3\t4", "0\t011"]
    assert lines[3] == "256 1 1024 1"
    assert lines[4] == "128 2 1024 0 256 2"
    assert lines[5] == "1 1 256 1"
    assert partition.read_scotch_map("3\n0 1\n2 0\n1 1\n", 3) == [1, 1, 0]


def test_random_moves_exactly_its_share():
    how, params = lb.resolve(lb.parse("random:migrate_pct=25"), seed=3)
    assert params is None
    state = {"mapping": [i % 4 for i in range(40)], "n_pes": 4, "loads_ns": [1.0] * 40, "edges": []}
    new = how(state)
    assert sum(a != b for a, b in zip(state["mapping"], new)) == 10
    assert all(0 <= p < 4 for p in new)


@pytest.mark.parametrize("text, message", [
    ("nosuch", "unknown balancer 'nosuch' (expected one of: none, greedy"),
    ("random:migrate_pct=150", "migrate_pct must be <= 100"),
    ("random:share=3", "balancer random: unknown parameter share (accepted: migrate_pct)"),
    ("metis:x", "'x' is not key=value"),
])
def test_bad_balancers(text, message):
    with pytest.raises(UsageError, match=None) as e:
        lb.parse(text)
    assert message in str(e.value)


def test_balancer_lists():
    specs = lb.parse_list("none, greedy-refine:tolerance=1.05,random:migrate_pct=10")
    assert [s.label() for s in specs] == ["none", "greedy-refine:tolerance=1.05", "random:migrate_pct=10"]
    assert lb.resolve(specs[1], 1) == ("greedy-refine", {"greedy_refine_tolerance": 1.05})
    assert lb.resolve(lb.parse("numalab:locality=off:gain_margin=2"), 1) == ("numalab", {"numalab_locality": False, "numalab_gain_margin": 2.0})
    with pytest.raises(UsageError, match=r"balancer refine: unknown parameter tolerance \(accepted: overload\)"):
        lb.parse("refine:tolerance=1.1")
    with pytest.raises(UsageError, match="names 'greedy' twice"):
        lb.parse_list("greedy,greedy")
