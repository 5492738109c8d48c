"""numalab vm without booting: the initramfs format, ELF checks, QEMU's NUMA options, the guest
protocol, the cache, and the errors given before a guest would boot."""

from __future__ import annotations

import base64
import gzip
import hashlib
import os
import re
import shutil
import struct
import subprocess
from pathlib import Path

import pytest

from numalab._core import KERNEL_PROFILES
from numalab.runner import host
from numalab.exceptions import UsageError
from numalab.machine import load as load_machine
from numalab.machine.presets import PRESET_DIR
from numalab.spec import Placement
from numalab.vm import cache, check, cpio, elf, guest, initramfs, kmem, protocol, qemu
from numalab.vm import run as vm_run
from numalab.vm import setup as vm_setup


# ---- cpio ---------------------------------------------------------------------------------

@pytest.mark.skipif(shutil.which("cpio") is None, reason="needs GNU cpio to read the archive back")
def test_cpio_newc_archive_unpacks_with_gnu_cpio(tmp_path):
    entries = [cpio.directory("bin"), cpio.regular("bin/tool", b"\x7fELF odd length", 0o755),
               cpio.symlink("bin/sh", "/bin/busybox"), cpio.regular("etc/x", b"")]
    data = cpio.archive(entries)
    assert len(data) % 4 == 0 and data.startswith(b"070701")
    subprocess.run(["cpio", "-idm", "--quiet", "-D", str(tmp_path)], input=data, check=True)
    assert (tmp_path / "bin/tool").read_bytes() == b"\x7fELF odd length"
    assert (tmp_path / "bin/tool").stat().st_mode & 0o777 == 0o755
    assert (tmp_path / "bin/sh").is_symlink() and str((tmp_path / "bin/sh").readlink()) == "/bin/busybox"
    assert (tmp_path / "etc/x").read_bytes() == b""


def test_gzipped_archive_is_deterministic():
    e = [cpio.regular("a", b"x" * 1000)]
    assert cpio.gzipped(e) == cpio.gzipped(e)
    assert initramfs.content_key(e) != initramfs.content_key([cpio.regular("a", b"x" * 999)])


def test_job_archive_is_padded_and_holds_the_job():
    job = guest.Job(mark="NUMALAB-00", command=["/usr/local/bin/dgemv", "--n", "it's"])
    data = initramfs.job_archive(job)
    assert len(data) % 512 == 0 and data.startswith(b"070701")
    assert b"numalab/job\0" in data and b"TRAILER!!!" in data


# ---- ELF -----------------------------------------------------------------------------------

def _elf(machine: int = 62, cls: int = 2, etype: int = 2) -> bytes:
    head = bytearray(64)
    head[:4] = b"\x7fELF"
    head[4], head[5] = cls, 1
    struct.pack_into("<HH", head, 16, etype, machine)
    struct.pack_into("<Q", head, 32, 64)  # e_phoff
    struct.pack_into("<HH", head, 54, 56, 0)  # no program headers: static
    return bytes(head)


def test_elf_accepts_a_static_x86_64_executable(tmp_path):
    p = tmp_path / "ok"
    p.write_bytes(_elf())
    assert elf.inspect(p).interpreter is None
    assert elf.shared_libraries(p) == []


@pytest.mark.parametrize(
    "data, why",
    [
        (b"#!/bin/sh\necho hi\n", "not an ELF executable"),
        (_elf(machine=183), "not x86-64"),
        (_elf(cls=1), "not a 64-bit"),
        (_elf(etype=1), "not an executable"),
        (b"\x7fELF\x02\x01", "truncated"),
    ],
)
def test_elf_refuses_what_the_guest_cannot_run(tmp_path, data, why):
    p = tmp_path / "bad"
    p.write_bytes(data)
    with pytest.raises(UsageError, match=why):
        elf.inspect(p)


def test_dynamic_binary_brings_its_libraries_and_loader():
    libs = elf.shared_libraries(Path("/bin/ls" if Path("/bin/ls").exists() else shutil.which("ls")))
    names = {p.name for p in libs}
    assert "libc.so.6" in names and any(n.startswith("ld-linux") for n in names)
    assert all(p.is_absolute() and p.exists() for p in libs)


