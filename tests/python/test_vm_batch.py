"""Several ``vm check`` commands in one guest boot, without booting: which requests share a boot
(``check.boots``), and the guest's batch script (``guest.batch_script``). test_vm_guest.py runs
batches in a real guest."""

from __future__ import annotations

import subprocess
from dataclasses import replace

import pytest

from numalab.exceptions import UsageError
from numalab.spec import Placement
from numalab.spec.balancing import Balancing
from numalab.vm import check, guest, initramfs, ramdisk
from numalab.vm import run as vm_run


def req(machine: str = "vm-4", **kw) -> vm_run.VmRequest:
    return vm_run.VmRequest(machine, ["dgemv", "--n=100"], thp="never", **kw)


def test_requests_with_one_boot_key_share_a_boot_and_the_others_boot_their_own():
    reqs = [req(), req("vm-8"), req(placement=Placement(policy="interleave", nodes="all")),
            req(balancing=Balancing.parse("balancing:scan-delay-ms=50")), req(ramdisk_mib=16), req("vm-8")]
    assert check.boots(reqs) == [[0, 2], [1, 5], [3], [4]]
    # runs take turns in their boot; a request of its own boots once per run
    assert check.boots(reqs, runs=2) == [[0, 2, 0, 2], [1, 5, 1, 5], [3], [3], [4, 4]]
    assert check.boots([req()] * 30) == [list(range(12)), list(range(12, 24)), list(range(24, 30))]
    # a different THP mode, memory size or accelerator is another boot
    assert len(check.boots([req(), replace(req(), thp="always"), req(memory_per_node_mib=256), req(accel="kvm")])) == 4


def test_what_leaves_a_setting_behind_does_not_share_a_boot():
    assert vm_run.shareable(req())
    assert vm_run.shareable(req(balancing=Balancing.parse("demotion-enabled")))  # a sysfs switch: put back after
    assert not vm_run.shareable(req(balancing=Balancing.parse("balancing:scan-delay-ms=50")))  # the agent's knobs stay set
    assert not vm_run.shareable(req(balancing=Balancing.parse("balancing=2")))  # numa_balancing itself is a knob
    assert not vm_run.shareable(req(placement=Placement(policy="weighted-interleave", nodes="all", weights=((0, 2),))))
    assert vm_run.shareable(req(ramdisk_mib=16))  # its page cache is dropped between commands
    with pytest.raises(UsageError, match="share a boot"):
        vm_run.run_many([req(), req("vm-8")])
    with pytest.raises(UsageError, match="share a boot"):
        vm_run.run_many([req(), req(ramdisk_mib=16)])


def _jobs() -> list[guest.Job]:
    return [guest.Job(mark="NUMALAB-a", command=["/bin/x", "a b"], env={"OMP_PROC_BIND": "spread"}, thp="never",
                      sysfs=(("/sys/kernel/mm/numa/demotion_enabled", "true"),), kmem=("echo kmem-once",)),
            guest.Job(mark="NUMALAB-b", command=["/bin/y"], thp="never", kmem=("echo kmem-once",), reset=tuple(ramdisk.reset(16)))]


def test_the_batch_script_runs_each_command_on_its_own_and_frames_its_files_under_its_own_mark():
    jobs = _jobs()
    s = guest.batch_script(jobs)
    assert s.count("echo kmem-once") == 1 and s.index("echo kmem-once") < s.index("/bin/x")
    assert s.count('echo "$MARK READY"') == 1 and s.startswith("MARK=NUMALAB-a\n")
    # each command in a subshell (its environment its own), under its own mark, from a fresh /tmp/out
    first, second = s.split("MARK=NUMALAB-b")
    assert "export OMP_PROC_BIND=spread" in first and "OMP_PROC_BIND" not in second
    assert second.count('echo "$MARK BEGIN"') == 1 and first.count('echo "$MARK BEGIN"') == 1
    assert s.count("cp -r /tmp/boot /tmp/out") == 2 and s.count("rm -rf /tmp/out /tmp/work") == 2
    # the switch is written before the command and its old value written back after the frames' last read
    x = first.index("numalab-agent run")
    assert first.index("old0=$(cat /sys/kernel/mm/numa/demotion_enabled") < first.index("echo true >") < x
    assert x < first.index("demotion_enabled $(cat") < first.index('echo "$old0" > /sys/kernel/mm/numa/demotion_enabled')
    # the ramdisk's page cache written back and dropped before the second command
    assert s.count("blockdev --flushbufs /dev/ram0") == 1
    assert s.index("/bin/x") < s.index("blockdev --flushbufs /dev/ram0") < s.index("/bin/y")
    assert ramdisk.reset(0) == []
    assert guest.script(jobs[:1]) == guest.job_script(jobs[0])
    with pytest.raises(ValueError):
        guest.batch_script([replace(jobs[0], knobs={"scan_delay_ms": 50})])
    data = initramfs.job_archive(jobs)
    assert len(data) % 512 == 0 and b"NUMALAB-b" in data


def test_the_batch_script_in_a_shell_gives_each_command_its_files_and_puts_the_switch_back(tmp_path):
    """The script under sh with the guest's paths moved into a directory: each command's frames
    carry its own status and output, and the switch reads as before once the batch is done."""
    root = tmp_path
    switch = root / "demotion_enabled"
    switch.write_text("false\n")
    (root / "port").write_text("")
    jobs = [guest.Job(mark="NUMALAB-a", command=["sh", "-c", f"cat {switch}; exit 3"], sysfs=((str(switch), "true"),)),
            guest.Job(mark="NUMALAB-b", command=["sh", "-c", f"cat {switch}; ls"])]
    # the port is a file here: appended to, as the guest's serial device is written in turn
    s = guest.batch_script(jobs).replace(f"}} > {guest.DATA_PORT}", f"}} >> {root / 'port'}")
    for d in ("out", "boot", "work"):
        s = s.replace(f"/tmp/{d}", f"{root}/{d}")
    # a stand-in agent: runs the command after "--" and writes an empty record file
    agent = root / "agent"
    agent.write_text('#!/bin/sh\nif [ "$1" = run ]; then out=""; while [ "$1" != -- ]; do case "$1" in --output=*) out="${1#--output=}";; esac; shift; done; '
                     'shift; : > "$out"; exec "$@"; fi\necho "{}"\n')
    agent.chmod(0o755)
    s = s.replace(guest.AGENT, str(agent)).replace("numactl -H", "echo nodes").replace("uname -r", "echo 6.1")
    s = s.replace("cut -d' ' -f1 /proc/uptime", "echo 1.0").replace("stty -F", "true")
    subprocess.run(["sh", "-c", s], check=True, cwd=root, timeout=60)
    from numalab.vm import protocol

    text = (root / "port").read_text()
    a, b = protocol.read_frames(text, "NUMALAB-a"), protocol.read_frames(text, "NUMALAB-b")
    assert a["status"] == b"3\n" and a["stdout"] == b"true\n" and a["uname"] == b"6.1\n"
    assert b["status"] == b"0\n" and b["stdout"] == b"false\n"  # the second command finds the switch put back (and an empty work directory)
    assert switch.read_text() == "false\n"
