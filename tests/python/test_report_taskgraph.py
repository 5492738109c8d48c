"""Reports of task-graph studies: one set of tables per experiment (not one grid shared by all),
each with the rows its experiment varies and its figures beside it, in Markdown and HTML."""

from __future__ import annotations

import re
from html.parser import HTMLParser

import pytest

import numalab.kinds  # noqa: F401  (registers the task-graph study kind)
from numalab.report import write_report

from inline_backend import run_stored

STUDY = """
name = "tgr"
kind = "taskgraph"
design = '''
Two machines, three balancers, the communication layers and migration cost,
as a paragraph of several lines.
'''
seeds = [1, 2]

[[experiments]]
name = "balancers"
machine = ["numa16", "numa32"]
graph = "lb_test"
params = { n_objects = 40, iterations = 6, lb_period = 3, load_noise = 0.05 }
balancers = ["none", "greedy", "refine"]
baseline = { balancer = "none" }

[[experiments]]
name = "balancers"
machine = "numa16"
graph = "jacobi2d"
params = { nx = 200, ny = 200, block = 50, iterations = 4, lb_period = 2 }
balancers = ["none", "greedy"]
baseline = { balancer = "none" }

[[experiments]]
name = "comm-layer"
machine = "numa16"
graph = "kneighbor"
params = { n_objects = 32, k = 1, iterations = 3, lb_period = 0 }
sweep = { pes = [2, 8], comm_layer = ["net", "shm"] }
column = "comm_layer"
baseline = { comm_layer = "net" }

[[experiments]]
name = "migration-size"
machine = ["numa16", "numa32"]
graph = "migrate"
sweep = { state_bytes = [100, 100000] }
column = "state_bytes"
seeds = [1]

[[experiments]]
name = "migration-share"
machine = "numa16"
graph = "lb_test"
params = { n_objects = 40, iterations = 2, lb_period = 1 }
sweep = { migrate_pct = [10, 50] }
balancers = ["random"]
column = "migrate_pct"
"""


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    from numalab.study.executors import LocalBackend

    root = tmp_path_factory.mktemp("tgreport")
    summary = run_stored(STUDY, root / "tgr.toml", root / "results", lambda: LocalBackend(1))
    # 2 seeds x (2 machines x 3 balancers + 2 balancers + 2 PE counts x 2 layers + 2 shares) + 2 machines x 2 sizes
    assert summary.ok == 2 * (6 + 2 + 4 + 2) + 4
    md = write_report(root / "tgr.toml", root / "tgr.md", results=root / "results")
    html = write_report(root / "tgr.toml", root / "tgr.html", results=root / "results")
    return md.read_text(), html.read_text()


def _sections(md: str) -> dict[str, str]:
    """### heading -> its text up to the next heading."""
    parts = re.split(r"^### (.+)$", md, flags=re.M)
    return {parts[i].strip(): re.split(r"^## ", parts[i + 1], flags=re.M)[0] for i in range(1, len(parts), 2)}


def _tables(section: str) -> list[list[list[str]]]:
    """Markdown tables of a section as rows of cells (header first, separator dropped)."""
    out, current = [], None
    for line in section.splitlines():
        if line.startswith("|"):
            if current is None:
                current = []
                out.append(current)
            if not line.startswith("|---"):
                current.append([c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]])
        else:
            current = None
    return out


def test_no_shared_sparse_grid(reports):
    md, html = reports
    assert "## Speedup" not in md and "### Time (s)" not in md
    assert 'id="speedup"' not in html
    # no column of another experiment leaks in: a balancer table never names comm_layer or state_bytes
    balancers = _sections(md)["balancers: lb\\_test"]
    assert "comm\\_layer" not in balancers and "state\\_bytes" not in balancers


def test_each_experiment_has_its_own_tables_in_file_order(reports):
    md, _ = reports
    assert list(_sections(md)) == ["balancers: lb\\_test", "balancers: jacobi2d", "comm-layer: kneighbor", "migration-size",
                                   "migration-share: lb\\_test"]


def test_balancer_table_rows_and_columns(reports):
    md, _ = reports
    (table,) = _tables(_sections(md)["balancers: lb\\_test"])
    head, rows = table[0], table[1:]
    assert head == ["machine", "balancer", "iteration (ms)", "speedup over none", "efficiency", "migrations per call",
                    "migration ms per call", "step ms per call", "same PE (MiB)", "same node (MiB)", "remote (MiB)"]
    assert [(r[0], r[1]) for r in rows] == [(m, b) for m in ("numa16", "numa32") for b in ("none", "greedy", "refine")]
    cell = {(r[0], r[1]): dict(zip(head, r)) for r in rows}
    assert cell[("numa16", "none")]["speedup over none"] == "1.00 (baseline)"
    assert cell[("numa16", "none")]["migrations per call"] == "0.0"
    # greedy moves most objects at every call (40 objects on 16 PEs), refine only a few
    assert float(cell[("numa16", "greedy")]["migrations per call"]) > 3 * float(cell[("numa16", "refine")]["migrations per call"])
    # two seeds with load noise: iteration times carry an interval
    assert re.fullmatch(r"[\d.]+ ± [\d.]+", cell[("numa32", "greedy")]["iteration (ms)"])
    for r in rows:
        assert 0 < float(cell[(r[0], r[1])]["efficiency"]) <= 1
        # the whole step holds the migrations and costs something even when nothing moves
        assert float(cell[(r[0], r[1])]["step ms per call"]) > float(cell[(r[0], r[1])]["migration ms per call"])


