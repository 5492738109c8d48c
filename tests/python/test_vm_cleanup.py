"""numalab vm leaves nothing behind and checks its options: QEMU dies with numalab however it
ends (SIGTERM, SIGINT, SIGKILL), out-of-range options are one line before anything boots, and
``vm shell`` without a terminal is refused instead of waiting for ever. QEMU is played by a
Python process that sleeps, so these tests need no guest."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

# The harness: `numalab vm run -- true` whose QEMU is a sleeping stand-in writing its pid to a file.
HARNESS = textwrap.dedent("""
    import signal
    import sys
    from numalab.vm import qemu

    # As from a terminal: a background job of a script inherits SIGINT ignored (and keeps it so).
    signal.signal(signal.SIGINT, signal.default_int_handler)
    from numalab.vm import run as vm_run

    pidfile = sys.argv[1]
    fake_qemu = [sys.executable, "-c", f"import os, time; open({pidfile!r}, 'w').write(str(os.getpid())); time.sleep(600)"]
    vm_run.run = lambda req, say=None: qemu.boot(fake_qemu, "READY", 600)
    from numalab.cli.main import run
    run(["vm", "run", "--", "true"])
""")


def _start(tmp_path: Path) -> tuple[subprocess.Popen, int]:
    pidfile = tmp_path / "qemu.pid"
    p = subprocess.Popen([sys.executable, "-c", HARNESS, str(pidfile)], stdin=subprocess.DEVNULL,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not (pidfile.is_file() and pidfile.read_text()):
        assert p.poll() is None and time.monotonic() < deadline, p.communicate()
        time.sleep(0.05)
    return p, int(pidfile.read_text())


def _gone(pid: int, within_s: float = 10) -> bool:
    """The process has ended (its zombie reaped or not: a zombie no longer runs)."""
    deadline = time.monotonic() + within_s
    while True:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError):
            return True
        if state in ("Z", "X"):
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)


@pytest.mark.parametrize("sig, code, message", [
    (signal.SIGTERM, 143, "numalab: vm: stopped by SIGTERM; QEMU was killed"),
    (signal.SIGINT, 130, None),  # Ctrl-C ends as every command's does (at most one line)
    (signal.SIGHUP, 129, "numalab: vm: stopped by SIGHUP; QEMU was killed"),
])
def test_a_stop_signal_kills_qemu_and_exits_as_shells_do(tmp_path, sig, code, message):
    p, qemu_pid = _start(tmp_path)
    p.send_signal(sig)
    out, err = p.communicate(timeout=60)
    try:
        assert p.returncode == code, err
        if message is None:
            assert len(err.strip().splitlines()) <= 1 and "Traceback" not in err, err
        else:
            assert err.strip().splitlines() == [message], err
        assert _gone(qemu_pid), "QEMU outlived numalab vm run"
    finally:
        if not _gone(qemu_pid, 0):
            os.kill(qemu_pid, signal.SIGKILL)


def test_qemu_dies_with_numalab_even_on_sigkill(tmp_path):
    """No handler runs on SIGKILL: the kernel's parent-death signal ends QEMU."""
    p, qemu_pid = _start(tmp_path)
    p.kill()
    p.communicate(timeout=60)
    try:
        assert _gone(qemu_pid), "QEMU outlived a killed numalab"
    finally:
        if not _gone(qemu_pid, 0):
            os.kill(qemu_pid, signal.SIGKILL)


@pytest.mark.parametrize("args, message", [
    (["--cpus-per-node", "1000"], "--cpus-per-node must be in 1..64, got 1000"),
    (["--cpus-per-node", "0"], "--cpus-per-node must be in 1..64, got 0"),
    (["--machine", "e5-2620v4-2s", "--cpus-per-node", "64", "--memory-per-node-mib", "64"], None),
    (["--timeout", "nan"], "--timeout must be a number of seconds in (0, 604800], got nan"),
    (["--timeout", "inf"], "--timeout must be a number of seconds in (0, 604800], got inf"),
    (["--timeout", "0"], "--timeout must be a number of seconds in (0, 604800], got 0"),
    (["--timeout", "1e9"], "--timeout must be a number of seconds in (0, 604800], got 1e+09"),
])
def test_out_of_range_vm_options_are_one_line_before_boot(cli, args, message, monkeypatch, tmp_path):
    from numalab.vm import setup as vm_setup

    def no_setup(*a, **k):  # nothing may be downloaded or booted for a bad option
        raise vm_setup.SetupError("vm setup reached")

    monkeypatch.setattr(vm_setup, "load", no_setup)
    code, _, err = cli("vm", "run", *args, "--", "true")
    if message is None:
        # a preset with fewer CPUs per node takes --cpus-per-node 64 as "all of them": valid
        assert (code, err.strip()) == (1, "numalab: vm setup reached"), err
        return
    assert code == 2, err
    assert err.strip().splitlines() == [f"numalab: {message}"], err


