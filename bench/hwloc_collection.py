"""Import every topology of hwloc's test collection and tally what numalab accepts (a development
aid, not a test: the collection is not vendored).

    python bench/hwloc_collection.py --hwloc PATH [--lstopo] [-v]

PATH is a clone of https://github.com/open-mpi/hwloc (a work tree, or a bare git directory read
with ``git show``). Groups: the XML files under ``tests/hwloc/`` (v2 and v3 as hwloc writes them);
with ``--lstopo`` (hwloc's lstopo on PATH) also the Linux sysfs dumps ``tests/hwloc/linux/*.tar.bz2``
exported as XML by this lstopo, and those exports re-written as hwloc v1 XML
(``--export-xml-flags 1``). Prints one line per group (imported / total), and with ``-v`` one
line per file with the refusal. Without ``--hwloc`` it says so and exits 0 (``make bench``).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import shutil
import subprocess
import tarfile
import tempfile
from pathlib import Path

from numalab.machine.hwloc_xml import load_hwloc_xml


def _files(repo: Path, suffix: str) -> list[tuple[str, bytes]]:
    """(path, bytes) of every tests/hwloc file ending in ``suffix``, from a work tree or a git dir."""
    if (repo / "tests" / "hwloc").is_dir():
        return [(str(p.relative_to(repo)), p.read_bytes()) for p in sorted((repo / "tests" / "hwloc").rglob(f"*{suffix}"))]
    git = ["git", "--git-dir", str(repo)]
    names = subprocess.run([*git, "ls-tree", "-r", "--name-only", "HEAD", "tests/hwloc"], capture_output=True, text=True, check=True)
    return [
        (n, subprocess.run([*git, "show", f"HEAD:{n}"], capture_output=True, check=True).stdout)
        for n in names.stdout.split()
        if n.endswith(suffix)
    ]


def _try(path: Path) -> str:
    """'' when it imports, else the refusal in one line."""
    with contextlib.redirect_stderr(io.StringIO()):
        try:
            load_hwloc_xml(path)
        except Exception as e:  # noqa: BLE001 - every refusal is tallied, whatever its kind
            return f"{type(e).__name__}: {e}".splitlines()[0]
    return ""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--hwloc", type=Path, help="a clone of open-mpi/hwloc (work tree or bare git directory)")
    ap.add_argument("--lstopo", action="store_true", help="also export the Linux sysfs dumps (v2) and v1 re-exports with lstopo")
    ap.add_argument("-v", "--verbose", action="store_true", help="one line per file")
    args = ap.parse_args()
    if args.hwloc is None:
        print("hwloc collection: skipped (give --hwloc PATH, a clone of open-mpi/hwloc)")
        return
    lstopo = shutil.which("lstopo-no-graphics") or shutil.which("lstopo")
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        groups: dict[str, list[Path]] = {"tests/hwloc/**/*.xml": []}
        for name, data in _files(args.hwloc, ".xml"):
            path = work / "xml" / name.replace("/", "__")
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
            groups["tests/hwloc/**/*.xml"].append(path)
        if args.lstopo and lstopo:
            groups["linux sysfs dumps via lstopo (v2)"] = []
            groups["the same re-exported as v1"] = []
            for name, data in _files(args.hwloc, ".tar.bz2"):
                stem = Path(name).name.removesuffix(".tar.bz2")
                root = work / "fs" / stem
                root.mkdir(parents=True)
                with tarfile.open(fileobj=io.BytesIO(data), mode="r:bz2") as t:
                    t.extractall(root, filter="data")
                top = next(iter(sorted(root.iterdir())), None)
                out, v1 = work / "gen" / f"{stem}.xml", work / "v1" / f"{stem}.xml"
                out.parent.mkdir(exist_ok=True)
                v1.parent.mkdir(exist_ok=True)
                ok = top is not None and subprocess.run(
                    [lstopo, "--input", str(top), "--of", "xml", "-f", str(out)], capture_output=True, timeout=60
                ).returncode == 0
                if not ok:
                    continue  # lstopo itself cannot read this dump
                groups["linux sysfs dumps via lstopo (v2)"].append(out)
                if subprocess.run([lstopo, "-i", str(out), "--of", "xml", "--export-xml-flags", "1", "-f", str(v1)],
                                  capture_output=True, timeout=60).returncode == 0:
                    groups["the same re-exported as v1"].append(v1)
        total_ok = total = 0
        for group, paths in groups.items():
            results = [(p, _try(p)) for p in paths]
            ok = sum(1 for _, why in results if not why)
            total_ok, total = total_ok + ok, total + len(results)
            print(f"{group}: {ok} / {len(results)} imported")
            for p, why in results:
                if args.verbose or why:
                    print(f"  {p.name}: {why or 'ok'}")
        print(f"all: {total_ok} / {total} imported")


if __name__ == "__main__":
    main()
