"""The results store: one SQLite file (``numalab.db`` under the results directory), WAL mode,
written by the studies' clients and readable by any number of others meanwhile.

Tables:

* ``runs``: one row per configuration hash (unique): the resolved configuration as sorted JSON,
  status (``ok``, ``out-of-memory``, ``failed``), error, wall seconds, timestamps, the result
  document (JSON text) and the derived metrics as columns (``time_s``, ``local_pct``, ...;
  further metrics and ``vmstat_<counter>`` columns are added as the documents bring them);
  ``repeat_group`` is the hash of the configuration without its seed: runs that share it are
  repetitions of one configuration (tables average over it, never over labels);
* ``studies``: each study's name, the study file's absolute path and text, its resolved run
  list and the time its speedups compare (``compare_time``: ``reported_time_s``, the time the
  program reports, or ``time_s``, the whole run; docs/studies.md §4). A name belongs to one study file: another file with the same name is refused (unless
  ``replace``), so two studies never share rows and a report never pairs one study's text with
  another's numbers. Editing the file in place keeps it the same study;
* ``study_runs``: which runs belong to which study, with the table label, case, role, baseline
  hash and the speedup against that baseline (on the study's ``compare_time``). A configuration
  shared by two studies runs once.

The view ``results`` joins them: one row per run of a study, everything as columns.

Seeds are the engine's u64; SQLite integers are signed 64-bit, so a seed of 2^63 or more is
stored as ``seed - 2^64`` (negative) and ``rows()``/``find()`` give it back unsigned.

The file says it is numalab's (``PRAGMA application_id``) and which layout it has
(``PRAGMA user_version``). A new store is written beside its final name and hard-linked into
place, so nobody ever sees a half-made one; an older layout is migrated inside one
``BEGIN IMMEDIATE`` transaction, so two studies starting at once on a new directory do not race.
Anything else (a foreign or corrupt file, a directory, a read-only file for a writer) is one
clear error naming the file.

Durability: a sweep commits the runs that have returned together (``write_many``, at most half a
second after they return; WAL + ``synchronous=NORMAL`` survives a killed process), so a sweep
killed at any point loses at most the runs still in flight and those of its last half second. A run
is *complete* when its status is ``ok`` or ``out-of-memory`` (the model's own outcome) and it has
the program's reported time (runs stored before numalab reported it are run again); ``failed``
runs are tried again by the next sweep.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import secrets
import sqlite3
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Iterable, TypeVar

from numalab.spec.run import MAX_SEED
from numalab.exceptions import NumalabError, UsageError
from numalab.results.derived import METRIC_COLUMNS

DB_NAME = "numalab.db"
COMPLETE = ("ok", "out-of-memory")
STATUSES = ("ok", "out-of-memory", "failed")
# "NMLB": marks the file as a numalab results store (sqlite.org/fileformat.html, offset 68).
APPLICATION_ID = 0x4E4D4C42
# 1: the first layout (no application_id); 2: repeat_group, absolute study paths;
# 3: runs.reported_time_s, studies.compare_time.
SCHEMA_VERSION = 3
#: The times a study may compare (study/model.py: Study.compare_time).
COMPARE_TIMES = ("reported_time_s", "time_s")
COMPARE_DEFAULT = "reported_time_s"
SEED_MAX = MAX_SEED  # the engine's u64 (spec/run.py)
#: The variable naming the store a study's workers cache co-runs' alone runs in (runner/corun.py).
#: Here rather than there so that a sweep setting it does not import the co-run modules (4-8 ms).
ALONE_STORE_ENV = "NUMALAB_ALONE_STORE"
_TABLES = {"runs", "studies", "study_runs"}
_DB_SUFFIXES = (".db", ".sqlite", ".sqlite3")
_SQLITE_MAGIC = b"SQLite format 3\x00"
# A complete run has both times: one stored before numalab reported the program's time has not.
_HAS_TIMES = "reported_time_s IS NOT NULL"
# Columns added as documents bring new metrics or counters: plain lower-case identifiers only.
_COLUMN = re.compile(r"^[a-z][a-z0-9_]*$")

_SCHEMA = [
    f"""CREATE TABLE IF NOT EXISTS runs (
    hash TEXT PRIMARY KEY,
    study TEXT NOT NULL,
    config TEXT NOT NULL,
    machine TEXT, workload TEXT, params TEXT, placement TEXT, balancing TEXT, kernel TEXT, seed INTEGER,
    status TEXT NOT NULL CHECK (status IN ({", ".join(repr(s) for s in STATUSES)})),
    error TEXT,
    wall_s REAL,
    finished_at TEXT,
    {", ".join(f"{c} REAL" for c in METRIC_COLUMNS)},
    result TEXT,
    repeat_group TEXT
)""",
    "CREATE TABLE IF NOT EXISTS studies (name TEXT PRIMARY KEY, path TEXT, source TEXT, resolved TEXT, updated_at TEXT, compare_time TEXT)",
    """CREATE TABLE IF NOT EXISTS study_runs (
    study TEXT NOT NULL, hash TEXT NOT NULL, position INTEGER,
    label TEXT, "case" TEXT, role TEXT, baseline_hash TEXT, speedup REAL,
    PRIMARY KEY (study, hash)
)""",
    "CREATE INDEX IF NOT EXISTS study_runs_baseline ON study_runs (study, baseline_hash)",
]


class StoreError(NumalabError):
    """The results database cannot be used as it is: corrupt, locked, unreadable (exit code 1)."""


def db_path(path: str | Path) -> Path:
    """A results directory (holding ``numalab.db``) or the database file itself.

    An existing file is the database; a path that does not exist is a directory unless it ends
    in ``.db``/``.sqlite``; a directory called ``numalab.db`` is refused (it cannot be one)."""
    p = Path(path)
    if p.is_dir() and p.name == DB_NAME:
        raise UsageError(f"{p}: is a directory, not a numalab results database (give the directory that holds {DB_NAME})")
    # is_file, not exists: another process may create the directory between two checks.
    if p.is_file() or (p.suffix in _DB_SUFFIXES and not p.is_dir()):
        return p
    return p / DB_NAME


def repeat_group(config: dict[str, Any]) -> str:
    """Hash of a configuration without its seed: equal for the repetitions of one configuration."""
    rest = {k: v for k, v in config.items() if k != "seed"}
    return hashlib.sha256(json.dumps(rest, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def seed_to_db(seed: int) -> int:
    if not isinstance(seed, int) or isinstance(seed, bool) or not 0 <= seed <= SEED_MAX:
        raise UsageError(f"seed {seed!r} is not accepted (expected an integer from 0 to 2^64-1 = {SEED_MAX}, the engine's u64 seed)")
    return seed - (1 << 64) if seed > (1 << 63) - 1 else seed


def seed_from_db(value: Any) -> Any:
    return value + (1 << 64) if isinstance(value, int) and value < 0 else value


F = TypeVar("F", bound=Callable[..., Any])


def _guarded(method: F) -> F:
    """SQLite errors (corrupt pages found late, a lock held too long) become one clear error."""

    @functools.wraps(method)
    def wrapper(self: "Store", *args: Any, **kwargs: Any) -> Any:
        try:
            return method(self, *args, **kwargs)
        except sqlite3.Error as e:
            raise sqlite_error(self.path, e) from None

    return wrapper  # type: ignore[return-value]


def sqlite_error(path: Path, e: BaseException) -> NumalabError:
    """An error from SQLite as what it means for the user, naming the file."""
    msg = str(e)
    low = msg.lower()
    if "file is not a database" in low:
        return UsageError(f"{path}: not a numalab results database, or a corrupt one{_truncation(path)} (sqlite: {msg})")
    if "malformed" in low or "corrupt" in low:
        return StoreError(f"{path}: database is corrupt{_truncation(path)} (sqlite: {msg}); restore it from a copy, "
                          "or move it away and run the study again")
    if "readonly" in low or "read-only" in low:
        return UsageError(f"{path}: the results database is read-only (sqlite: {msg}); make it writable or give another --results directory")
    if "locked" in low or "busy" in low:
        return StoreError(f"{path}: database is locked by another process (sqlite: {msg}); try again when it is done")
    if "unable to open" in low:
        return StoreError(f"{path}: cannot open the database (sqlite: {msg}); check the path and its permissions")
    return StoreError(f"{path}: results database error (sqlite: {msg})")


def _truncation(path: Path) -> str:
    """', truncated: N bytes of M' when the file is shorter than its header says."""
    try:
        with open(path, "rb") as f:
            head = f.read(100)
        size = path.stat().st_size
    except OSError:
        return ""
    if len(head) < 100 or not head.startswith(_SQLITE_MAGIC):
        return f", truncated: {size} bytes" if len(head) < 100 and head.startswith(_SQLITE_MAGIC[: len(head)]) and head else ""
    page = int.from_bytes(head[16:18], "big")
    page = 65536 if page == 1 else page
    pages = int.from_bytes(head[28:32], "big")
    # The page count is valid only when its version number matches the change counter.
    if head[92:96] == head[24:28] and pages and size < pages * page:
        return f", truncated: {size} bytes of {pages * page}"
    return ""


class Store:
    """The SQLite store. Use as a context manager. ``create=False`` opens it read-only (and
    refuses a path where there is none); ``create=True`` creates or migrates it for writing."""

    def __init__(self, path: str | Path, create: bool = True):
        self.path = db_path(path)
        self.readonly = not create
        self.db: sqlite3.Connection | None = None
        if self.path.is_dir():
            raise UsageError(f"{self.path}: is a directory, not a numalab results database")
        if not self.path.exists():
            if not create:
                raise UsageError(f"{self.path}: no results store here (run `numalab study FILE --results DIR` first)")
            self._create()
        else:
            self._precheck(create)
        try:
            self._connect(create)
            self._check(create)
            self._columns = set(self._run_columns())
        except sqlite3.Error as e:
            self.close()
            raise sqlite_error(self.path, e) from None
        except BaseException:
            self.close()
            raise

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        if self.db is not None:
            try:
                self.db.close()
            except sqlite3.Error:
                pass
            self.db = None

    # -- opening ------------------------------------------------------------------------------

    def _precheck(self, create: bool) -> None:
        """What the file is, from its first bytes, before SQLite sees it."""
        try:
            with open(self.path, "rb") as f:
                head = f.read(len(_SQLITE_MAGIC))
        except OSError as e:
            raise UsageError(f"{self.path}: cannot read the results database ({e.strerror})") from None
        if not head:
            raise UsageError(f"{self.path}: empty file, not a numalab results database (remove it to start a new store there)")
        if head != _SQLITE_MAGIC:
            if self.path.name != DB_NAME and self.path.suffix not in _DB_SUFFIXES:
                raise UsageError(f"{self.path}: is a file, not a results directory (give the directory that holds {DB_NAME}, or the {DB_NAME} file)")
            raise UsageError(f"{self.path}: not a numalab results database (not an SQLite file{_truncation(self.path)})")
        if create and not os.access(self.path, os.W_OK):
            raise UsageError(f"{self.path}: the results database is read-only, and numalab study records runs in it "
                             "(make it writable or give another --results directory)")

    def _create(self) -> None:
        """Write a complete empty store beside its final name, then link it into place: a
        second process doing the same at once finds the link taken and uses the first one."""
        parent = self.path.parent
        try:
            parent.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise UsageError(f"{parent}: cannot create the results directory ({e.strerror or e})") from None
        if not os.access(parent, os.W_OK | os.X_OK):
            raise UsageError(f"{parent}: cannot write in the results directory (permission denied)")
        tmp = parent / f".{self.path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp"
        try:
            con = sqlite3.connect(tmp, isolation_level=None)
            try:
                # Nobody sees the file before it is complete: no sync per step (a commit and a
                # checkpoint, 10-20 ms each on a virtual disk), one of the whole file below.
                con.execute("PRAGMA synchronous=OFF")
                con.execute("PRAGMA journal_mode=WAL")
                con.execute("BEGIN IMMEDIATE")
                _create_schema(con)
                con.execute("COMMIT")
            finally:
                con.close()
            fd = os.open(tmp, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
            try:
                os.link(tmp, self.path)
            except FileExistsError:
                pass  # another process made it first: use theirs
            except OSError:
                # No hard links on this file system: a plain rename, unless one appeared meanwhile.
                if not self.path.exists():
                    os.replace(tmp, self.path)
        except sqlite3.Error as e:
            raise sqlite_error(tmp, e) from None
        except OSError as e:
            raise UsageError(f"{self.path}: cannot create the results database ({e.strerror or e})") from None
        finally:
            for leftover in (tmp, Path(f"{tmp}-wal"), Path(f"{tmp}-shm"), Path(f"{tmp}-journal")):
                try:
                    leftover.unlink()
                except OSError:
                    pass

    def _connect(self, create: bool) -> None:
        # isolation_level=None: transactions are explicit, so each run commits exactly when written.
        if create or os.access(self.path, os.W_OK):
            # A reader too (it never writes): its close then tidies the -wal/-shm files away.
            self.db = sqlite3.connect(self.path, isolation_level=None, timeout=30)
        else:
            # A store on a read-only file still reads.
            self.db = sqlite3.connect(self.path.resolve().as_uri() + "?mode=ro", uri=True, isolation_level=None, timeout=30)
        self.db.row_factory = sqlite3.Row
        if create:
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA synchronous=NORMAL")

    def _check(self, create: bool) -> None:
        """The file is a numalab store of a layout this version knows; writers migrate it."""
        app, version, tables = self._identity()
        ours = app == APPLICATION_ID or (app == 0 and _TABLES <= tables)
        if not ours:
            if app == 0 and not tables:
                if not create:
                    raise UsageError(f"{self.path}: not a numalab results database (an SQLite database with no tables)")
            else:
                shown = ", ".join(sorted(tables)[:6]) + (", ..." if len(tables) > 6 else "")
                what = f"tables: {shown}" if tables else f"application id {app:#x}"
                raise UsageError(f"{self.path}: not a numalab results database (an SQLite database of another program; {what})")
        elif not _TABLES <= tables:
            raise StoreError(f"{self.path}: database is damaged (missing tables: {', '.join(sorted(_TABLES - tables))})")
        if version > SCHEMA_VERSION:
            raise UsageError(f"{self.path}: written by a newer numalab (store layout {version}; this version knows up to "
                             f"{SCHEMA_VERSION}): upgrade numalab to read it")
        if create and (version < SCHEMA_VERSION or app != APPLICATION_ID):
            with self._transaction():
                # Checked again under the write lock: another process may have migrated meanwhile.
                app, version, _ = self._identity()
                if version < SCHEMA_VERSION or app != APPLICATION_ID:
                    _create_schema(self.db, migrate=True)

    def _identity(self) -> tuple[int, int, set[str]]:
        app = self.db.execute("PRAGMA application_id").fetchone()[0]
        version = self.db.execute("PRAGMA user_version").fetchone()[0]
        tables = {r[0] for r in self.db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        return app, version, tables

    # -- schema -------------------------------------------------------------------------------

    def _run_columns(self) -> list[str]:
        return [r["name"] for r in self.db.execute("PRAGMA table_info(runs)")]

    def _ensure_columns(self, names: Iterable[str]) -> None:
        """Add metric columns the document brings; called inside the write transaction, so a
        column another process added meanwhile is seen (no ``duplicate column name``)."""
        new = [n for n in names if n not in self._columns and _COLUMN.match(n)]
        if not new:
            return
        self._columns = set(self._run_columns())
        new = [n for n in new if n not in self._columns]
        for n in new:
            self.db.execute(f"ALTER TABLE runs ADD COLUMN {n} REAL")
        if new:
            self._columns |= set(new)
            _create_view(self.db)

    # -- writing ------------------------------------------------------------------------------

    @_guarded
    def register_study(self, resolved: Any, replace: bool = False) -> None:
        """Record a study and its run list; runs dropped from the file leave the study.

        A study of the same name from another file (another path and other text) is refused
        unless ``replace``: its runs would otherwise become this study's."""
        sf = resolved.file
        where = _absolute(sf.path)
        listing = [{"hash": r.hash, "label": r.label, "case": r.case, "role": r.role} for r in resolved.runs]
        with self._transaction():
            old = self.db.execute("SELECT path, source, updated_at FROM studies WHERE name = ?", (resolved.name,)).fetchone()
            if old is not None and not replace and self._other_file(old, where, sf.text):
                n = self.db.execute("SELECT count(*) FROM study_runs WHERE study = ?", (resolved.name,)).fetchone()[0]
                raise UsageError(
                    f"{self.path}: a different study named '{resolved.name}' is already stored here (from {old['path']}, "
                    f"{n} runs, last run {old['updated_at']}); rename this one (name = ... in {sf.path}), give another "
                    f"--results directory, or pass --replace to make {sf.path} the study '{resolved.name}'"
                )
            compare = getattr(getattr(sf, "study", None), "compare_time", COMPARE_DEFAULT)
            self.db.execute(
                "INSERT INTO studies (name, path, source, resolved, updated_at, compare_time) VALUES (?, ?, ?, ?, ?, ?) "
                "ON CONFLICT(name) DO UPDATE SET path=excluded.path, source=excluded.source, "
                "resolved=excluded.resolved, updated_at=excluded.updated_at, compare_time=excluded.compare_time",
                (resolved.name, where, sf.text, json.dumps(listing), _now(), compare),
            )
            self.db.execute("CREATE TEMP TABLE IF NOT EXISTS keep (hash TEXT PRIMARY KEY)")
            self.db.execute("DELETE FROM keep")
            self.db.executemany("INSERT OR IGNORE INTO keep VALUES (?)", [(r.hash,) for r in resolved.runs])
            self.db.execute("DELETE FROM study_runs WHERE study = ? AND hash NOT IN (SELECT hash FROM keep)", (resolved.name,))
            self.db.executemany(
                'INSERT INTO study_runs (study, hash, position, label, "case", role, baseline_hash) VALUES (?, ?, ?, ?, ?, ?, ?) '
                'ON CONFLICT(study, hash) DO UPDATE SET position=excluded.position, label=excluded.label, "case"=excluded."case", '
                "role=excluded.role, baseline_hash=excluded.baseline_hash",
                [(resolved.name, r.hash, i, r.label, r.case, r.role, r.baseline_hash) for i, r in enumerate(resolved.runs)],
            )
            self._update_speedups(resolved.name)

    @staticmethod
    def _other_file(old: Any, where: str, text: str) -> bool:
        """Another study file: stored from another absolute path, with other text. An edited file
        (same path) or a moved, unchanged one is the same study; paths stored relative by older
        versions cannot be compared and are taken as the same file."""
        stored = old["path"] or ""
        return Path(stored).is_absolute() and stored != where and (old["source"] or "") != text

    def same_study_file(self, name: str, path: str | Path, text: str) -> str | None:
        """None when ``path``/``text`` is the file study ``name`` was stored from (or may be);
        else the path it was stored from."""
        info = self.study_source(name)
        if info is None or not self._other_file(info, _absolute(path), text):
            return None
        return info["path"]

    @_guarded
    def complete_hashes(self, hashes: Iterable[str] | None = None) -> set[str]:
        rows = self.db.execute(f"SELECT hash FROM runs WHERE status IN ({_marks(COMPLETE)}) AND {_HAS_TIMES}", COMPLETE)
        done = {r["hash"] for r in rows}
        return done if hashes is None else done & set(hashes)

    @_guarded
    def complete_count(self, study: str) -> int:
        """How many of ``study``'s registered runs are complete."""
        return self.db.execute(
            f"SELECT count(*) FROM results WHERE study = ? AND status IN ({_marks(COMPLETE)}) AND {_HAS_TIMES}", (study, *COMPLETE)
        ).fetchone()[0]

    @_guarded
    def write(self, study: str, run: Any, outcome: dict[str, Any]) -> None:
        """Store one finished run (``run``: a ResolvedRun; ``outcome``: worker.run_config's)."""
        self.write_many(study, [(run, outcome)])

    @_guarded
    def write_many(self, study: str, finished: list[tuple[Any, dict[str, Any]]]) -> None:
        """Store finished runs in one transaction: a sweep commits the runs that returned together
        at once, which costs one commit instead of one per run (all or none are stored)."""
        if not finished:
            return
        now, shared = _now(), _SharedColumns()
        rows = [(run.hash, self._row(study, run, outcome, now, shared), _metric_columns(outcome)) for run, outcome in finished]
        with self._transaction():
            t = self.compare_time(study)
            by_columns: dict[tuple[str, ...], list[tuple[Any, ...]]] = {}
            checked: set[tuple[str, ...]] = set()
            for _hash, row, cols in rows:
                names = tuple(cols)
                if names not in checked:  # the runs of a commit mostly bring the same metrics
                    self._ensure_columns(names)
                    checked.add(names)
                row.update({k: v for k, v in cols.items() if k in self._columns and k not in row})
                by_columns.setdefault(tuple(row), []).append(tuple(row.values()))
            for names, values in by_columns.items():
                # REPLACE: a failed run tried again overwrites its earlier row.
                self.db.executemany(f"INSERT OR REPLACE INTO runs ({', '.join(names)}) VALUES ({_marks(names)})", values)
            self._update_speedups(study, [h for h, _row, _cols in rows], t)

    @_guarded
    def checkpoint(self) -> None:
        """Copy the write-ahead log into the database file now, as closing the store would (a
        sweep does it while its workers exit); readers in the middle of a read are not waited for."""
        self.db.execute("PRAGMA wal_checkpoint(PASSIVE)")

    @staticmethod
    def _row(study: str, run: Any, outcome: dict[str, Any], now: str | None = None, shared: "_SharedColumns | None" = None) -> dict[str, Any]:
        c = run.config
        params, balancing, group = (shared or _SharedColumns()).of(c)
        return {
            "hash": run.hash,
            "study": study,
            "config": run.config_json,
            "machine": c["machine"],
            "workload": c["workload"],
            "params": params,
            "placement": c["placement"],
            "balancing": balancing,
            "kernel": c["kernel"],
            "seed": seed_to_db(c["seed"]),
            "status": outcome["status"],
            "error": outcome.get("error"),
            "wall_s": outcome.get("wall_s"),
            "finished_at": now or _now(),
            "result": outcome.get("result"),
            "repeat_group": group,
        }

    def _update_speedups(self, study: str, hashes: list[str] | None = None, compare: str | None = None) -> None:
        """speedup = time(baseline) / time(run), for these runs (all: None) and the runs they are
        the baseline of, on the time the study compares (``compare_time``; ``compare``: already read)."""
        t = compare or self.compare_time(study)
        update = (f"UPDATE study_runs SET speedup = (SELECT b.{t} / r.{t} FROM runs r, runs b WHERE r.hash = study_runs.hash "
                  f"AND b.hash = study_runs.baseline_hash AND r.status = 'ok' AND b.status = 'ok' AND r.{t} > 0) WHERE study = ?")
        if hashes is None:
            self.db.execute(update, (study,))
            return
        # Two statements, each on its index ((study, hash) and (study, baseline_hash)): with OR
        # between them SQLite reads every row of the study, for every commit.
        # A run without a baseline keeps the NULL speedup the study's registration gave it.
        listed = json.dumps(hashes)
        for column in ("hash", "baseline_hash"):
            self.db.execute(f"{update} AND baseline_hash IS NOT NULL AND {column} IN (SELECT value FROM json_each(?))", (study, listed))

    def compare_time(self, study: str) -> str:
        """The time column ``study``'s speedups compare (one of ``COMPARE_TIMES``)."""
        row = self.db.execute("SELECT compare_time FROM studies WHERE name = ?", (study,)).fetchone()
        value = row[0] if row else None
        return value if value in COMPARE_TIMES else COMPARE_DEFAULT

    def _transaction(self) -> "_Tx":
        return _Tx(self.db)

    # -- reading ------------------------------------------------------------------------------

    @_guarded
    def studies(self) -> list[str]:
        return [r["name"] for r in self.db.execute("SELECT name FROM studies ORDER BY name")]

    @_guarded
    def study_source(self, name: str) -> dict[str, Any] | None:
        row = self.db.execute("SELECT * FROM studies WHERE name = ?", (name,)).fetchone()
        return dict(row) if row else None

    @_guarded
    def rows(self, study: str | None = None, documents: bool = False) -> list[dict[str, Any]]:
        """Rows of the ``results`` view (one per run of a study), in study order; ``seed`` as the
        u64 the run used and ``repeat_group`` even for stores written before it existed."""
        cols = "*" if documents else ", ".join(c for c in self._view_columns() if c != "result")
        sql = f"SELECT {cols} FROM results" + (" WHERE study = ?" if study else "") + " ORDER BY study, position"
        return [_decoded(dict(r), self.path) for r in self.db.execute(sql, (study,) if study else ())]

    @_guarded
    def damaged(self, study: str | None = None) -> dict[str, str]:
        """Runs (of ``study``) whose result document is missing, not JSON or not numalab's, as
        hash -> what is wrong (``document_problem``); SQLite checks the text, no document is
        loaded into Python."""
        # Nested CASEs: SQLite evaluates them lazily, so json_type never sees invalid JSON.
        sql = ("SELECT DISTINCT hash, status, CASE WHEN result IS NULL OR result = '' THEN 'none' WHEN NOT json_valid(result) THEN 'text' "
               "WHEN json_type(result) != 'object' THEN 'other' ELSE 'object' END AS kind, "
               "CASE WHEN json_valid(result) THEN CASE WHEN json_type(result) = 'object' THEN json_extract(result, '$.schema') END END AS schema "
               "FROM results" + (" WHERE study = ?" if study else ""))
        out = {}
        for r in self.db.execute(sql, (study,) if study else ()):
            if r["kind"] == "object" and isinstance(r["schema"], str) and r["schema"].startswith("numalab."):
                continue
            # The same words as document_problem, from a stand-in of what SQLite found.
            stand_in = {"none": None, "text": "{", "other": "[]"}.get(r["kind"], json.dumps({"schema": r["schema"]}))
            problem = document_problem(stand_in, r["status"])
            if problem:
                out[r["hash"]] = problem
        return out

    def _view_columns(self) -> list[str]:
        return [f'"{d[0]}"' if d[0] == "case" else d[0] for d in self.db.execute("SELECT * FROM results LIMIT 0").description]

    @_guarded
    def find(self, prefix: str) -> dict[str, Any]:
        """The run whose hash starts with ``prefix`` (at least 4 characters, unambiguous)."""
        if len(prefix) < 4 or not re.fullmatch(r"[0-9a-f]+", prefix):
            raise UsageError(f"'{prefix}' is not a run hash (expected at least 4 hex digits, as `numalab results list` shows)")
        rows = self.db.execute("SELECT * FROM runs WHERE hash LIKE ? LIMIT 3", (prefix + "%",)).fetchall()
        if not rows:
            raise UsageError(f"no run with hash {prefix}... in {self.path}")
        if len(rows) > 1:
            raise UsageError(f"hash {prefix}... is ambiguous ({', '.join(r['hash'][:12] for r in rows)}, ...); give more digits")
        return _decoded(dict(rows[0]), self.path)