def test_command_outside_the_guest_is_refused_before_boot(tmp_path, cli):
    script = tmp_path / "job.sh"
    script.write_text("#!/bin/sh\necho hi\n")
    script.chmod(0o755)
    code, _, err = cli("vm", "run", "--", str(script))
    assert code == 2 and "not an ELF executable" in err and "Traceback" not in err
    code, _, err = cli("vm", "run", "--", "no-such-command-anywhere")
    assert code == 2 and "not found" in err


def test_bare_names_resolve_to_guest_builtins_kernels_or_host_path():
    c = initramfs.resolve_command(["ls", "-l"], {"ls"})
    assert c == initramfs.Command(["ls", "-l"], None)
    if initramfs.project_kernels().get("dgemv"):
        c = initramfs.resolve_command(["dgemv", "--n", "10"], set())
        assert c.argv == ["/usr/local/bin/dgemv", "--n", "10"] and c.host_binary.name == "dgemv"
    if initramfs.project_kernels().get("clock"):
        # the one-thread kernels too: `vm run -- clock --pause N` (docs/scheduler.md §10.57)
        assert initramfs.resolve_command(["clock", "--pause", "10"], set()).argv == ["/usr/local/bin/clock", "--pause", "10"]



def test_a_binary_under_tmp_keeps_its_path_and_no_guest_mount_hides_it(tmp_path):
    """The README's example from a clone in /tmp: the binary goes to the same path in the guest,
    where /init mounts nothing over it; a path under a guest mount goes to /opt/numalab/bin."""
    prog = tmp_path / "prog"
    prog.write_bytes(_elf())
    prog.chmod(0o755)
    assert str(prog).startswith("/tmp/")
    c = initramfs.resolve_command([str(prog), "-x"], set())
    assert c.argv == [str(prog), "-x"] and c.host_binary == prog.resolve()
    mounted = re.findall(r"^mount -t \S+ \S+ (\S+)", guest.INIT, re.M)
    assert mounted and all(not (str(prog) + "/").startswith(m.rstrip("/") + "/") for m in mounted), mounted
    assert "/tmp" not in mounted
    shm = Path("/dev/shm")
    if shm.is_dir() and os.access(shm, os.W_OK):
        hidden = shm / f"numalab-test-{os.getpid()}"
        hidden.write_bytes(_elf())
        hidden.chmod(0o755)
        try:
            assert initramfs.resolve_command([str(hidden)], set()).argv == [f"/opt/numalab/bin/{hidden.name}"]
        finally:
            hidden.unlink()

# ---- QEMU's command line ---------------------------------------------------------------------

def _preset_qemu_options(name: str) -> list[str]:
    """The QEMU options a vm preset's header documents (the comment lines after 'qemu-system')."""
    text = "\n".join(ln for ln in (PRESET_DIR / f"{name}.toml").read_text().splitlines() if ln.startswith("#   "))
    opts = re.findall(r"-(?:object memory-backend-ram,[^\s\\]+|numa (?:node|dist),[^\s\\]+)", text)
    return opts


@pytest.mark.parametrize("name", ["vm-4", "vm-8"])
def test_numa_options_are_the_presets_own(name):
    t = qemu.topology(load_machine(name))
    args = qemu.numa_args(t)
    pairs = [f"{a} {b}" for a, b in zip(args[::2], args[1::2]) if a in ("-object", "-numa")]
    assert sorted(pairs) == sorted(_preset_qemu_options(name))
    n = t.nodes
    assert args[:4] == ["-smp", str(n), "-m", f"{n * t.memory_mib[0]}M"]


def test_big_presets_are_scaled_down_to_one_cpu_per_node_and_capped_memory():
    t = qemu.topology(load_machine("opteron6282-4p"))
    assert t.cpus_per_node == [1] * 8 and t.memory_mib == [512] * 8
    t = qemu.topology(load_machine("opteron6282-4p"), memory_per_node_mib=128, cpus_per_node=2)
    assert t.cpus_per_node == [2] * 8 and t.memory_mib == [128] * 8
    assert "node,nodeid=1,cpus=2-3,memdev=m1" in qemu.numa_args(t)
    with pytest.raises(UsageError, match="at least 64"):
        qemu.topology(load_machine("vm-4"), memory_per_node_mib=10)


