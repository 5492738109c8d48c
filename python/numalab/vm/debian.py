"""Debian's packages by name, for the guest's files: ``apt-get download`` a package and unpack
only some of its files with ``dpkg-deb`` (nothing is installed). Used by ``setup`` (the kernel,
busybox, numactl) and ``kmem`` (the kernel's dax/kmem modules from the same package).
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Callable

from numalab.exceptions import NumalabError

Say = Callable[[str], None]


class SetupError(NumalabError):
    """Something the guest needs is missing; the message says the command that provides it."""


def apt(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    if shutil.which(args[0]) is None:
        raise SetupError(f"{args[0]} not found: numalab vm setup takes the guest's files from Debian's packages; on another system pass --kernel PATH")
    return subprocess.run(args, cwd=cwd, capture_output=True, text=True, check=False)


def download(pkg: str, work: Path, say: Say) -> Path:
    """``pkg``'s .deb in ``work``, downloaded once per setup (the kernel's package serves twice)."""
    if have := sorted(work.glob(f"{pkg}_*.deb")):
        return have[-1]
    say(f"  apt-get download {pkg}")
    p = apt(["apt-get", "download", pkg], work)
    debs = sorted(work.glob(f"{pkg}_*.deb"))
    if p.returncode != 0 or not debs:
        why = (p.stderr.strip().splitlines() or ["no .deb written"])[-1]
        raise SetupError(f"apt-get download {pkg} failed: {why} (is the network up? `apt-get update` as root may help)")
    return debs[-1]


def unpack(deb: Path, members: list[str], work: Path, say: Say) -> Path:
    """Unpack only ``members`` (tar wildcards) of ``deb``: ``dpkg-deb --fsys-tarfile | tar -x``."""
    out = Path(tempfile.mkdtemp(prefix=deb.stem + ".", dir=work))  # one package may be unpacked twice
    say(f"  dpkg-deb --fsys-tarfile {deb.name} | tar -x {' '.join(members)}")
    if shutil.which("dpkg-deb") is None:
        raise SetupError("dpkg-deb not found: the guest's files come from Debian packages (`apt-get install dpkg`)")
    # Both ends are context managers, so every pipe and file is closed on every path (an unclosed
    # one is a ResourceWarning). The errors go to files: a full stderr pipe would block its writer.
    with tempfile.TemporaryFile() as err, subprocess.Popen(
        ["dpkg-deb", "--fsys-tarfile", str(deb)], stdout=subprocess.PIPE, stderr=err
    ) as dpkg, subprocess.Popen(["tar", "-x", "--wildcards", "-C", str(out), *members], stdin=dpkg.stdout, stderr=err) as tar:
        assert dpkg.stdout is not None
        dpkg.stdout.close()  # tar holds the only reading end now: dpkg-deb sees EPIPE if tar stops
        failed = tar.wait() != 0 or dpkg.wait() != 0
        err.seek(0)
        why = "; ".join(err.read().decode(errors="replace").split("\n")[-4:]).strip("; ")
    if failed:
        raise SetupError(f"cannot unpack {deb.name}: {why or 'dpkg-deb or tar failed'}")
    return out