def document_problem(text: Any, status: str | None) -> str | None:
    """What is wrong with a run's stored result document, or None: a complete run must have one,
    and a document is a JSON object naming its ``schema`` (``numalab.result/1``, ...)."""
    if text is None or text == "":
        return "it finished but its result document is missing" if status in COMPLETE else None
    try:
        doc = json.loads(text)
    except (TypeError, ValueError):
        return "its result document is not JSON"
    if not isinstance(doc, dict):
        return "its result document is not a JSON object"
    schema = doc.get("schema")
    if not isinstance(schema, str) or not schema.startswith("numalab."):
        return "its result document has no numalab schema field" if schema is None else f"its result document has an unknown schema {schema!r}"
    return None


def describe_run(row: dict[str, Any]) -> str:
    """``run 1a2b3c4d5e6f (case | label, seed 1)``, or from the configuration columns when the row
    is not a study's (``runs`` rather than the ``results`` view)."""
    h = str(row.get("hash"))[:12]
    if row.get("label") is not None:
        what = f"{row.get('case')} | {row.get('label')}"
    else:
        what = " ".join(str(row[k]) for k in ("workload", "machine", "placement") if row.get(k) is not None)
    seed = seed_from_db(row.get("seed"))
    return f"run {h} ({what}{'' if seed is None else f', seed {seed}'})"