def test_guest_has_no_network_and_the_issue_kernel_cmdline(tmp_path):
    t = qemu.topology(load_machine("vm-4"))
    a = qemu.argv("qemu", t, "vmlinuz", tmp_path / "i", qemu.cmdline(True), "tcg", tmp_path / "d")
    assert a[a.index("-nic") + 1] == "none" and "-nodefaults" in a and "-no-reboot" in a and "-nographic" in a
    assert a[a.index("-append") + 1] == "console=ttyS0 quiet panic=-1 no_timer_check numa_balancing=enable"
    assert qemu.cmdline(False).endswith("numa_balancing=disable")
    assert f"file:{tmp_path / 'd'}" in a


def test_a_tcg_guest_gets_the_boot_cpus_delay_loop_value_and_a_kvm_guest_none(tmp_path):
    # The figures of a boot log on this project's machine: "tsc: Detected 2597.823 MHz processor",
    # "Calibrating delay loop (skipped), value calculated using timer frequency.. (lpj=10391292)".
    config, cpuinfo = tmp_path / "config", tmp_path / "cpuinfo"
    config.write_text("CONFIG_HZ_250=y\nCONFIG_HZ=250\n")
    cpuinfo.write_text("processor\t: 0\ncpu MHz\t\t: 2597.823\n")
    assert qemu.preset_lpj("tcg", config, cpuinfo) == "lpj=10391292"
    assert qemu.preset_lpj("kvm", config, cpuinfo) == ""
    assert qemu.preset_lpj("tcg", tmp_path / "missing", cpuinfo) == ""


def test_a_hung_guest_is_killed_after_the_timeout():
    with pytest.raises(qemu.GuestTimeout, match=r"within 0.5 s before it was ready.*QEMU was killed"):
        qemu.boot(["sleep", "30"], "NEVER", 0.5)


# ---- the protocol -------------------------------------------------------------------------------

def _frames(mark: str, files: dict[str, bytes], corrupt: str | None = None) -> str:
    out = ["kernel noise", f"{mark} BEGIN"]
    for name, data in files.items():
        digest = hashlib.sha256(data + (b"x" if name == corrupt else b"")).hexdigest()
        out.append(f"{mark} FILE {name} {digest}")
        b64 = base64.b64encode(gzip.compress(data)).decode()
        out += [b64[i:i + 76] + "\r" for i in range(0, len(b64), 76)]
        out.append(f"{mark} ENDFILE {name}")
    out.append(f"{mark} END")
    return "\n".join(out) + "\n"


def test_frames_round_trip_with_crlf_and_binary():
    files = {"agent.jsonl": b'{"type":"start"}\n' * 50, "stdout": bytes(range(256)), "stderr": b""}
    assert protocol.read_frames(_frames("NUMALAB-ab", files), "NUMALAB-ab") == files


def test_damaged_or_missing_frames_are_errors():
    files = {"stdout": b"hello"}
    with pytest.raises(protocol.ProtocolError, match="damaged"):
        protocol.read_frames(_frames("M", files, corrupt="stdout"), "M")
    with pytest.raises(protocol.ProtocolError, match="not base64 of a gzip stream"):
        protocol.read_frames(_frames("M", files).replace("M ENDFILE", "AAAA\nM ENDFILE"), "M")
    with pytest.raises(protocol.ProtocolError, match="no BEGIN"):
        protocol.read_frames(_frames("M", files), "OTHER")
    with pytest.raises(protocol.ProtocolError, match="end early"):
        protocol.read_frames(_frames("M", files).replace("M END\n", ""), "M")


def test_the_data_port_and_each_file_are_read_within_bounds(tmp_path, monkeypatch):
    """A flood on the data port, or a small stream that unpacks to gigabytes, is one error, never
    the host's memory."""
    port = tmp_path / "data-port"
    port.write_text(_frames("M", {"stdout": b"x" * 5000}))
    assert protocol.read_frames(protocol.read_port(port), "M") == {"stdout": b"x" * 5000}
    assert protocol.read_port(tmp_path / "absent") == ""
    monkeypatch.setattr(protocol, "MAX_FILE_BYTES", 4096)
    with pytest.raises(protocol.ProtocolError, match="stdout unpacks to more than"):
        protocol.read_frames(protocol.read_port(port), "M")
    monkeypatch.setattr(protocol, "MAX_PORT_BYTES", 64)
    with pytest.raises(protocol.ProtocolError, match=r"wrote 0\.0 MiB to the data port, more than the 0 MiB"):
        protocol.read_port(port)


