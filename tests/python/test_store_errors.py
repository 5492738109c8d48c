"""Every bad results path or damaged results database is one line, ``numalab: <file>: <what>``,
exit code 1 or 2, never a traceback: for each kind of damage, every command that reads or writes
the store. A read-only database still reads; only the study, which records runs, refuses it."""

from __future__ import annotations

import os
import random
import shutil
import sqlite3
import subprocess
from pathlib import Path

import pytest

from numalab.cli.main import run

STUDY = """
name = "st"
machine = "e5-2620v4-2s"
workload = "dgemv"
params = { n = 2000, reps = 2 }
seeds = [1, 2]
"""


def _call(capsys, *args: str) -> tuple[int, str, str]:
    code = 0
    try:
        run(list(args))
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else 1
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture(scope="module")
def good(tmp_path_factory):
    """A results directory with the two runs of STUDY, and the first run's hash."""
    root = tmp_path_factory.mktemp("good")
    (root / "st.toml").write_text(STUDY)
    try:
        run(["study", str(root / "st.toml"), "--results", str(root / "r"), "--workers", "1"])
    except SystemExit as e:
        assert e.code in (0, None)
    con = sqlite3.connect(root / "r" / "numalab.db")
    first = con.execute("SELECT hash FROM runs ORDER BY hash").fetchone()[0]
    con.close()
    return root, first


def _immutable(path: Path) -> bool:
    """Make ``path`` unwritable even for root (chattr +i), else by its mode; False if neither works."""
    if os.geteuid() != 0:
        path.chmod(0o444)
        return not os.access(path, os.W_OK)
    if shutil.which("chattr") and subprocess.run(["chattr", "+i", str(path)], capture_output=True).returncode == 0:
        return not os.access(path, os.W_OK)
    return False