def _decoded(row: dict[str, Any], path: Path) -> dict[str, Any]:
    if "seed" in row:
        row["seed"] = seed_from_db(row["seed"])
    if row.get("repeat_group") is None and "config" in row:
        try:
            row["repeat_group"] = repeat_group(json.loads(row["config"]))
        except (TypeError, ValueError):
            raise StoreError(f"{path}: database is corrupt (run {str(row.get('hash'))[:12]}: its configuration is not JSON)") from None
    return row


def _create_schema(con: sqlite3.Connection, migrate: bool = False) -> None:
    """Tables, the view and the file's identity, inside the caller's transaction. ``migrate``:
    bring an older layout up to date (new columns, ``repeat_group`` filled in)."""
    for statement in _SCHEMA:
        con.execute(statement)
    if migrate:
        have = {r[1] for r in con.execute("PRAGMA table_info(runs)")}
        for c in METRIC_COLUMNS:
            if c not in have:
                con.execute(f"ALTER TABLE runs ADD COLUMN {c} REAL")
        if "repeat_group" not in have:
            con.execute("ALTER TABLE runs ADD COLUMN repeat_group TEXT")
        if "compare_time" not in {r[1] for r in con.execute("PRAGMA table_info(studies)")}:
            con.execute("ALTER TABLE studies ADD COLUMN compare_time TEXT")
        for h, config in con.execute("SELECT hash, config FROM runs WHERE repeat_group IS NULL").fetchall():
            try:
                con.execute("UPDATE runs SET repeat_group = ? WHERE hash = ?", (repeat_group(json.loads(config)), h))
            except (TypeError, ValueError):
                pass  # a damaged configuration: reading that row will say so
    _create_view(con)
    con.execute(f"PRAGMA application_id = {APPLICATION_ID}")
    con.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")


