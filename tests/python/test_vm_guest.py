"""numalab vm with a real guest: QEMU boots Debian's kernel with the vm-4 / vm-8 topology.

Each test boots a guest (about 5-15 s of TCG each) or reads runs it shares with others. The
``vm check`` cases are compared once per session, each group of them together (conftest.py's
``vm_compared``), so the cases that can share a guest boot share one (``check.compare_many``);
under pytest-xdist (``make test``) the tests of a group share a worker (``xdist_group``: the
scheduler cases of one machine with their orderings, the tiering cases with the tiered guest,
the vm-4 placement and malloc cases), so each run is made once; the short vm-4 commands share a
boot too (``short_vm4_runs``). They are marked ``needs_qemu`` and skipped only when
``qemu-system-x86_64`` is absent and cannot be installed (``.ci/run`` installs it in CI; as root
with apt-get the ``guest`` fixture installs it too). The agent and the C kernels are built if
missing (``make agent``, ``make kernels``).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import threading
from pathlib import Path

import pytest
from conftest import vm_group

from numalab.spec import Placement
from numalab.vm import check, qemu
from numalab.vm import run as vm_run

pytestmark = pytest.mark.needs_qemu
REPO = Path(__file__).resolve().parents[2]


def _case(name: str):
    """The tests that read a case's comparison run on its group's worker (conftest.vm_compared)."""
    group = vm_group(name)
    return pytest.param(name, marks=pytest.mark.xdist_group(group)) if group else name


def _guest_once_more(c: check.Comparison) -> check.Comparison:
    """A scheduler case run again, guest and all. Where an unbound team's threads go in the guest
    follows the host's load as much as the guest kernel (docs/scheduler.md §10.5: the host decides
    when each vCPU runs): on vm-4 one oversubscribed run of some twenty moved 3 of 8 threads,
    0.000875 migrations per thread per barrier where the others moved 0.0026-0.022. A scheduler
    expectation that fails in the guest is therefore asked of a second guest run; a model, agent
    or kernel that breaks it fails both (the simulator's side is the same in both: its seed)."""
    return check.compare(c.case, timeout_s=600)


#: Cases whose simulated side falls short of the case's expectation for a stated reason. The
#: shortfall is asserted as stated, so a model that closes the gap fails here until it is removed.
#: Empty since the host model runs every guest's vCPUs (docs/scheduler.md §10.16): vm-8
#: oversubscribed under 6.1 moved 2 of 16 threads where `move()` asks half the team (the guest
#: 16 of 16), its vCPUs never idle without the host; with it 14 of 16 (2026-11-27, seed 1).
#: With the host's own 1.4 ms request (docs/scheduler.md §10.50; was 1.5 ms) vm-8 oversubscribed
#: moves 6 of 16 threads (12 migrations, seed 1; the guest 16 of 16, 123): the model's host runs
#: an idle vCPU too late for its own tick and NOHZ balances (§10.50-§10.52; 2026-11-28 06:30 UTC).
#: Empty again since a BQL hold is kept across its holder's switch-out (§10.54; 2026-11-28 09:30
#: UTC): seed 1 moves 9 of 16 threads (45 migrations), one above `move()`'s half; the mean over
#: seeds 1-8 stays 1.7 times below the guest's range (``bench/vm_sched_sim.py``).
#: With the main loop's BQL hold at 16 µs (§10.58; 2026-11-28 12:45 UTC) seed 1 moves 6 of 16
#: threads (10 migrations) again, while the mean over seeds 1-8 comes closer (1.39 times below).
#: Empty again since a vCPU's halt inside a round gives its host core up there (§10.60; 13:05
#: UTC): seed 1 moves 13 of 16 threads, and the mean over seeds 1-8 is inside the guest's range.
SIM_SHORT: dict[str, str] = {}

#: Orderings (``check.orderings``) the simulated side misses for the reason above, per machine:
#: seed 1's vm-8 oversubscribed team moved 0.003 migrations per thread per barrier against the
#: bound run's 0.0035 until §10.54; then 0.01125; with the main loop's hold at 16 µs (§10.58,
#: 2026-11-28 12:45 UTC) 0.0025; since §10.60 0.01075. Asserted as stated.
SIM_ORDER_SHORT: dict[str, dict[str, str]] = {}


@pytest.mark.parametrize("name", [_case(n) for n, c in check.CASES.items() if c.machine not in check.MULTI_CPU_MACHINES])
def test_guest_and_simulator_agree(guest, vm_compared, name):
    c = vm_compared(name)
    if c.case.sched and set(c.failures) - {"sim"}:
        c = _guest_once_more(c)
    text = check.report(c)
    failures = dict(c.failures)
    if name in SIM_SHORT:
        assert SIM_SHORT[name] in failures.pop("sim", ""), f"the known shortfall is gone: remove {name} from SIM_SHORT\n{text}"
        assert c.sim.threads.migrated > 0, text
    assert not failures, text
    assert c.kernel_release == guest.kernel_version
    # Both sides placed the same pages: the guest's anonymous pages are the arrays plus a few
    # (each thread's stack, libc's heap: 14 pages with 4 threads), so totals agree within 2% and
    # 4 pages per thread.
    threads = len(c.sim.threads.nr_migrations)
    assert abs(c.vm.total - c.sim.total) <= 0.02 * c.sim.total + 4 * threads, text


@pytest.mark.parametrize("machine", [pytest.param(m, marks=pytest.mark.xdist_group(f"vm-sched-{m}")) for m in ("vm-4", "vm-8")])
def test_sched_unbound_threads_move_more_than_bound_ones_in_the_guest_and_the_simulator(guest, vm_compared, machine):
    """kernels/barrier.c on every vCPU: bound threads stay on their node; unbound ones sleeping at
    barriers (OMP_WAIT_POLICY=passive) or sharing CPUs change CPU and node more often per thread
    and second, in the real kernel and in the simulator (docs/scheduler.md §10)."""
    names = [n for n, c in check.CASES.items() if c.sched and c.machine == machine]
    results = [vm_compared(n) for n in names]
    table = check.sched_table(results)
    assert sum(c.case.more_than is not None for c in results) >= 1, names
    # Both sides on vm-8 too since the host model runs its vCPUs (docs/scheduler.md §10.16), but
    # for the shortfall stated in ``SIM_ORDER_SHORT``.
    if failed := check.orderings(results, ("vm",)):
        results = [_guest_once_more(c) if c.case.name in failed else c for c in results]
        table = check.sched_table(results)
    got = check.orderings(results, ("sim", "vm"))
    for name, why in SIM_ORDER_SHORT.get(machine, {}).items():
        assert why in got.pop(name, ""), f"the known shortfall is gone: remove {name} from SIM_ORDER_SHORT\n{table}"
    assert got == {}, table
    bound = next(c for c in results if "omp-proc-bind" in c.case.config)
    for side in (bound.sim, bound.vm):
        assert side.threads.changed_node == 0, table
    # The binding is each bound thread's one move in the simulator (libgomp's gomp_init_affinity);
    # the guest's count varies with the host's load (1-4 seen), so it is printed only.
    assert max(bound.sim.threads.nr_migrations) <= 2, table
    for c in results:
        if c.case.more_than:
            assert c.sim.threads.migrated > 0 and c.vm.threads.migrated > 0, table


@pytest.mark.xdist_group("vm-alloc")
def test_a_passive_team_on_two_vcpus_per_node_the_simulator_beside_three_guest_runs(guest):
    """kernels/barrier.c with OMP_WAIT_POLICY=passive on 4 nodes x 2 vCPUs (docs/scheduler.md
    §10): the workers sleep in libgomp's dock and at every barrier, so where they start follows the
    kernel's placement of new tasks and where they run later its wake-up placement and balancing of
    sleepers. Three guest runs give the guest's own spread, printed beside the simulator with the
    figures that fall outside it (the table's wording is tested in test_vm_sched_table.py).
    Asserted: the simulator's first touch is spread over every node (each new worker runs on the
    CPU it was placed on until it docks; the simulator stacked the team on node 0 before it
    modelled that), and in every guest run no node holds three quarters of the pages (the team is
    not stacked on one node; CI saw 37-38 % on the fullest node, once 50.4 %: four workers' blocks,
    and one run with a node left empty: the agent's ptrace() stops at team start delay some
    workers; docs/scheduler.md §10.3). In every guest run
    some threads also run off their first node for part of the time, and over the three runs at
    least a quarter of the threads do (CI saw 3..7 of 8 per run). The simulator, carrying the
    guest's measured background (the agent's samples, kernel threads; §10.3), moves threads
    across nodes too: asserted on the simulator alone (its figures are fixed by the seed). Not
    asserted: the migrations per barrier against the guest's, which follow the host's load (the
    guest 0.041-0.065 in six runs of 9 s at load 0.8-9, 0.0195-0.0295 in three of 4.4 s at load
    3-4 on 2026-11-27; the simulator with the host model 0.101, docs/scheduler.md §10.5)."""
    c = check.compare(check.CASES["sched-passive-4x2"], timeout_s=600, runs=3)
    table = check.sched_table([c])
    assert c.ok, check.report(c)
    assert len(c.vm_runs) == 3 and c.vm_runs[0] is c.vm
    assert min(c.sim.after_init) >= c.sim.total / len(c.sim.after_init) / 4, table
    for side in c.vm_runs:
        assert max(side.after_init) < side.total * 3 / 4, table
    for side in c.vm_runs:
        assert side.threads.changed_node >= 1 and side.threads.mean_away_pct > 0.0, table
    moved = sum(side.threads.changed_node for side in c.vm_runs)
    assert moved >= sum(len(side.threads.away_pct) for side in c.vm_runs) / 4, table
    assert c.sim.threads.changed_node >= 1 and c.sim.threads.mean_away_pct > 0.0, table


@pytest.mark.xdist_group("vm-alloc")
def test_malloced_rows_stay_on_the_allocating_threads_node_and_one_block_spreads_in_the_guest_as_in_the_simulator(guest, vm_compared):
    """kernels/alloc3d.c, 128^3 doubles (16 MiB), written in parallel by 4 threads bound one per
    node: malloc'ed as 1 KiB rows by the master (NPB 2.3-omp-C MG's layout), glibc's chunk headers
    put the whole brk heap on node 0; malloc'ed by each thread for its planes, each thread's arena
    is on its node; as one malloc (its own mapping), the parallel loop puts a quarter on each node.
    The guest's numa_maps regions of the grid and the simulator's pages agree within 0.5% of the
    region on every node (docs/allocation.md §3.5)."""
    rows, each, block = vm_compared("alloc-rows"), vm_compared("alloc-rows-parallel"), vm_compared("alloc-block")
    for c in (rows, each, block):
        text = check.report(c)
        assert c.ok, text
        limit = 0.005 * c.sim.total
        assert all(abs(v - s) <= limit for s, v in zip(c.sim.after_init, c.vm.after_init)), text
        assert abs(c.vm.total - c.sim.total) <= limit, text
    for side in (rows.sim, rows.vm):
        assert side.after_init[0] >= 0.99 * side.total, check.report(rows)
    for c in (each, block):
        for side in (c.sim, c.vm):
            assert all(abs(p - side.total / 4) <= 0.005 * side.total for p in side.after_init), check.report(c)


def vm_side_peak(out: vm_run.VmOutput, doc: dict) -> list[int]:
    """Anonymous pages per node at the first sample in which the command had all its pages."""
    return check.vm_side(out, doc).after_init


@pytest.fixture
def private_tmp(tmp_path, monkeypatch):
    """A temporary directory of this test's own, so other runs on the machine do not count."""
    d = tmp_path / "tmp"
    d.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(d))
    return d