def _damaged(kind: str, good_db: Path, results: Path) -> Path:
    results.mkdir()
    db = results / "numalab.db"
    data = bytearray(good_db.read_bytes())
    if kind == "corrupt":
        rnd = random.Random(9)
        for i in range(100, len(data)):  # the header survives, every page is garbage
            data[i] = rnd.randrange(256)
        db.write_bytes(bytes(data))
    elif kind == "truncated":
        db.write_bytes(bytes(data[: len(data) // 3]))
    elif kind == "foreign":
        con = sqlite3.connect(db)
        con.execute("CREATE TABLE moz_places (id INTEGER PRIMARY KEY, url TEXT)")
        con.execute("CREATE TABLE moz_bookmarks (id INTEGER PRIMARY KEY, fk INTEGER)")
        con.commit()
        con.close()
    elif kind == "empty":
        db.write_bytes(b"")
    elif kind == "directory":
        db.mkdir()
    elif kind == "readonly":
        db.write_bytes(bytes(data))
        if not _immutable(db):
            pytest.skip("cannot make a file read-only here (root without chattr)")
    return db


# What the one line must say, per kind of damage.
EXPECTED = {
    "corrupt": r"database is corrupt|not a numalab results database",
    "truncated": r"truncated",
    "foreign": r"not a numalab results database \(an SQLite database of another program; tables: moz_bookmarks, moz_places\)",
    "empty": r"empty file, not a numalab results database",
    "directory": r"is a directory, not a numalab results database",
    "readonly": r"read-only",
}
COMMANDS = ["results list", "results show", "results export --csv", "results export --parquet", "report", "study"]


def _argv(command: str, root: Path, results: Path, first: str, tmp: Path) -> list[str]:
    r = ["--results", str(results)]
    return {
        "results list": ["results", "list", *r],
        "results show": ["results", "show", first, *r],
        "results export --csv": ["results", "export", "--csv", str(tmp / "x.csv"), *r],
        "results export --parquet": ["results", "export", "--parquet", str(tmp / "x.parquet"), *r],
        "report": ["report", str(root / "st.toml"), "-o", str(tmp / "x.html"), *r],
        "study": ["study", str(root / "st.toml"), "--workers", "1", *r],
    }[command]


@pytest.mark.parametrize("kind", list(EXPECTED))
def test_every_command_on_a_damaged_store_is_one_clear_line(kind, good, tmp_path, capsys):
    import re

    root, first = good
    db = _damaged(kind, root / "r" / "numalab.db", tmp_path / "r")
    try:
        for command in COMMANDS:
            code, out, err = _call(capsys, *_argv(command, root, tmp_path / "r", first, tmp_path))
            if kind == "readonly" and command != "study":
                assert code == 0, (command, err)  # reading a read-only store works
                continue
            lines = err.strip().splitlines()
            assert code in (1, 2), (kind, command, code, err)
            assert len(lines) == 1 and lines[0].startswith("numalab: "), (kind, command, err)
            assert str(db) in lines[0], (kind, command, lines[0])
            assert re.search(EXPECTED[kind], lines[0]), (kind, command, lines[0])
            assert "Traceback" not in err
    finally:
        if kind == "readonly" and os.geteuid() == 0:
            subprocess.run(["chattr", "-i", str(db)], capture_output=True)


def test_a_numalab_db_directory_given_directly_is_refused(tmp_path, good, capsys):
    root, _ = good
    (tmp_path / "numalab.db").mkdir()
    for argv in (["results", "list", "-r", str(tmp_path / "numalab.db")], ["report", str(tmp_path / "numalab.db"), "-o", str(tmp_path / "x.html")],
                 ["study", str(root / "st.toml"), "-r", str(tmp_path / "numalab.db")]):
        code, _, err = _call(capsys, *argv)
        assert code == 2 and err.startswith(f"numalab: {tmp_path / 'numalab.db'}: is a directory"), (argv, err)
    assert list((tmp_path / "numalab.db").iterdir()) == [], "nothing may be created inside it"


def test_wrong_and_unwritable_paths(good, tmp_path, capsys):
    root, _ = good
    r = str(root / "r")
    (tmp_path / "file.txt").write_text("x")
    (tmp_path / "f-figures").write_text("x")
    cases = [
        (["report", str(root / "st.toml"), "-r", r, "-o", str(tmp_path / "f.html")], f"its figures go to {tmp_path / 'f-figures'}, which is a file"),
        (["report", str(root / "st.toml"), "-r", r, "-o", str(tmp_path)], f"--output {tmp_path}: is a directory"),
        (["report", str(root / "st.toml"), "-r", r, "-o", "/nonexistent/dir/r.html"], "--output /nonexistent/dir/r.html: directory /nonexistent/dir does not exist"),
        (["report", str(root / "st.toml"), "-r", r, "-o", str(tmp_path / "file.txt" / "r.html")], "is not a directory"),
        (["report", str(root / "st.toml"), "-r", "/proc/x", "-o", str(tmp_path / "r.html")], "/proc/x/numalab.db: no results store here"),
        (["results", "list", "-r", "/proc/x"], "/proc/x/numalab.db: no results store here"),
        (["results", "list", "-r", str(root / "st.toml")], f"{root / 'st.toml'}: is a file, not a results directory"),
        (["results", "export", "--csv", "/nonexistent/dir/x.csv", "-r", r], "--csv /nonexistent/dir/x.csv: directory /nonexistent/dir does not exist"),
        (["results", "export", "--csv", str(tmp_path), "-r", r], f"--csv {tmp_path}: is a directory"),
        (["study", str(root / "st.toml"), "-r", "/proc/x"], "/proc/x: cannot create the results directory"),
        (["study", str(root / "st.toml"), "-r", r, "--scheduler", "garbage"], "--scheduler 'garbage': not a Dask scheduler address"),
        (["study", str(root / "st.toml"), "-r", r, "--scheduler", "tcp://host:99999"], "not a Dask scheduler address (expected tcp://HOST:PORT"),
    ]
    for argv, expected in cases:
        code, _, err = _call(capsys, *argv)
        lines = err.strip().splitlines()
        assert code == 2 and len(lines) == 1 and lines[0].startswith("numalab: ") and expected in lines[0], (argv, err)
    assert not Path("/nonexistent").exists(), "a report must not create directories it was not asked for"
    assert not (tmp_path / "r.html").exists()


def test_report_format_follows_the_extension(good, tmp_path, capsys):
    root, _ = good
    code, _, err = _call(capsys, "report", str(root / "st.toml"), "-r", str(root / "r"), "-o", str(tmp_path / "r.md"))
    assert code == 0, err
    assert (tmp_path / "r.md").read_text().startswith("# st")


def test_a_store_written_by_a_newer_numalab_is_refused(good, tmp_path, capsys):
    root, _ = good
    shutil.copy(root / "r" / "numalab.db", tmp_path / "numalab.db")
    con = sqlite3.connect(tmp_path / "numalab.db")
    con.execute("PRAGMA user_version = 99")
    con.close()
    code, _, err = _call(capsys, "results", "list", "-r", str(tmp_path))
    assert code == 2 and "written by a newer numalab (store layout 99" in err


def test_a_store_of_the_first_layout_is_read_and_migrated(good, tmp_path, capsys):
    """Stores written before the file said whose it was (application_id 0, no repeat_group)."""
    root, _ = good
    db = tmp_path / "numalab.db"
    shutil.copy(root / "r" / "numalab.db", db)
    con = sqlite3.connect(db, isolation_level=None)
    con.execute("DROP VIEW results")
    con.execute("ALTER TABLE runs DROP COLUMN repeat_group")
    cols = ", ".join(f"r.{c[1]}" for c in con.execute("PRAGMA table_info(runs)") if c[1] not in ("hash", "study"))
    con.execute('CREATE VIEW results AS SELECT s.study AS study, s.hash AS hash, s.position, s.label, s."case", s.role, '
                f"s.baseline_hash, s.speedup, {cols} FROM study_runs s JOIN runs r ON r.hash = s.hash")
    con.execute("PRAGMA application_id = 0")
    con.execute("PRAGMA user_version = 0")
    con.close()
    from numalab.results import load
    from numalab.results.store import APPLICATION_ID, SCHEMA_VERSION, Store

    df = load(tmp_path)  # read as it is
    assert len(df) == 2 and df["repeat_group"].nunique() == 1
    with Store(tmp_path) as store:  # a writer brings it up to date
        assert store.db.execute("PRAGMA application_id").fetchone()[0] == APPLICATION_ID
        assert store.db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        assert store.db.execute("SELECT count(*) FROM runs WHERE repeat_group IS NULL").fetchone()[0] == 0


def test_damaged_text_inside_a_sound_database_is_one_clear_line(good, tmp_path, capsys):
    """Bytes flipped inside a stored document leave SQLite content; reading it must still say so."""
    root, first = good
    shutil.copy(root / "r" / "numalab.db", tmp_path / "numalab.db")
    con = sqlite3.connect(tmp_path / "numalab.db", isolation_level=None)
    con.execute("UPDATE runs SET result = '{\"broken', params = '[1'")
    con.close()
    r = ["-r", str(tmp_path)]
    for argv, expected in (
        (["results", "show", first, *r], "its result document is not JSON"),
        (["results", "export", "--csv", str(tmp_path / "x.csv"), *r], "its parameters are not JSON"),
        (["report", str(tmp_path), "-o", str(tmp_path / "x.html")], "not JSON"),
    ):
        code, _, err = _call(capsys, *argv)
        lines = err.strip().splitlines()
        assert code == 1 and len(lines) == 1 and lines[0].startswith(f"numalab: {tmp_path / 'numalab.db'}: database is corrupt"), (argv, err)
        assert expected in lines[0], (argv, err)