def _create_view(con: sqlite3.Connection) -> None:
    """The ``results`` view lists every column of ``runs``; rebuilt when columns are added.
    Its ``study`` is the study the row belongs to (``runs.study`` is the one that ran it)."""
    cols = ", ".join(f"r.{r[1]}" for r in con.execute("PRAGMA table_info(runs)") if r[1] not in ("hash", "study"))
    con.execute("DROP VIEW IF EXISTS results")
    con.execute(
        'CREATE VIEW results AS SELECT s.study AS study, s.hash AS hash, s.position, s.label, s."case", s.role, '
        f"s.baseline_hash, s.speedup, {cols} FROM study_runs s JOIN runs r ON r.hash = s.hash"
    )


class _Tx:
    """``BEGIN IMMEDIATE`` ... ``COMMIT`` (rolled back on error)."""

    def __init__(self, db: sqlite3.Connection):
        self.db = db

    def __enter__(self) -> None:
        self.db.execute("BEGIN IMMEDIATE")

    def __exit__(self, kind: Any, *exc: Any) -> None:
        if kind is None:
            self.db.execute("COMMIT")
        elif self.db.in_transaction:
            try:
                self.db.execute("ROLLBACK")
            except sqlite3.Error:
                pass  # the error being raised says more than a failed rollback


