"""Shared fixtures: run the CLI in-process and compare with golden files."""

from __future__ import annotations

import os
import resource
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from numalab.cli.main import run

GOLDEN = Path(__file__).parent.parent / "golden"
REPO = Path(__file__).resolve().parents[2]
#: What the guest tests install when QEMU is missing (as root, with apt-get).
QEMU_PACKAGES = ["qemu-system-x86", "busybox-static", "numactl", "cpio"]


@pytest.fixture
def cli(capsys):
    """``cli("topo", "--list") -> (exit_code, stdout, stderr)``."""

    def call(*args: str) -> tuple[int, str, str]:
        code = 0
        try:
            run(list(args))
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else 1
        out = capsys.readouterr()
        return code, out.out, out.err

    return call


@pytest.fixture
def golden():
    """``golden("name.out", text)``: compare with tests/golden/name.out. NUMALAB_UPDATE_GOLDEN=1
    writes it (and is the only way a golden file comes to exist: a missing one fails, so a typo in
    a name or a file left out of a commit cannot pass by writing what the code prints today)."""

    def check(name: str, text: str) -> None:
        path = GOLDEN / name
        if os.environ.get("NUMALAB_UPDATE_GOLDEN") == "1":
            path.write_text(text, encoding="utf-8")
        assert path.exists(), f"no golden file {path}: run the test with NUMALAB_UPDATE_GOLDEN=1 to write it, then review and commit it"
        assert text == path.read_text(encoding="utf-8"), f"output differs from {path} (NUMALAB_UPDATE_GOLDEN=1 to accept)"

    return check


def _install_qemu() -> None:
    from numalab.vm import setup as vm_setup

    if shutil.which(vm_setup.QEMU) or os.geteuid() != 0 or not shutil.which("apt-get"):
        return
    subprocess.run(["apt-get", "update", "-qq"], capture_output=True, check=False, timeout=900)
    subprocess.run(["apt-get", "install", "-y", "-qq", "--no-install-recommends", *QEMU_PACKAGES],
                   capture_output=True, check=False, timeout=900)


@pytest.fixture(scope="session")
def guest():
    """The guest (``vm setup``) for the tests that boot one (test_vm_guest.py, test_vm_filemap.py),
    with the agent and the C kernels built if missing; skipped only when QEMU is absent and
    cannot be installed."""
    from numalab.vm import check
    from numalab.vm import setup as vm_setup

    _install_qemu()
    if not shutil.which(vm_setup.QEMU):
        pytest.skip(f"{vm_setup.QEMU} is absent and could not be installed (`{vm_setup.INSTALL_QEMU}` as root)")
    if not vm_setup.AGENT_BUILT.is_file() and not os.environ.get("NUMALAB_AGENT"):
        subprocess.run(["make", "-s", "agent"], cwd=REPO, check=True, timeout=1800)
    if not all((REPO / "kernels" / k).is_file() for k in check.KERNEL_OPTIONS):
        subprocess.run(["make", "-s", "kernels"], cwd=REPO, check=True, timeout=600)
    try:
        return vm_setup.setup()
    except vm_setup.SetupError:
        if os.geteuid() != 0 or not shutil.which("apt-get"):
            raise
        # apt's package lists may be empty on a fresh machine: fetch them once and retry.
        subprocess.run(["apt-get", "update", "-qq"], capture_output=True, check=False, timeout=900)
        return vm_setup.setup()


def vm_group(name: str) -> str | None:
    """The xdist group of the tests that read ``vm check`` case ``name``'s comparison (through
    ``vm_compared``), if any: the cases of a group are compared together, in as few guest boots
    as ``check.compare_many`` can share, so each group's tests must run on one worker."""
    from numalab.vm import check

    c = check.CASES[name]
    if c.machine in check.MULTI_CPU_MACHINES:
        return None  # read by their own tests (several guest runs), not through vm_compared
    if c.sched or c.machine == "vm-8":
        return f"vm-sched-{c.machine}"
    if c.machine == "vm-tier":
        return "vm-tier"
    if c.workload == "filemap":
        return "vm-filemap"
    # the other vm-4 cases share one boot; balancing's knobs need a boot of its own (and a worker's time)
    return None if "balancing" in c.config.split(":") else "vm-alloc"


_COMPARED: dict = {}


