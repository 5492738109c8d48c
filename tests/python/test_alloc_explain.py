"""Regions allocated through the C library (docs/allocation.md §3.5): the descriptor's ``alloc``
keys, their checks, the engine's placement of the pages glibc's malloc writes at allocation, and
``numalab sim --explain-alloc``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from numalab.exceptions import UsageError
from numalab.runner import sim as runner
from numalab.spec.run import RunSpec
from numalab.workload.descriptor import resolve

ROWS = """\
name = "rows"
description = "an n x n grid of doubles allocated by rows, written in parallel, then read"
source = "test"
program = [{ phases = ["init"] }, { phases = ["sweep"], repeat = 2 }]

[params]
n = 1024
threads = 8
alloc = "malloc"
by = "master"
chunks = 1024

[[regions]]
name = "grid"
bytes = "4 * n * n"
planes = "n"
%(region)s

[[phases]]
name = "init"
cycles = "n * n"
access = [{ region = "grid", pattern = "block", wr = 1.0 }]

[[phases]]
name = "sweep"
cycles = "n * n"
access = [{ region = "grid", pattern = "block", rd = 1.0 }]
"""
ALLOC = 'alloc = "alloc"\nalloc_by = "by"\nalloc_chunks = "chunks"'


def descriptor(tmp_path: Path, region: str = ALLOC) -> str:
    p = tmp_path / f"rows{len(list(tmp_path.iterdir()))}.toml"
    p.write_text(ROWS % {"region": region})
    return str(p)


def run(path: str, **params) -> dict:
    spec = RunSpec.create("e5-2620v4-2s", path, params=params, noise="off")
    return runner.run(spec).doc


def test_without_alloc_keys_the_engine_input_is_unchanged(tmp_path: Path) -> None:
    plain = resolve(descriptor(tmp_path, ""))
    assert "alloc" not in plain["regions"][0]
    w = resolve(descriptor(tmp_path))
    assert w["regions"][0]["alloc"] == {"kind": "malloc", "by": "master", "chunks": 1024, "freed": False}
    assert resolve(descriptor(tmp_path), {"by": "each-thread"})["regions"][0]["alloc"]["by"] == "each-thread"
    assert resolve(descriptor(tmp_path), {"by": "3"})["regions"][0]["alloc"]["by"] == {"thread": 3}


@pytest.mark.parametrize(
    ("region", "params", "message"),
    [
        (ALLOC, {"alloc": "brk"}, "regions[0].alloc: 'brk' is not one of: static, malloc, calloc, mmap"),
        (ALLOC, {"by": "8"}, "regions[0].alloc_by: thread 8 does not exist (threads are 0..7)"),
        (ALLOC, {"by": "workers"}, "regions[0].alloc_by: expected master, each-thread or a thread index"),
        (ALLOC, {"chunks": 0}, "regions[0].alloc_chunks: must be >= 1"),
        (ALLOC, {"chunks": 1 << 23}, "regions[0].alloc_chunks: 8.38861e+06 is more than the bound 2^22"),
        ('alloc_by = "master"', {}, "regions[0].alloc_by: alloc_by needs alloc"),
        ('alloc = "malloc"\naddress = 4096', {}, "the C library places it, not address"),
        ('alloc = "malloc"\nalloc_freed = true', {}, "phases[0].access[0]: region 'grid' is freed before the program starts"),
    ],
)
def test_wrong_alloc_keys_are_refused_with_the_key(tmp_path: Path, region: str, params: dict, message: str) -> None:
    with pytest.raises(UsageError) as e:
        resolve(descriptor(tmp_path, region), params)
    assert message in str(e.value)
    assert str(e.value).startswith(str(tmp_path))


def _on_master(doc: dict) -> float:
    pages = doc["pages"]["per_node"]
    master = doc["threads"][0]["node"]
    return pages[master] / sum(pages)


def test_rows_malloced_by_the_master_stay_on_its_node(tmp_path: Path) -> None:
    # 4 KiB rows: a chunk header on all but one page in 257, written by the master at malloc time.
    doc = run(descriptor(tmp_path))
    assert _on_master(doc) >= 0.995
    (r,) = doc["alloc"]
    assert (r["heap_chunks"], r["mmap_chunks"], r["arenas"]) == (1024, 0, [0])
    # Without the allocation, the parallel first write spreads the grid over both nodes.
    assert _on_master(run(descriptor(tmp_path, ""))) == pytest.approx(0.5, abs=0.01)


def test_one_block_or_rows_malloced_by_each_thread_spread(tmp_path: Path) -> None:
    # One 4 MiB block is mmapped: only its header page is written at malloc time.
    doc = run(descriptor(tmp_path), chunks=1)
    assert doc["alloc"][0]["mmap_chunks"] == 1
    assert _on_master(doc) == pytest.approx(0.5, abs=0.01)
    doc = run(descriptor(tmp_path), by="each-thread")
    assert doc["alloc"][0]["arenas"] == list(range(8))
    assert _on_master(doc) == pytest.approx(0.5, abs=0.01)


def test_the_allocation_is_deterministic(tmp_path: Path) -> None:
    a, b = run(descriptor(tmp_path), by="each-thread"), run(descriptor(tmp_path), by="each-thread")
    assert a["alloc"] == b["alloc"] and a["pages"] == b["pages"] and a["time_s"] == b["time_s"]


def test_explain_alloc_says_who_touched_each_region_and_why(cli, tmp_path: Path) -> None:
    path = descriptor(tmp_path)
    code, out, err = cli("sim", "--machine", "e5-2620v4-2s", "--workload", path, "--explain-alloc")
    assert code == 0, err
    assert "grid: malloc by the main thread (thread 0), 1024 x 4 KiB: 1024 from arenas main (brk heap), 0 mmapped" in out
    assert "at allocation: thread 0 first touched" in out and "chunk headers (malloc/malloc.c: set_head" in out
    assert "first written by phase 'init' (block): each page goes to the thread whose static block holds it" in out
    code, out, _ = cli("sim", "--machine", "e5-2620v4-2s", "--workload", descriptor(tmp_path, ""), "--explain-alloc")
    assert code == 0
    assert "grid: a static array, written by nobody before the program" in out
    code, out, _ = cli("sim", "--machine", "e5-2620v4-2s", "--workload", path, "--json")
    assert json.loads(out)["alloc"][0]["touched"][0]["why"] == "header"


REUSE = """\
name = "reuse"
description = "a scratch buffer freed, then a grid calloc'd in its place by one worker, written in parallel"
source = "test"
program = [{ phases = ["init"] }]