def test_jacobi2d_is_its_own_table_with_only_its_balancers(reports):
    md, _ = reports
    (table,) = _tables(_sections(md)["balancers: jacobi2d"])
    assert [(r[0], r[1]) for r in table[1:]] == [("numa16", "none"), ("numa16", "greedy")]


def test_comm_layer_time_against_pes(reports):
    md, _ = reports
    (table,) = _tables(_sections(md)["comm-layer: kneighbor"])
    assert table[0] == ["machine", "pes", "net (ms)", "shm (ms)", "speedup shm over net"]
    assert [r[:2] for r in table[1:]] == [["numa16", "2"], ["numa16", "8"]]
    for r in table[1:]:
        net, shm = (float(x.split()[0]) for x in r[2:4])
        assert shm < net  # pointer passing beats datagrams once objects sit on several PEs
        assert float(r[4].split()[0]) == pytest.approx(net / shm, rel=0.05)


def test_migration_cost_by_size_and_distance(reports):
    md, _ = reports
    tables = _tables(_sections(md)["migration-size"])
    assert len(tables) == 2  # one per machine: their nodes differ
    numa16, numa32 = tables
    assert numa16[0][0] == "object size" and numa16[0][1].startswith("same node") and len(numa16[0]) == 1 + 8
    assert len(numa32[0]) == 1 + 4
    assert [r[0] for r in numa16[1:]] == ["100 B", "100 kB"]
    small, large = ([float(x) for x in r[1:]] for r in numa16[1:])
    assert all(b > a for a, b in zip(small, large))
    assert large[1] > large[0]  # another node costs more than the same node


def test_migration_share_time_against_percent(reports):
    md, _ = reports
    (table,) = _tables(_sections(md)["migration-share: lb\\_test"])
    assert table[0] == ["machine", "10 %", "50 %", "objects migrated per call"]
    row = table[1]
    assert row[0] == "numa16" and row[3] == "4, 20"
    assert float(row[2].split()[0]) > float(row[1].split()[0])


def test_figures_sit_with_their_experiment(reports):
    md, _ = reports
    s = _sections(md)
    assert "iteration-time-per-balancer" in s["balancers: lb\\_test"] and "lb-test" in s["balancers: lb\\_test"]
    assert "jacobi2d" in s["balancers: jacobi2d"].split("](")[1]
    assert "against-pes" in s["comm-layer: kneighbor"]
    assert "against-object-size" in s["migration-size"]
    assert "against-of-objects" in s["migration-share: lb\\_test"]
    # a figure comes after its tables, before the next experiment
    lb = s["balancers: lb\\_test"]
    assert lb.index("| numa32 | refine") < lb.index("![")


class _Html(HTMLParser):
    def __init__(self):
        super().__init__()
        self.h3: list[str] = []
        self.tables = 0
        self.images_after: dict[str, int] = {}
        self._h3 = False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "h3":
            self._h3 = True
            self.h3.append("")
        if tag == "table" and a.get("class") == "taskgraph":
            self.tables += 1
        if tag == "img" and self.h3:
            self.images_after[self.h3[-1]] = self.images_after.get(self.h3[-1], 0) + 1

    def handle_endtag(self, tag):
        if tag == "h3":
            self._h3 = False

    def handle_data(self, data):
        if self._h3:
            self.h3[-1] += data


def test_html_has_the_same_tables_and_figures(reports):
    _, html = reports
    p = _Html()
    p.feed(html)
    assert p.h3 == ["balancers: lb_test", "balancers: jacobi2d", "comm-layer: kneighbor", "migration-size", "migration-share: lb_test"]
    assert p.tables == 1 + 1 + 1 + 2 + 1
    assert p.images_after == {"balancers: lb_test": 2, "balancers: jacobi2d": 2, "comm-layer: kneighbor": 1, "migration-size": 1,
                              "migration-share: lb_test": 1}
    assert '<td class="up">' in html  # greedy's speedup over none on lb_test


def test_a_long_design_is_its_own_paragraph(reports):
    md, html = reports
    assert "follows" not in md.split("## Configuration")[0]
    assert "\nDesign: Two machines, three balancers, the communication layers and migration cost, as a paragraph of several lines.\n" in md
    assert '<p class="meta">Design: Two machines' in html


def test_a_long_study_file_is_folded_in_markdown(reports):
    md, _ = reports
    config = md.split("## Configuration")[1].split("## Task graphs")[0]
    assert config.lstrip().startswith("<details><summary>study file (")
    assert config.rstrip().endswith("</details>") and "```toml" in config
