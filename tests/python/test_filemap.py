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


def _filemap_binary():
    import subprocess
    from pathlib import Path

    repo = Path(__file__).resolve().parents[2]
    if not (repo / "kernels" / "filemap").is_file():
        subprocess.run(["make", "-s", "-C", "kernels", "filemap"], cwd=repo, check=True, timeout=300)
    return repo / "kernels" / "filemap"


def test_the_filemap_kernel_forks_processes_that_each_write_their_own_block(tmp_path):
    """kernels/filemap.c --procs P (the guest side of docs/corun.md §6's split segments): P
    processes map the file, process k writes block k of P (page p holds p + i at element i)."""
    import array
    import json
    import os
    import subprocess

    path = tmp_path / "file.bin"
    env = {k: v for k, v in os.environ.items() if k != "OMP_PROC_BIND"}
    cmd = [str(_filemap_binary()), f"--file={path}", "--procs=3", "--threads=2", "--n=50", "--reps=1"]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    # The parent sums the whole file once the others have written it: page p holds p + i.
    doc = json.loads(out.stdout)
    assert doc["checksum"] == pytest.approx(sum(p + i for p in range(300) for i in range(512)))
    data = array.array("d", path.read_bytes())
    assert len(data) == 3 * 2 * 50 * 512
    assert all(data[p * 512 + 7] == p + 7 for p in range(300)), "every process wrote its block"
    bound = subprocess.run(cmd, env={**env, "OMP_PROC_BIND": "spread"}, capture_output=True, text=True, timeout=60)
    assert bound.returncode == 2 and "needs OMP_PROC_BIND unset or false" in bound.stderr