def test_more_vcpus_than_q35_takes_are_refused():
    from numalab.exceptions import UsageError
    from numalab.machine import load as load_machine
    from numalab.vm import qemu

    with pytest.raises(UsageError, match=r"would have \d+ vCPUs .*at most 255"):
        qemu.topology(load_machine("epyc9654-2s-nps4"), 64, 64)


@pytest.mark.parametrize("stdin", [subprocess.DEVNULL, subprocess.PIPE])
def test_vm_shell_without_a_terminal_is_refused(stdin):
    p = subprocess.run([sys.executable, "-c", "from numalab.cli.main import run; run()", "vm", "shell"],
                       **({"input": b"exit\n"} if stdin == subprocess.PIPE else {"stdin": stdin}), capture_output=True, timeout=60)
    err = p.stderr.decode()
    assert p.returncode == 2, err
    assert err.strip().splitlines() == [
        "numalab: vm shell needs a terminal on stdin (the guest's console never ends otherwise); "
        "to run a script in the guest: numalab vm run -- sh -c '...'"], err


def _fake_qemu(script: str) -> list[str]:
    return [sys.executable, "-c", textwrap.dedent(script)]


def test_a_boot_without_its_ready_line_in_time_is_killed_as_hung(tmp_path):
    from numalab.vm import qemu

    pidfile = tmp_path / "qemu.pid"
    fake = _fake_qemu(f"""
        import os, time
        open({str(pidfile)!r}, "w").write(str(os.getpid()))
        print("Linux version 6.1 ...", flush=True)
        time.sleep(600)
    """)
    start = time.monotonic()
    with pytest.raises(qemu.BootHung, match=r"not ready within 1 s \(boot hung\).*\n.*Linux version"):
        qemu.boot(fake, "READY", 600, ready_within_s=1)
    assert time.monotonic() - start < 30
    assert _gone(int(pidfile.read_text()))


def test_a_guest_ready_in_time_runs_to_its_end_past_the_ready_limit():
    from numalab.vm import qemu

    fake = _fake_qemu("""
        import time
        print("x READY", flush=True)
        time.sleep(1.5)
        print("done", flush=True)
    """)
    b = qemu.boot(fake, "x READY", 60, ready_within_s=0.5)
    assert b.returncode == 0 and b.ready_s is not None and b.console.endswith("done")


def test_a_hung_boot_is_booted_once_more_and_said(tmp_path, monkeypatch):
    from numalab.vm import run as vm_run

    first = tmp_path / "first-boot"
    fake = _fake_qemu(f"""
        import os, time
        if not os.path.exists({str(first)!r}):
            open({str(first)!r}, "w").close()
            time.sleep(600)
        print("x READY", flush=True)
    """)
    monkeypatch.setattr(vm_run, "READY_WITHIN_S", 1.0)
    said: list[str] = []
    b = vm_run._boot_once_more_if_hung(fake, "x READY", 60, said.append)
    assert b.returncode == 0 and b.ready_s is not None
    assert len(said) == 1 and "boot hung" in said[0] and said[0].endswith("booting it once more")


def test_a_boot_hung_twice_is_an_error(monkeypatch):
    from numalab.vm import qemu
    from numalab.vm import run as vm_run

    monkeypatch.setattr(vm_run, "READY_WITHIN_S", 0.5)
    with pytest.raises(qemu.BootHung):
        vm_run._boot_once_more_if_hung(_fake_qemu("import time; time.sleep(600)"), "x READY", 60, lambda s: None)
