"""Outputs never destroy results: a report, export or schema aimed at the results database (or
its -wal/-shm files, through links) is refused; every output appears whole or not at all (a
full disk leaves the earlier file and no temporary one); writing to a device is one line."""

from __future__ import annotations

import errno
import json
import os
import sqlite3
from pathlib import Path

import pytest

from inline_backend import run_stored

STUDY = """
name = "out"
machine = "e5-2620v4-2s"
workload = "dgemv"
params = { n = 2000, reps = 2 }
[baseline]
placement = "default"
[[runs]]
label = "first-touch"
placement = "default"
[[runs]]
label = "interleave"
placement = "interleave=all"
"""


@pytest.fixture(scope="module")
def stored(tmp_path_factory):
    root = tmp_path_factory.mktemp("outputs")
    assert run_stored(STUDY, root / "out.toml", root / "r").ok == 2
    return root


def _one_line(err: str) -> str:
    # Progress lines ("report: 1/3 steps ...", shown once a report takes a second) are not errors.
    lines = [line for line in err.strip().splitlines() if not line.startswith("report: ")]
    assert len(lines) == 1 and lines[0].startswith("numalab: ") and "Traceback" not in err, err
    return lines[0]


def _runs(db: Path) -> int:
    con = sqlite3.connect(db)
    try:
        return con.execute("SELECT count(*) FROM runs").fetchone()[0]
    finally:
        con.close()


def test_outputs_aimed_at_the_store_are_refused(stored, cli, tmp_path):
    db = stored / "r" / "numalab.db"
    before = db.read_bytes()
    (tmp_path / "link.html").symlink_to(db)
    os.link(db, tmp_path / "hard.html")
    (tmp_path / "wal.csv").symlink_to(f"{db}-wal")
    toml, r = str(stored / "out.toml"), str(stored / "r")
    cases = [
        ["report", toml, "-r", r, "-o", str(db)],
        ["report", r, "-o", f"{db}-wal"],
        ["report", r, "-o", f"{db}-shm"],
        ["report", toml, "-r", r, "-o", str(tmp_path / "link.html")],
        ["report", toml, "-r", r, "-o", str(tmp_path / "hard.html")],
        ["results", "export", "--csv", str(db), "-r", r],
        ["results", "export", "--csv", str(tmp_path / "wal.csv"), "-r", r],
        ["results", "export", "--parquet", str(tmp_path / "link.html"), "-r", r],
        ["schema", "-o", str(db)],
        ["schema", "-o", str(tmp_path / "hard.html")],
    ]
    for argv in cases:
        code, _, err = cli(*argv)
        line = _one_line(err)
        assert code == 2 and "results database" in line and "destroy stored runs" in line, (argv, line)
    assert db.read_bytes() == before and _runs(db) == 2
    assert not (stored / "r" / "numalab-figures").exists()


def test_a_full_disk_leaves_the_earlier_file_and_no_temporary(stored, cli, tmp_path, monkeypatch):
    import numalab.results.outfile as outfile

    def full(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    targets = {"schema": tmp_path / "s.json", "report": tmp_path / "r.html", "csv": tmp_path / "x.csv"}
    for path in targets.values():
        path.write_text("earlier\n")
    monkeypatch.setattr(outfile.os, "fsync", full)
    r = str(stored / "r")
    for argv, path in ((["schema", "-o", str(targets["schema"])], targets["schema"]),
                       (["report", r, "-o", str(targets["report"])], targets["report"]),
                       (["results", "export", "--csv", str(targets["csv"]), "-r", r], targets["csv"])):
        code, _, err = cli(*argv)
        line = _one_line(err)
        assert code == 1 and "No space left on device" in line, (argv, line)
        assert "left as it was" in line or argv[0] == "report", line
        assert path.read_text() == "earlier\n", argv
    left = [p.name for p in tmp_path.rglob("*") if p.name.endswith(".tmp")]
    assert left == []


def test_each_output_is_written_whole(stored, cli, tmp_path):
    r = str(stored / "r")
    code, _, err = cli("schema", "-o", str(tmp_path / "s.json"))
    assert code == 0, err
    assert "properties" in json.loads((tmp_path / "s.json").read_text())
    code, _, err = cli("results", "export", "--csv", str(tmp_path / "x.csv"), "-r", r)
    assert code == 0, err
    assert len((tmp_path / "x.csv").read_text().splitlines()) == 3
    # An output that is a link to a file is written through the link (the link stays).
    (tmp_path / "real.html").write_text("old")
    (tmp_path / "via.html").symlink_to(tmp_path / "real.html")
    code, _, err = cli("report", r, "-o", str(tmp_path / "via.html"))
    assert code == 0, err
    assert (tmp_path / "via.html").is_symlink() and (tmp_path / "real.html").read_text().startswith("<!DOCTYPE html>")
    assert [p.name for p in tmp_path.rglob("*.tmp")] == []


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_devices_and_missing_directories_are_one_line(stored, cli, tmp_path):
    code, _, err = cli("schema", "-o", "/dev/full")
    assert code == 1 and "--output /dev/full: cannot write (No space left on device)" in _one_line(err)
    code, _, err = cli("schema", "-o", str(tmp_path / "missing" / "s.json"))
    assert code == 2 and f"directory {tmp_path / 'missing'} does not exist" in _one_line(err)
    code, _, err = cli("report", str(stored / "r"), "-o", "/dev/full")
    assert code == 2 and "--output /dev/full: is not a regular file" in _one_line(err)
    assert not os.path.exists("/dev/full-figures")


def test_a_report_removes_only_the_figures_it_wrote(stored, cli, tmp_path):
    from numalab.report.figures import MANIFEST

    figures = tmp_path / "r-figures"
    figures.mkdir()
    mine = {"07-my-plot.png": b"user png", "42-x.svg": b"user svg", "notes.txt": b"notes"}
    for name, data in mine.items():
        (figures / name).write_bytes(data)
    code, _, err = cli("report", str(stored / "r"), "-o", str(tmp_path / "r.html"))
    assert code == 0, err
    listed = json.loads((figures / MANIFEST).read_text())["files"]
    assert listed and all((figures / n).is_file() for n in listed) and not set(listed) & set(mine)
    # A figure an earlier report wrote and this one does not: removed. Names outside the
    # report's own pattern are never removed, even when listed.
    (figures / "05-old-figure.png").write_bytes(b"old")
    (figures / MANIFEST).write_text(json.dumps({"files": [*listed, "05-old-figure.png", "../r.html", "notes.txt"]}))
    code, _, err = cli("report", str(stored / "r"), "-o", str(tmp_path / "r.html"))
    assert code == 0, err
    assert not (figures / "05-old-figure.png").exists()
    assert {n: (figures / n).read_bytes() for n in mine} == mine
    assert (tmp_path / "r.html").is_file()
    assert json.loads((figures / MANIFEST).read_text())["files"] == listed
