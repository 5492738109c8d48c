"""``numalab vm setup`` on a fresh machine: what the first download does (unpacking Debian
packages) closes every pipe and file it opens, on success and on failure."""

from __future__ import annotations

import gc
import shutil
import subprocess
import warnings
from pathlib import Path

import pytest

from numalab.vm import debian

pytestmark = pytest.mark.skipif(not shutil.which("dpkg-deb"), reason="dpkg-deb is Debian's; the guest's files come from its packages")


def _deb(tmp_path: Path) -> Path:
    """A tiny package with ./boot/vmlinuz-1 and ./usr/bin/tool, built as Debian builds one."""
    root = tmp_path / "pkg"
    (root / "DEBIAN").mkdir(parents=True)
    (root / "DEBIAN" / "control").write_text("Package: tiny\nVersion: 1\nArchitecture: amd64\nMaintainer: t <t@t>\nDescription: t\n")
    (root / "boot").mkdir()
    (root / "boot" / "vmlinuz-1").write_bytes(b"kernel" * 1000)
    (root / "usr" / "bin").mkdir(parents=True)
    (root / "usr" / "bin" / "tool").write_bytes(b"tool")
    deb = tmp_path / "tiny_1_amd64.deb"
    subprocess.run(["dpkg-deb", "--build", "--root-owner-group", str(root), str(deb)], check=True, capture_output=True)
    return deb


def _resource_warnings(fn) -> list[str]:
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        gc.collect()  # earlier tests' garbage in this process (an xdist worker) warns here, unjudged
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        try:
            fn()
        finally:
            gc.collect()  # an unclosed pipe warns when its file object is collected
    return [str(w.message) for w in seen if issubclass(w.category, ResourceWarning)]


def test_unpack_takes_only_the_members_and_closes_its_pipes(tmp_path):
    deb = _deb(tmp_path)
    work = tmp_path / "work"
    work.mkdir()
    out: list[Path] = []
    assert _resource_warnings(lambda: out.append(debian.unpack(deb, ["./boot/vmlinuz-*"], work, lambda s: None))) == []
    files = sorted(p.relative_to(out[0]).as_posix() for p in out[0].rglob("*") if p.is_file())
    assert files == ["boot/vmlinuz-1"]
    assert (out[0] / "boot" / "vmlinuz-1").read_bytes() == b"kernel" * 1000


def test_unpack_failure_is_one_line_and_closes_its_pipes(tmp_path):
    deb = _deb(tmp_path)
    work = tmp_path / "work"
    work.mkdir()
    errors: list[str] = []

    def missing_member() -> None:
        with pytest.raises(debian.SetupError) as e:
            debian.unpack(deb, ["./no/such/file"], work, lambda s: None)
        errors.append(e.value.args[0])

    assert _resource_warnings(missing_member) == []
    assert errors[0].startswith("cannot unpack tiny_1_amd64.deb: ") and "\n" not in errors[0]
    assert "no/such/file" in errors[0]
    broken = tmp_path / "broken_1_amd64.deb"
    broken.write_bytes(b"not a deb")
    with pytest.raises(debian.SetupError, match=r"cannot unpack broken_1_amd64\.deb: .+"):
        debian.unpack(broken, ["./boot/*"], work, lambda s: None)


def test_kmem_and_setup_share_debian_without_importing_each_other():
    """No import cycle (function-level imports included): setup -> kmem -> debian, setup -> debian."""
    import ast
    import numalab.vm

    def imports(name: str) -> set[str]:
        tree = ast.parse((Path(numalab.vm.__file__).parent / f"{name}.py").read_text())
        out = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module:
                out.add(node.module)
                out |= {f"{node.module}.{a.name}" for a in node.names}
            elif isinstance(node, ast.Import):
                out |= {a.name for a in node.names}
        return out

    assert not any(m.startswith("numalab.vm.setup") for m in imports("kmem") | imports("debian"))
    assert "numalab.vm.kmem" not in imports("debian")
    assert "numalab.vm.debian" in imports("kmem") and "numalab.vm.debian" in imports("setup")


def test_a_second_setup_waits_for_the_first_and_says_so(tmp_path):
    """Two setups on one empty cache (two `vm run`, parallel test workers): one downloads at a time."""
    import threading

    from numalab.vm import cache

    said: list[str] = []
    order: list[str] = []
    with cache.locked(tmp_path):
        t = threading.Thread(target=lambda: _second(tmp_path, said, order))
        t.start()
        t.join(0.5)
        assert t.is_alive() and order == [], "the second setup did not wait"
        order.append("first done")
    t.join(10)
    assert order == ["first done", "second"]
    assert said == [f"waiting for another numalab vm setup using {tmp_path}"]


def _second(root: Path, said: list[str], order: list[str]) -> None:
    from numalab.vm import cache

    with cache.locked(root, said.append):
        order.append("second")