def _compare_many_once_more_if_stuck(cases: list) -> list:
    """``check.compare_many`` with 300 s per case (each takes well under a minute), booted once
    more if the guest runs out of time: a TCG guest can lose an interrupt ("__common_interrupt:
    ... No irq handler for vector" on its console, seen once on 2026-11-27 in a fresh run's
    sched-unbound) and leave a command waiting forever with every vCPU idle; that is QEMU's or the
    guest kernel's, not what the test checks. A second time out fails the test."""
    from numalab.vm import check, qemu

    try:
        return check.compare_many(cases, timeout_s=300)
    except qemu.GuestTimeout as e:
        print(f"vm_compared: {e.args[0].splitlines()[0]}; booting once more", file=sys.stderr)
        return check.compare_many(cases, timeout_s=300)


@pytest.fixture(scope="session")
def vm_compared(guest):
    """``vm_compared(name)``: case ``name``'s ``check.Comparison``, made once per session with the
    other cases of its ``vm_group`` not made yet (the scheduler orderings and several tests reuse them)."""
    from numalab.vm import check

    def compared(name: str):
        if name not in _COMPARED:
            group = vm_group(name)
            names = [n for n in check.CASES if n == name or (group is not None and vm_group(n) == group and n not in _COMPARED)]
            for c in _compare_many_once_more_if_stuck([check.CASES[n] for n in names]):
                _COMPARED[c.case.name] = c
        return _COMPARED[name]

    return compared


def pytest_configure(config):
    """Start every test's programs with SIGINT and SIGQUIT at their default actions.

    A shell without job control (`make test &` in a script) starts a background job with both
    ignored, every program below inherits that, and a Python started with SIGINT ignored never
    raises KeyboardInterrupt: the tests that stop numalab with a signal would wait for nothing.
    A Python handler here becomes the default action in every program the tests start (exec
    resets handled signals, not ignored ones).
    """
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGQUIT, signal.SIG_DFL)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config, items):
    """``--dist loadgroup`` (make test): the guest tests first, each ``xdist_group`` on one worker,
    and the tests of a module that share a module- or class-scoped fixture too (else each worker
    would build it again). pytest-xdist 3.8 names the group by renaming ``item._nodeid``, which pytest 9.2 no
    longer reads (a node's id is ``item._id``); rename through ``_id`` the same way
    (``<nodeid>@<group>``)."""
    if not getattr(config.option, "loadgroup", False):  # set on xdist's workers under loadgroup
        return
    for item in items:
        defs = getattr(getattr(item, "_fixtureinfo", None), "name2fixturedefs", {})
        if any(d and d[-1].scope in ("module", "class") for d in defs.values()):
            item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::")[0]))
    # The guest tests first, then the other groups, largest first: xdist hands out groups in
    # collection order (make test passes --no-loadscope-reorder: xdist's own order, by number of
    # tests, would put the guest groups, a few tests each but the suite's longest stretches on one
    # worker at 1-3 minutes, after the module groups, to run on after the other workers ran out).
    size: dict[str, int] = {}
    for item in items:
        size[_group(item)] = size.get(_group(item), 0) + 1
    items.sort(key=lambda item: (item.get_closest_marker("needs_qemu") is None, -size[_group(item)] if _group(item) else 0))
    try:
        from _pytest.nodeid import NodeId
    except ImportError:  # an older pytest: xdist's own renaming works there
        return
    for item in items:
        suffix = "@" + _group(item)
        if _group(item) and hasattr(item, "_id") and not item.nodeid.endswith(suffix):
            item._id = NodeId.parse(item.nodeid + suffix)


def _group(item) -> str:
    """The item's xdist group name as xdist makes it (its groups' names, sorted, joined by _), or ''."""
    return "_".join(sorted({str(m.args[0] if m.args else m.kwargs.get("name", "default")) for m in item.iter_markers("xdist_group")}))


#: ``NUMALAB_TEST_CPU_LOG=path``: append one line per test, ``<cpu s> <wall s> <nodeid>``, its CPU
#: time (setup, call and teardown; this process and the children it waited for: CLI subprocesses,
#: study workers, QEMU), to find where the suite's time goes. Workers append to the same file.
_CPU_LOG = os.environ.get("NUMALAB_TEST_CPU_LOG")


def _cpu_seconds() -> float:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    if not _CPU_LOG:
        yield
        return
    cpu, wall = _cpu_seconds(), time.monotonic()
    yield
    line = f"{_cpu_seconds() - cpu:.3f} {time.monotonic() - wall:.3f} {item.nodeid}\n"
    fd = os.open(_CPU_LOG, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line.encode())
    finally:
        os.close(fd)