def test_the_guest_keeps_the_beginning_of_a_long_output_and_says_how_long_it_was(tmp_path):
    """The guest's truncation lines, run by the host's sh on a copy of /tmp/out."""
    out = tmp_path / "out"
    out.mkdir()
    (out / "stdout").write_bytes(b"a" * guest.OUTPUT_CAP + b"tail")
    (out / "stderr").write_bytes(b"short")
    (out / "truncated").write_bytes(b"")
    subprocess.run(["sh", "-c", guest.TRUNCATE.replace("/tmp/out", str(out))], check=True)
    assert (out / "stdout").read_bytes() == b"a" * guest.OUTPUT_CAP
    assert (out / "stderr").read_bytes() == b"short"
    assert (out / "truncated").read_text() == f"stdout {guest.OUTPUT_CAP + 4}\n"
    assert guest.TRUNCATE in guest.job_script(guest.Job(mark="M", command=["/bin/x"]))
    o = vm_run.VmOutput({"truncated": (out / "truncated").read_bytes()}, None, "tcg", 1.0, 2.0, None)
    assert o.truncated == {"stdout": guest.OUTPUT_CAP + 4}

def test_job_script_quotes_the_command_and_sets_the_knobs():
    job = guest.Job(mark="NUMALAB-1", command=["/bin/x", "a b", "$(reboot)"], agent_args=["--interleave=all"],
                    knobs={"scan_delay_ms": 50}, thp="never", env={"OMP_PROC_BIND": "spread"})
    s = guest.job_script(job)
    assert "'a b' '$(reboot)'" in s and "--interleave=all -- /bin/x" in s
    assert "knobs set scan_delay_ms=50" in s and "echo never > /sys/kernel/mm/transparent_hugepage/enabled" in s
    assert "export OMP_PROC_BIND=spread" in s and f"> {guest.DATA_PORT}" in s
    assert s.index('echo "$MARK READY"') < s.index("numalab-agent run")


def test_placement_becomes_numactl_options_for_the_agent():
    p = Placement(policy="interleave", nodes="0-3", cpunodebind="1")
    assert vm_run.agent_args(p) == ["--interleave=0-3", "--cpunodebind=1"]
    assert vm_run.agent_args(Placement(policy="local")) == ["--localalloc"]
    assert host.omp_env(Placement(omp_proc_bind="spread", omp_places="cores")) == {"OMP_PROC_BIND": "spread", "OMP_PLACES": "cores"}


# ---- cache, setup, kernel profile -------------------------------------------------------------------