[params]
threads = 8
by = 3

[[regions]]
name = "scratch"
bytes = "1024 * 1024"
alloc = "malloc"
alloc_by = "by"
alloc_chunks = 16
alloc_freed = true

[[regions]]
name = "grid"
bytes = "1024 * 1024"
planes = 256
alloc = "calloc"
alloc_by = "by"
alloc_chunks = 16

[[phases]]
name = "init"
cycles = 1000
access = [{ region = "grid", pattern = "block", wr = 1.0 }]
"""


def test_calloc_of_reused_memory_by_a_worker_is_on_its_node(cli, tmp_path: Path) -> None:
    p = tmp_path / "reuse.toml"
    p.write_text(REUSE)
    doc = run(str(p))
    scratch, grid = doc["alloc"]
    assert scratch["arenas"] == grid["arenas"] == [1], "thread 3's own arena"
    assert {t["thread"] for t in grid["touched"]} == {3}
    assert {t["why"] for t in grid["touched"]} == {"header", "zeroing"}
    node = doc["threads"][3]["node"]
    assert doc["pages"]["per_node"][node] == sum(doc["pages"]["per_node"]) == grid["pages"]
    code, out, _ = cli("sim", "--machine", "e5-2620v4-2s", "--workload", str(p), "--explain-alloc")
    assert code == 0
    assert "calloc clearing memory that was not fresh" in out
    assert "every page was placed at allocation: later writes, parallel or not, move none" in out
