"""File mappings in descriptors (docs/allocation.md §3.6): read-around places a neighbour's
pages on the faulting node, MADV_RANDOM does not, and the keys are checked."""

from __future__ import annotations

import pytest

from numalab.exceptions import UsageError
from numalab.runner import sim as runner
from numalab.spec import RunSpec

FILE = """
name = "file-read"
description = "each thread reads its block of a file mapping (test workload)"
source = "test"
program = [{{ phases = ["read"] }}]
[params]
threads = 4
[[regions]]
name = "F"
bytes = "64 * 2**20"
planes = "64 * 2**20 // 4096"
{keys}
[[phases]]
name = "read"
cycles = "1"
access = [{{ region = "F", pattern = "block", rd = 1.0 }}]
"""


def run(tmp_path, keys: str) -> dict:
    path = tmp_path / "w.toml"
    path.write_text(FILE.format(keys=keys))
    spec = RunSpec("vm-4", str(path)).with_config("omp-proc-bind=spread")
    return runner.run(spec.bind()).doc


def test_read_around_places_a_neighbours_pages_and_madv_random_does_not(tmp_path):
    around = run(tmp_path, "file = true")["pages"]["per_node"]
    random = run(tmp_path, 'file = true\nmadvise = "random"')["pages"]["per_node"]
    anon = run(tmp_path, "")["pages"]["per_node"]
    assert sum(around) == sum(random) == 16384
    assert random == [4096] * 4
    assert around != random and min(around) < 4096 < max(around)
    assert sum(anon) == 0  # a first read of anonymous memory maps the zero page


def test_madvise_needs_a_file_mapping(tmp_path):
    with pytest.raises(UsageError, match=r"regions\[0\]\.madvise: madvise needs file = true"):
        run(tmp_path, 'madvise = "random"')
    with pytest.raises(UsageError, match=r"'sequential' is not one of: normal, random"):
        run(tmp_path, 'file = true\nmadvise = "sequential"')


def test_the_filemap_workload_places_a_neighbours_pages_unless_madvise_is_random():
    """The library's filemap descriptor (kernels/filemap.c's model): its madvise parameter
    reaches the region through an expression."""
    out = {}
    for madvise in ("normal", "random"):
        spec = RunSpec.create("vm-4", "filemap", params={"madvise": madvise}).with_config("omp-proc-bind=spread:omp-places=cores")
        out[madvise] = runner.run(spec.bind()).doc["pages"]["per_node"]
    assert out == {"normal": [1008, 1024, 1024, 1040], "random": [1024] * 4}
