"""File mappings in a real guest (docs/allocation.md §3.6, docs/vm.md §4.3): kernels/filemap.c
maps a brd ramdisk MAP_SHARED and 4 threads bound one per node each write their 1024-page block.
The guest test reads the two cases' comparisons that test_vm_guest.py's per-case test reads too
(conftest.py's ``vm_compared``: made once per session, in one guest boot of about 20-40 s of
TCG) and is marked ``needs_qemu`` like it; the others check the pieces without a guest."""

from __future__ import annotations

import pytest

from numalab.vm import check, ramdisk


def test_only_the_ramdisks_mappings_are_counted_and_the_ramdisk_holds_the_blocks():
    sample = {"mappings": [
        {"kind": "file", "file": "/dev/ram0", "pages_per_node": {"0": 1008, "3": 1040}},
        {"kind": "file", "file": "/opt/numalab/bin/filemap", "pages_per_node": {"0": 50}},
        {"kind": "anon", "pages_per_node": {"1": 7}},
    ]}
    assert check.ramdisk_pages(sample, [0, 1, 2, 3]) == [1008, 0, 0, 1040]
    assert check.kernel_argv("filemap", {"madvise": "random", "n": 1024, "reps": 20, "threads": 4}) == [
        "filemap", "--file=/dev/ram0", "--madvise=random", "--n=1024", "--reps=20", "--threads=4"]
    assert check.ramdisk_mib("filemap", {"n": 1024, "threads": 4}) == 16
    assert check.ramdisk_mib("filemap", {"n": 1025, "threads": 4}) == 17
    assert check.ramdisk_mib("alloc3d", {"n": 128, "threads": 4}) == 0
    assert ramdisk.script(0, "/e") == []
    assert "rd_nr=1 rd_size=16384" in ramdisk.script(16, "/e")[0]


def test_the_read_around_expectation_wants_the_shift_at_the_edges_within_one_window():
    expect = check.CASES["filemap"].expect
    assert expect(check.Side([1008, 1024, 1024, 1040], [], {})) is None
    assert "node0 has 1024" in (expect(check.Side([1024] * 4, [], {})) or "")
    assert "expected <= 32" in (expect(check.Side([990, 1024, 1024, 1058], [], {})) or "")
    assert check.CASES["filemap-random"].expect(check.Side([1008, 1024, 1024, 1040], [], {})) is not None


@pytest.mark.needs_qemu
@pytest.mark.xdist_group("vm-filemap")
def test_read_around_places_a_neighbours_pages_and_madv_random_does_not_in_the_guest_as_in_the_simulator(guest, vm_compared):
    """Without MADV_RANDOM each thread's first fault reads 16 pages back into its neighbour's
    block onto its own node (node0 short of its block, the last node over it); with it every page
    is on its writer's node. The guest's numa_maps for the mapping and the simulator agree within
    0.2% of the region (8 pages) on every node. The exact counts are the end state: nothing moves
    file pages after first touch here, and a guest sample taken as the last pages are touched may be
    a few short (CI saw 4,093 and 4,092 of 4,096), so MADV_RANDOM's case allows 7 pages off 1/N,
    under read-around's 16."""
    around, random = vm_compared("filemap"), vm_compared("filemap-random")
    for c in (around, random):
        text = check.report(c)
        assert c.ok, text
        assert c.sim.total == sum(c.vm.after_run) == 4096, text
    for pages in (around.sim.after_init, around.vm.after_run):
        assert pages[0] < 1024 < pages[-1], check.report(around)
    for pages in (random.sim.after_init, random.vm.after_run):
        assert pages == [1024] * 4, check.report(random)


def test_the_procs_case_runs_the_kernel_forked_and_the_simulator_as_a_split_co_run():
    case = check.CASES["filemap-procs"]
    resolved = {"madvise": "normal", "n": 1024, "reps": 20, "threads": 1, "procs": 4}
    assert "--procs=4" in check.kernel_argv("filemap", resolved)
    assert check.ramdisk_mib("filemap", resolved) == 16
    assert check.ramdisk_mib("filemap", {**resolved, "procs": 8}) == 32
    from numalab.machine import load

    spec = check.split_corun(case, dict(case.params), "6.13", load("vm-4"))
    assert [g.split for g in spec.corun] == [("file",)] * 4
    assert [g.config.rsplit(":", 1)[-1] for g in spec.corun] == [f"cpunodebind={k}" for k in range(4)]


@pytest.mark.needs_qemu
@pytest.mark.xdist_group("vm-filemap")
def test_processes_forked_over_one_file_place_their_blocks_as_the_split_co_run_does(guest, vm_compared):
    """kernels/filemap.c --procs 4, one process per node each writing its block, against the
    simulator's co-run of 4 copies with split=file: each first fault reads 16 pages back into the
    previous process's block, as the threads of one process do."""
    c = vm_compared("filemap-procs")
    text = check.report(c)
    assert c.ok, text
    assert c.sim.total == sum(c.vm.after_run) == 4096, text
    for pages in (c.sim.after_init, c.vm.after_run):
        assert pages[0] < 1024 < pages[-1], text