def test_cache_dir_follows_xdg(monkeypatch, tmp_path):
    monkeypatch.delenv("NUMALAB_VM_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert cache.cache_dir() == tmp_path / "numalab" / "vm"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert cache.cache_dir() == Path.home() / ".cache" / "numalab" / "vm"


def test_atomic_write_leaves_no_temporary_files(tmp_path):
    cache.atomic_write(tmp_path / "d" / "f", b"1")
    cache.atomic_write(tmp_path / "d" / "f", b"22")
    assert [p.name for p in (tmp_path / "d").iterdir()] == ["f"] and (tmp_path / "d" / "f").read_bytes() == b"22"


def test_missing_qemu_names_the_install_command(monkeypatch):
    monkeypatch.delenv("NUMALAB_QEMU", raising=False)
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(vm_setup.SetupError, match=r"`apt-get install qemu-system-x86`"):
        vm_setup.find_qemu()


def test_a_kernel_that_is_not_a_bzimage_is_refused(tmp_path, monkeypatch):
    monkeypatch.setenv("NUMALAB_VM_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("NUMALAB_QEMU", "/bin/true")
    k = tmp_path / "vmlinuz"
    k.write_bytes(b"\0" * 4096)
    with pytest.raises(UsageError, match="not an x86 bzImage"):
        vm_setup.setup(kernel=k)


def test_guest_kernel_release_picks_the_simulator_profile():
    # The newest modelled release not newer than the guest's; 4.20-6.0 take 6.1 (CFS, v5.5
    # balancer), 6.6 on EEVDF's 6.13.
    assert check.sim_kernel("6.1.0-56-amd64") == "6.1"
    assert check.sim_kernel("6.5.13") == "6.1" and check.sim_kernel("5.10.0-30-amd64") == "6.1"
    assert check.sim_kernel("6.6.0") == "6.13" and check.sim_kernel("6.13.7") == "6.13"
    assert check.sim_kernel("3.13.0-170-generic") == "3.13" and check.sim_kernel("4.19.0") == "3.13"
    assert check.sim_kernel("2.6.32-754.el6.x86_64") == "2.6.32" and check.sim_kernel("2.6.18") == "2.6.32"
    # Every name is a profile the simulator has.
    assert {name for _, name in check.SIM_KERNEL_SINCE} == set(KERNEL_PROFILES)
    notes = check.profile_notes("6.1.0-56-amd64")
    # The per-VMA scan filters (6.4+) and weighted interleave (6.9+) are in the 6.1 profile's
    # rules now (vma_pid_filter off, weighted interleave refused).
    assert notes and not any("6.4+" in n or "6.9+" in n for n in notes) and any("6.7+" in n for n in notes)


def test_weighted_interleave_needs_a_newer_guest_kernel():
    assert vm_run.kernel_tuple("6.1.0-56-amd64") < vm_run.WEIGHTED_INTERLEAVE_SINCE <= vm_run.kernel_tuple("6.9.1")


# ---- vm check's expectations can fail ----------------------------------------------------------------

def test_case_expectations_hold_and_fail():
    one = check.Side([1000, 2, 0, 0], [1000, 2, 0, 0], {"numa_pages_migrated": 0})
    spread = check.Side([250, 251, 249, 252], [250, 251, 249, 252], {"numa_pages_migrated": 0})
    moved = check.Side([1000, 0, 0, 0], [250, 250, 250, 250], {"numa_pages_migrated": 750})
    assert check.on_one_node(0)(one) is None and check.on_one_node(0)(spread) and check.on_one_node(1)(one)
    assert check.spread()(spread) is None and check.spread()(one)
    assert check.even()(spread) is None and check.even()(one)
    assert check.moves()(moved) is None and check.moves()(one)
    assert moved.moved == 750


def test_alloc_cases_count_the_grids_mapping_and_compare_node_by_node():
    sample = {"mappings": [
        {"kind": "heap", "kernelpagesize_kb": 4, "pages_per_node": {"0": 4190, "1": 2}},
        {"kind": "anon", "kernelpagesize_kb": 4, "pages_per_node": {"1": 3, "2": 5}},  # a thread's stack
        {"kind": "file", "kernelpagesize_kb": 4, "pages_per_node": {"0": 9000}},
    ]}
    assert check.grid_pages(sample, [0, 1, 2, 3]) == [4190, 2, 0, 0]
    assert check.anon_pages(sample, [0, 1, 2, 3]) == [4190, 5, 5, 0]
    assert check.grid_pages({"mappings": []}, [0, 1]) == [0, 0]
    arenas = {"mappings": [{"kind": k, "pages_per_node": {n: 1049}} for k, n in (("heap", "0"), ("anon", "1"), ("anon", "2"))]
              + [{"kind": "stack", "pages_per_node": {"3": 4}}]}
    assert check.grid_pages(arenas, [0, 1, 2, 3]) == [1049, 1049, 1049, 0]
    sim = check.Side([1024, 1024, 1024, 1025], [1024, 1024, 1024, 1025], {})
    near = check.Side([1044, 1004, 1024, 1025], [1044, 1004, 1024, 1025], {})  # 20 <= 0.5% of 4097
    far = check.Side([1046, 1002, 1024, 1025], [1046, 1002, 1024, 1025], {})
    assert check.disagreement(sim, near, 0.5) is None
    assert check.disagreement(sim, far, 0.5) == "node0 differs by 22 pages, node1 differs by -22 pages (more than 0.5% of 4097: 20)"
    rows, block = check.CASES["alloc-rows"], check.CASES["alloc-block"]
    assert (rows.pages, rows.agree_pct, rows.params["layout"], block.params["layout"]) == ("grid", 0.5, "rows", "block")
    assert check.kernel_argv("alloc3d", {"layout": "rows", "n": 128, "reps": 5, "threads": 4}) == [
        "alloc3d", "--layout=rows", "--n=128", "--reps=5", "--threads=4"]


def _fake_bzimage(path: Path, version: str) -> Path:
    data = bytearray(0x400)
    data[0x202:0x206] = b"HdrS"
    struct.pack_into("<H", data, 0x20E, 0x100)  # kernel_version string at 0x200 + 0x100
    data[0x300:0x300 + len(version) + 1] = version.encode() + b"\0"
    path.write_bytes(bytes(data))
    return path


def test_setup_says_what_is_missing_and_how_to_install_it(tmp_path, monkeypatch, cli):
    monkeypatch.setenv("NUMALAB_VM_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("NUMALAB_QEMU", raising=False)
    which = shutil.which
    monkeypatch.setattr(vm_setup.shutil, "which", lambda name: None if name == vm_setup.QEMU else which(name))
    monkeypatch.setattr(vm_setup, "_host_or_package", lambda what, *a, **k: f"/host/{what}")
    code, out, err = cli("vm", "setup", "--kernel", str(tmp_path / "absent"))
    assert code == 2 and "--kernel" in err and "no such file" in err
    kernel = _fake_bzimage(tmp_path / "bzImage", "6.1.0-test")
    code, out, err = cli("vm", "setup", "--kernel", str(kernel))
    assert "qemu:    missing" in out and "kernel:  " in out and "version 6.1.0-test" in out
    assert code == 1 and "`apt-get install qemu-system-x86`" in err
    assert not (tmp_path / "cache" / vm_setup.MANIFEST).exists()
    assert vm_setup.bzimage_version(kernel) == "6.1.0-test"


def test_cache_keeps_the_most_recently_used_images(tmp_path):
    import os

    for i in range(5):
        p = tmp_path / f"{i}.cpio"
        p.write_bytes(b"x")
        os.utime(p, (1000 + i, 1000 + i))
    initramfs.prune(tmp_path, keep=2)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["3.cpio", "4.cpio"]


def test_the_guest_runs_the_kernel_with_the_simulators_resolved_parameters():
    assert check.kernel_argv("dgemv", {"init": "serial", "n": 2000, "reps": 100, "threads": 4}) == [
        "dgemv", "--init=serial", "--n=2000", "--reps=100", "--threads=4"]
    assert check.kernel_argv("stream", {"n": 1000, "ntimes": 10, "threads": 2}) == [
        "stream", "--init=parallel", "--n=1000", "--reps=10", "--threads=2"]


def test_vm_check_refuses_what_it_cannot_compare(cli):
    code, _, err = cli("vm", "check", "--workload", "cg")
    assert code == 2 and "--workload must be dgemv, stream, barrier" in err
    code, _, err = cli("vm", "check", "--case", "nope")
    assert code == 2 and "unknown case 'nope'" in err
    code, _, err = cli("vm", "check")
    assert code == 2 and "--case NAME" in err


def _elf_with_note(name: bytes, ntype: int) -> bytes:
    """A minimal x86-64 ELF with one PT_NOTE segment holding one note."""
    desc = b"\0" * 4
    note = struct.pack("<III", len(name) + 1, len(desc), ntype) + name + b"\0" * (4 - len(name) % 4) + desc
    head = bytearray(_elf())
    struct.pack_into("<HH", head, 54, 56, 1)
    ph = struct.pack("<IIQQQQQQ", elf.PT_NOTE, 4, 64 + 56, 0, 0, len(note), len(note), 4)
    return bytes(head) + ph + note


def test_a_bzimage_with_a_pvh_kernel_inside_gives_the_uncompressed_kernel(tmp_path):
    import lzma

    pvh = _elf_with_note(b"Xen", elf.XEN_ELFNOTE_PHYS32_ENTRY)
    assert elf.has_pvh_entry(pvh) and not elf.has_pvh_entry(_elf_with_note(b"Xen", 5))
    assert not elf.has_pvh_entry(_elf_with_note(b"GNU", elf.XEN_ELFNOTE_PHYS32_ENTRY))
    for payload, expect in ((pvh, pvh), (_elf_with_note(b"Xen", 5), None)):
        bz = tmp_path / "bzImage"
        bz.write_bytes(b"\0" * 0x4000 + lzma.compress(payload, format=lzma.FORMAT_XZ, check=lzma.CHECK_CRC32) + b"\0" * 64)
        assert vm_setup.extract_vmlinux(bz) == expect
    g = vm_setup.Guest("q", str(bz), "6.1", "given", "b", "n", "l", "d", vmlinux=str(tmp_path / "absent"))
    assert g.boot_kernel == str(bz)


# ---- tiered memory: CPU-less nodes, HMAT, numa_balancing 2/3 and demotion_enabled in the guest ----------------

def test_cpu_less_nodes_stay_cpu_less_with_the_presets_hmat():
    t = qemu.topology(load_machine("vm-tier"))
    assert t.cpus_per_node == [1, 1, 0] and t.memory_mib == [128, 128, 384] and t.hmat and t.kmem_nodes == [2]
    args = qemu.numa_args(t)
    pairs = [f"{a} {b}" for a, b in zip(args[::2], args[1::2]) if a in ("-object", "-numa")]
    # the preset's header names these options exactly (CPU-less node 2 beside node 0)
    assert sorted(p for p in pairs if "hmat-lb" not in p) == sorted(_preset_qemu_options("vm-tier"))
    assert "-numa node,nodeid=2,memdev=m2,initiator=0" in pairs
    lb = [p for p in pairs if "hmat-lb" in p]
    assert len(lb) == 2 * 3 * 2  # two initiators x three targets x (latency, bandwidth)
    assert "-numa hmat-lb,initiator=0,target=2,hierarchy=memory,data-type=access-latency,latency=250" in lb
    assert "-numa hmat-lb,initiator=1,target=2,hierarchy=memory,data-type=access-bandwidth,bandwidth=2500M" in lb
    assert args[:4] == ["-smp", "2", "-m", "640M"]
    a = qemu.argv("qemu", t, "vmlinuz", Path("i"), qemu.cmdline(False), "tcg", Path("d"))
    assert a[a.index("-machine") + 1] == "q35,hmat=on"
    # guests whose nodes all have CPUs keep the command line they had: no HMAT, no dax/kmem
    t4 = qemu.topology(load_machine("vm-4"))
    assert not t4.hmat and not t4.kmem_nodes and not any("hmat" in x for x in qemu.argv("qemu", t4, "k", Path("i"), "", "tcg", Path("d")))
    assert kmem.cmdline(t4.memory_mib, t4.kmem_nodes) == ""


def test_cxl_nodes_are_held_from_boot_memory_for_dax_kmem():
    t = qemu.topology(load_machine("vm-tier"))
    line = kmem.cmdline(t.memory_mib, t.kmem_nodes)
    # node 2 is 256-640 MiB of guest RAM; its last MiB (QEMU's ACPI tables) stays reserved
    assert line == "memmap=383M!256M memmap=1M$639M memhp_default_state=online"
    assert line in (PRESET_DIR / "vm-tier.toml").read_text()
    assert kmem.usable_mib(256, 383) == 128  # what the guest shows in node2/meminfo: MemTotal 131072 kB
    with pytest.raises(UsageError, match="node 1: dax/kmem would online none of its 256 MiB"):
        kmem.ranges([128, 256, 128], [1])
    with pytest.raises(UsageError, match="below 4 GiB"):
        kmem.ranges([2048, 2048], [1])
    s = "\n".join(kmem.script([2], "/tmp/out/knobs.err"))
    assert "insmod /lib/numalab-modules/$m.ko" in s and "/sys/bus/dax/drivers/kmem/new_id" in s and "kmem_node 2" in s
    assert "device_dax" not in s  # it would claim the DAX device before kmem
    # spr8480-2s-cxl's two adjacent CXL nodes stay two regions: a reserved MiB ends each
    cxl = qemu.topology(load_machine("spr8480-2s-cxl"))
    assert cxl.kmem_nodes == [2, 3] and cxl.memory_mib == [512] * 4
    assert kmem.cmdline(cxl.memory_mib, cxl.kmem_nodes) == (
        "memmap=511M!1024M memmap=511M!1536M memmap=1M$1535M memmap=1M$2047M memhp_default_state=online")


def test_a_machine_without_cpus_cannot_boot():
    class NoCpus:
        name = "x"
        distances = [[10]]

        def to_json(self):
            return '{"nodes": [{"os_index": 0, "cpuset": "", "local_memory_bytes": 134217728}]}'

    with pytest.raises(UsageError, match="no node with CPUs"):
        qemu.topology(NoCpus())


def test_balancing_modes_demotion_and_tiering_knobs_reach_the_guest():
    from numalab.spec.balancing import Balancing

    knobs, sysfs = vm_run.guest_settings(Balancing.parse("balancing=2:promote-rate-limit-mbps=100:hot-threshold-ms=500:demotion-enabled"))
    # the agent's names are the kernel's (numa_balancing_promote_rate_limit_MBps); mode 2 is written, not booted
    assert knobs == {"promote_rate_limit_MBps": 100, "hot_threshold_ms": 500, "numa_balancing": 2}
    assert sysfs == (("/sys/kernel/mm/numa/demotion_enabled", "true"),)
    assert vm_run.guest_settings(Balancing.parse("on")) == ({}, ())
    assert vm_run.guest_settings(Balancing.parse("3"))[0] == {"numa_balancing": 3}
    assert vm_run.guest_settings(Balancing.parse("weighted-interleave-auto"))[1] == (
        ("/sys/kernel/mm/mempolicy/weighted_interleave/auto", "true"),)
    # a switch file the guest kernel lacks is reported in knobs.err, which stops the run
    s = guest.job_script(guest.Job(mark="M", command=["/bin/x"], sysfs=(("/sys/kernel/mm/numa/demotion_enabled", "true"),)))
    assert "absent in the guest kernel' >> /tmp/out/knobs.err" in s
    assert s.index(": > /tmp/out/knobs.err") < s.index("demotion_enabled") < s.index("numalab-agent run")
    assert "memory_tiering/memory_tier*" in s and "frame memory_tiers" in s


def test_guest_memory_tiers_are_read_back():
    text = "memory_tier4 0-1\nmemory_tier22 2-3\ndemotion_enabled true\n"
    assert vm_run.memory_tiers(text) == {"tiers": {"memory_tier4": "0-1", "memory_tier22": "2-3"}, "demotion_enabled": True}
    assert vm_run.memory_tiers("") == {"tiers": {}}


def test_tiering_expectations_follow_the_sides_memory_tiers():
    demote = check.tier_counters(("pgdemote_kswapd", "pgdemote_direct"), True)
    side = lambda n, tiers: check.Side([1], [1], {"pgdemote_kswapd": n, "pgdemote_direct": 0}, memory_tiers=tiers)  # noqa: E731
    assert demote(side(360, 2)) is None
    assert "is 0 with 2 memory tiers" in demote(side(0, 2))
    # one tier (Linux 6.1's boot nodes): no demotion target, so nothing may be demoted
    assert demote(side(0, 1)) is None and "expected 0" in demote(side(5, 1))
    none = check.tier_counters(("pgdemote_kswapd",), False)
    assert none(side(0, 2)) is None and "expected 0" in none(side(1, 2))
    assert {c.machine for c in check.CASES.values() if c.tiering} == {"vm-tier"}
    assert {"tier-demotion", "tier-no-demotion", "tier-promotion"} <= set(check.CASES)


def test_a_failed_balancing_case_shows_when_the_guest_scanner_marked_and_faulted():
    """The CI runner's tier-promotion marked the slow node's pages once and never faulted: the
    report's timeline shows the first and last samples and the scanner's counters between."""
    samples = [{"t_s": 0.2 * k, "vmstat": {"numa_pte_updates": 100 * k, "numa_hint_faults": 0, "numa_pages_migrated": 0}}
               for k in range(1, 21)]
    line = check.scanner_timeline({"timeline": [{"t_s": 0.1, "pages_per_node": [1]}] + samples}, points=4)
    assert line.split("  ") == ["0.20: 100/0/0", "1.40: 700/0/0", "2.80: 1400/0/0", "4.00: 2000/0/0"]
    assert check.scanner_timeline({"timeline": [{"t_s": 0.1}]}) == ""


def test_numalab_vm_append_adds_kernel_options_and_unset_leaves_the_boot_line(tmp_path, monkeypatch):
    # docs/scheduler.md §10.49 boots the guest with ``tsc=reliable`` through $NUMALAB_VM_APPEND;
    # without it the boot line must stay the one every recorded guest figure was measured with.
    from types import SimpleNamespace

    req = SimpleNamespace(balancing=SimpleNamespace(scanning=False))
    topo = SimpleNamespace(memory_mib=[1024, 1024], kmem_nodes=[])
    g = SimpleNamespace(kernel=str(tmp_path / "vmlinuz"))
    monkeypatch.delenv("NUMALAB_VM_APPEND", raising=False)
    plain = vm_run._cmdline(req, topo, g, "kvm")  # type: ignore[arg-type]
    assert plain == qemu.cmdline(False)
    monkeypatch.setenv("NUMALAB_VM_APPEND", "tsc=reliable")
    assert vm_run._cmdline(req, topo, g, "kvm") == plain + " tsc=reliable"  # type: ignore[arg-type]