class _SharedColumns:
    """The params and balancing columns and the repeat group of configurations, each worked out
    once per commit: repetitions share their value objects (study/expand.py), so the runs of a
    commit mostly differ only in their seed. Keyed by the objects' identities, which hold while
    the commit's configurations are alive (one ``write_many``); equal values under other
    identities are only worked out again."""

    def __init__(self) -> None:
        self.seen: dict[tuple[Any, ...], tuple[str, str, str]] = {}

    def of(self, c: dict[str, Any]) -> tuple[str, str, str]:
        # The type too: 1, 1.0 and True are equal keys but not the same JSON.
        key = tuple((k, type(v), v if v is None or isinstance(v, (str, int, float)) else id(v)) for k, v in c.items() if k != "seed")
        out = self.seen.get(key)
        if out is None:
            out = self.seen[key] = (json.dumps(c["params"], sort_keys=True), json.dumps(c["balancing"], sort_keys=True), repeat_group(c))
        return out


def _metric_columns(outcome: dict[str, Any]) -> dict[str, Any]:
    cols = dict(outcome.get("columns") or {})
    # A document that reports no program time is of a program without a timer: the whole run.
    cols.setdefault("reported_time_s", cols.get("time_s"))
    return cols


def _absolute(path: str | Path) -> str:
    try:
        return str(Path(path).resolve())
    except OSError:
        return str(Path(path).absolute())


def _marks(values: Any) -> str:
    return ", ".join("?" for _ in values)


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")