def test_two_runs_at_once_each_get_their_own_placement(guest, private_tmp):
    """Two guests at once (no shared temporary paths); --membind N puts the pages on node N and
    the document says where they went, as numalab run does on a host."""
    results: dict[int, dict] = {}
    errors: list[BaseException] = []

    def one(node: int) -> None:
        try:
            # 150 multiplies sampled every 100 ms keep the matrix for several of the agent's
            # samples even when the host leaves the agent's vCPU unrun for a while (two guests
            # on 2 cores; with 30 every 20 ms, one fresh run's agent sampled only before the
            # matrix and after it was freed), and no more samples than before: each one
            # allocates on the agent's node, which counts in the guest's numa_hit.
            req = vm_run.VmRequest("vm-4", ["dgemv", "--n=1000", "--reps=150", "--threads=1"],
                                   placement=Placement(policy="bind", nodes=str(node), cpunodebind=str(3 - node)),
                                   thp="never", timeout_s=300, interval_ms=100)
            out = vm_run.run(req)
            results[node] = vm_run.document(out)
            results[node]["peak"] = vm_side_peak(out, results[node])
        except BaseException as e:  # reported below, in the test's thread
            errors.append(e)

    threads = [threading.Thread(target=one, args=(n,)) for n in (1, 2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    for node, doc in results.items():
        assert doc["source"] == "vm" and doc["status"] == "ok" and doc["machine"]["name"] == "vm-4"
        assert doc["placement"]["policy"] == "bind" and doc["placement"]["nodes"] == str(node)
        # The whole 8 MB matrix (1953 pages) allocated on node N, by the kernel's count and in
        # numa_maps at the sample where the process had all its pages (the document's pages are
        # the last sample's, which for a run this short may come while the matrix is freed).
        hits = [doc["numastat"][f"node{n}"]["numa_hit"] for n in range(4)]
        assert hits[node] >= 1953 and sum(hits) - hits[node] < 500, hits
        peak = doc["peak"]
        assert peak[node] >= 1953 and sum(peak) - peak[node] < 50, peak
        assert json.loads(doc["vm"]["stdout"])["kernel"] == "dgemv"
    assert list(private_tmp.iterdir()) == [], "temporary files left behind"


@pytest.mark.xdist_group("vm-alloc")
def test_cases_that_share_a_boot_each_get_their_own_records_counters_and_pages(guest, vm_compared):
    """vm check's shared boots (check.compare_many, vm_run.run_many): the vm-4 placement and malloc
    cases run one after the other in one guest, each with its own agent records, output and
    counters that are differences over its own command, as a boot of its own gives: the guest's
    numa_hit is the simulator's (the command's own pages) within 15%, not the sum of the commands
    before it (each allocates 4,000-8,000 pages), and its pages are its own."""
    names = [n for n in check.CASES if vm_group(n) == "vm-alloc"]
    assert len(names) >= 2
    for c in (vm_compared(n) for n in names):
        text = check.report(c)
        doc = c.vm_doc or {}
        assert doc["vm"]["boot_commands"] >= 2, text
        assert json.loads(doc["vm"]["stdout"])["kernel"].startswith(c.case.workload), text  # alloc3d prints its layout too
        hit = c.sim.counters["numa_hit"]
        assert abs(c.vm.counters["numa_hit"] - hit) <= 0.15 * hit, text
        assert abs(c.vm.total - c.sim.total) <= 0.03 * c.sim.total, text


def test_vm_run_cli_prints_the_summary_and_the_json(guest, cli, tmp_path):
    out = tmp_path / "r.json"
    code, stdout, err = cli("vm", "run", "--machine", "vm-8", "--interleave", "all", "--thp", "never", "-o", str(out),
                            "--balancing", "on", "--scan-delay-ms", "77",
                            "--", "dgemv", "--n", "800", "--reps", "1", "--threads", "1")
    assert code == 0, err
    assert '"kernel":"dgemv"' in stdout
    assert "memory per node (MiB):" in err and "node7" in err and "guest: Linux" in err
    doc = json.loads(out.read_text())
    assert doc["source"] == "vm" and doc["placement"]["policy"] == "interleave" and len(doc["pages"]["per_node"]) == 8
    # the kernel's own knobs, read back in the guest after the agent set them
    b = doc["placement"]["balancing"]
    assert b["numa_balancing"] == 1 and b["scan_delay_ms"] == 77 and b["scan_period_min_ms"] == 1000



@pytest.fixture(scope="module")
def short_vm4_runs(guest, tmp_path_factory) -> dict[str, vm_run.VmOutput]:
    """The short vm-4 commands of the tests below, in one guest boot (``vm_run.run_many``, as ``vm
    check`` shares boots: each command has its own agent, records and files): a boot costs more
    than either command."""
    prog = tmp_path_factory.mktemp("prog") / "prog"
    shutil.copy2(REPO / "kernels" / "dgemv", prog)
    # fullblock: a read of /dev/zero that a pending signal cuts short (drivers/char/mem.c:
    # read_iter_zero) is read on, so the whole buffer is written however the guest is scheduled.
    commands = {"tmp": [str(prog), "--n=200", "--reps=1", "--threads=1"],
                "dd": ["dd", "if=/dev/zero", "of=/dev/null", "bs=8M", "count=1", "iflag=fullblock"]}
    outs = vm_run.run_many([vm_run.VmRequest("vm-4", cmd, timeout_s=300) for cmd in commands.values()])
    return dict(zip(commands, outs))


def test_a_binary_under_tmp_runs_in_the_guest(short_vm4_runs):
    """`numalab vm run -- ./prog` from a clone in /tmp: the binary is where the guest looks for it."""
    out = short_vm4_runs["tmp"]
    assert out.request.command[0].startswith("/tmp/")
    assert out.status == 0, out.text("stderr")
    assert json.loads(out.text("stdout"))["kernel"] == "dgemv"


def test_a_long_output_is_cut_in_the_guest_and_said(guest, cli):
    """20 MB on stdout: the guest sends back its first guest.OUTPUT_CAP bytes and the size."""
    from numalab.vm import guest as vm_guest

    code, stdout, err = cli("vm", "run", "--", "sh", "-c", "yes numalab | head -c 20000000")
    assert code == 0, err
    assert len(stdout) == vm_guest.OUTPUT_CAP and stdout.startswith("numalab\nnumalab\n")
    assert f"numalab vm: the command wrote 20000000 bytes to stdout; only the first {vm_guest.OUTPUT_CAP} were kept" in err

def test_a_guest_that_does_not_finish_is_killed(guest, private_tmp):
    with pytest.raises(qemu.GuestTimeout, match=r"did not finish within 2 s .*QEMU was killed"):
        vm_run.run(vm_run.VmRequest("vm-4", ["sleep", "600"], timeout_s=2))
    assert list(private_tmp.iterdir()) == [], "temporary files left behind"


def test_vm_shell_is_a_shell_in_the_guest(guest):
    """`numalab vm shell`: the guest's console on the terminal (a pseudo-terminal here); `exit`
    powers the guest off."""
    import pty
    import sys

    numalab = [sys.executable, "-c", "from numalab.cli.main import run; run()"]
    master, terminal = pty.openpty()
    seen = b""
    try:
        with subprocess.Popen([*numalab, "vm", "shell", "--machine", "vm-4"], stdin=terminal,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT) as p:
            os.close(terminal)
            terminal = -1
            watchdog = threading.Timer(180, p.kill)  # a guest that hangs fails the test, not the suite
            watchdog.start()
            try:
                assert p.stdout is not None

                def read_until(text: bytes) -> None:
                    nonlocal seen
                    while text not in seen:
                        chunk = p.stdout.read1(4096)
                        assert chunk, seen.decode(errors="replace")[-2000:]
                        seen += chunk

                read_until(b"built-in shell")  # busybox's banner: the shell reads its console now
                # One line at a time, as a person types: the answer, then `exit`.
                os.write(master, b"echo nodes=$(cat /sys/devices/system/node/online) balancing=$(cat /proc/sys/kernel/numa_balancing)\n")
                read_until(b"nodes=0-3 balancing=0")
                os.write(master, b"exit\n")
                rest, _ = p.communicate(timeout=120)
            finally:
                watchdog.cancel()
                if p.poll() is None:
                    p.kill()
    finally:
        os.close(master)
        if terminal >= 0:
            os.close(terminal)
    text = (seen + rest).decode(errors="replace")
    assert p.returncode == 0, text[-2000:]
    assert "available: 4 nodes (0-3)" in text and "nodes=0-3 balancing=0" in text


@pytest.mark.xdist_group("vm-tier")
def test_tiered_guest_gets_numa_balancing_2_demotion_and_its_hmat(guest, vm_compared):
    """vm-tier (docs/tiering.md §11): the CPU-less node carries the preset's HMAT figures in the guest
    and is a lower memory tier (onlined by dax/kmem), numa_balancing=2 and demotion_enabled reach the
    guest kernel, and both the guest kernel and the simulator demote under pressure and promote
    hot slow-tier pages."""
    from numalab.spec.balancing import Balancing

    out = vm_run.run(vm_run.VmRequest(
        "vm-tier", ["cat", "/sys/devices/system/node/has_cpu", "/sys/devices/system/node/node2/access0/initiators/read_latency",
                    "/sys/devices/system/node/node2/access0/initiators/read_bandwidth"],
        balancing=Balancing.parse("balancing=2:hot-threshold-ms=500:demotion-enabled"), timeout_s=300))
    doc = vm_run.document(out)
    assert doc["vm"]["stdout"].split() == ["0-1", "250", "2500"], doc["vm"]["stdout"]
    assert doc["placement"]["balancing"]["numa_balancing"] == 2
    tiers = doc["vm"]["memory_tiers"]
    assert tiers["demotion_enabled"] is True
    # the DRAM nodes in one tier, the dax/kmem node in a slower one (a larger memory_tierN)
    by_nodes = {nodes: int(name.removeprefix("memory_tier")) for name, nodes in tiers["tiers"].items()}
    assert set(by_nodes) == {"0-1", "2"} and by_nodes["2"] > by_nodes["0-1"], tiers
    demoted, kept, promoted = vm_compared("tier-demotion"), vm_compared("tier-no-demotion"), vm_compared("tier-promotion")
    text = "\n".join(check.report(c) for c in (demoted, kept, promoted))
    for c in (demoted, kept, promoted):
        assert c.sim.memory_tiers == 2 and c.vm.memory_tiers == 2, text
    for side in (demoted.sim, demoted.vm):
        assert side.counters["pgdemote_kswapd"] + side.counters["pgdemote_direct"] > 0, text
    for side in (kept.sim, kept.vm):
        assert side.counters["pgdemote_kswapd"] + side.counters["pgdemote_direct"] == 0, text
    for side in (promoted.sim, promoted.vm):
        # promotion into the full fast node: refused first, which wakes kswapd to demote and make room
        assert 0 < side.counters["pgpromote_success"] <= side.counters["pgpromote_candidate"], text
        assert side.counters["pgdemote_kswapd"] > 0, text


def test_a_tiering_switch_the_guest_kernel_lacks_is_an_error(guest):
    from numalab.spec.balancing import Balancing

    if vm_run.kernel_tuple(guest.kernel_version) >= (6, 16):
        pytest.skip("the guest kernel has weighted interleave's auto weights")
    with pytest.raises(vm_run.GuestCommandError, match="weighted_interleave/auto: absent in the guest kernel"):
        vm_run.run(vm_run.VmRequest("vm-tier", ["true"], balancing=Balancing.parse("weighted-interleave-auto"), timeout_s=300))


def test_a_program_that_ends_before_the_first_sample_is_read_at_its_exit_in_the_guest(short_vm4_runs):
    """The agent traces the command in the guest too: dd's 8 MiB buffer is in the exit snapshot."""
    out = short_vm4_runs["dd"]
    assert out.status == 0, out.text("stderr")
    recs = [json.loads(line) for line in out.text("agent.jsonl").splitlines() if line.strip()]
    summary = recs[-1]
    assert recs[0]["exit_snapshot"] is True and summary["pages_basis"] == "exit_snapshot"
    # Seen once on 2026-11-26 (1.07 MB, not reproduced since): say what the agent saw and when.
    seen = {k: summary.get(k) for k in ("pages_t_s", "wall_s", "samples", "maps_reads", "errors", "exit_code", "rusage")}
    snapshots = [(r.get("t_s"), r.get("snapshot"), r.get("bytes_per_node")) for r in recs if r.get("type") == "sample"]
    assert sum(summary["bytes_per_node"].values()) >= 8 << 20, (out.text("stderr"), seen, snapshots)
    assert {t["snapshot"] for t in summary["threads"]} == {"exit"}
