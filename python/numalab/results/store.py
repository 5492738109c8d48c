"""The results store: one SQLite file (``numalab.db`` under the results directory), WAL mode,
written by one process (the study's client) and readable by any number of others meanwhile.

Tables:

* ``runs``: one row per configuration hash (unique): the resolved configuration as sorted JSON,
  status (``ok``, ``out-of-memory``, ``failed``), error, wall seconds, timestamps, the result
  document (JSON text) and the derived metrics as columns (``time_s``, ``local_pct``, ...;
  further metrics and ``vmstat_<counter>`` columns are added as the documents bring them);
* ``studies``: each study's name, file text and resolved run list;
* ``study_runs``: which runs belong to which study, with the table label, case, role, baseline
  hash and the speedup against that baseline. A configuration shared by two studies runs once.

The view ``results`` joins them: one row per run of a study, everything as columns.

Durability: every finished run is committed on its own (WAL + ``synchronous=NORMAL`` survives a
killed process), so a sweep killed at any point loses at most the runs still in flight. A run
is *complete* when its status is ``ok`` or ``out-of-memory`` (the model's own outcome); ``failed``
runs are tried again by the next sweep.
"""

from __future__ import annotations

import json
import re
import sqlite3
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterable

from numalab.exceptions import UsageError
from numalab.results.derived import METRIC_COLUMNS

DB_NAME = "numalab.db"
COMPLETE = ("ok", "out-of-memory")
STATUSES = ("ok", "out-of-memory", "failed")
# Columns added as documents bring new metrics or counters: plain lower-case identifiers only.
_COLUMN = re.compile(r"^[a-z][a-z0-9_]*$")

_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS runs (
    hash TEXT PRIMARY KEY,
    study TEXT NOT NULL,
    config TEXT NOT NULL,
    machine TEXT, workload TEXT, params TEXT, placement TEXT, balancing TEXT, kernel TEXT, seed INTEGER,
    status TEXT NOT NULL CHECK (status IN ({", ".join(repr(s) for s in STATUSES)})),
    error TEXT,
    wall_s REAL,
    finished_at TEXT,
    {", ".join(f"{c} REAL" for c in METRIC_COLUMNS)},
    result TEXT
);
CREATE TABLE IF NOT EXISTS studies (
    name TEXT PRIMARY KEY,
    path TEXT, source TEXT, resolved TEXT, updated_at TEXT
);
CREATE TABLE IF NOT EXISTS study_runs (
    study TEXT NOT NULL, hash TEXT NOT NULL, position INTEGER,
    label TEXT, "case" TEXT, role TEXT, baseline_hash TEXT, speedup REAL,
    PRIMARY KEY (study, hash)
);
CREATE INDEX IF NOT EXISTS study_runs_baseline ON study_runs (study, baseline_hash);
"""


def db_path(path: str | Path) -> Path:
    """A results directory (holding ``numalab.db``) or the database file itself."""
    p = Path(path)
    return p / DB_NAME if p.is_dir() or not p.suffix else p


class Store:
    """The SQLite store. Use as a context manager; one writer at a time."""

    def __init__(self, path: str | Path, create: bool = True):
        self.path = db_path(path)
        if not create and not self.path.exists():
            raise UsageError(f"{self.path}: no results store here (run `numalab study FILE --results DIR` first)")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # isolation_level=None: transactions are explicit, so each run commits exactly when written.
        self.db = sqlite3.connect(self.path, isolation_level=None, timeout=30)
        self.db.row_factory = sqlite3.Row
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")
        if create:
            self.db.executescript(_SCHEMA)
            self._view()
        self._columns = set(self._run_columns())

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        self.db.close()

    # -- schema -------------------------------------------------------------------------------

    def _run_columns(self) -> list[str]:
        return [r["name"] for r in self.db.execute("PRAGMA table_info(runs)")]

    def _view(self) -> None:
        """The ``results`` view lists every column of ``runs``; rebuilt when columns are added.
        Its ``study`` is the study the row belongs to (``runs.study`` is the one that ran it)."""
        cols = ", ".join(f"r.{c}" for c in self._run_columns() if c not in ("hash", "study"))
        self.db.execute("DROP VIEW IF EXISTS results")
        self.db.execute(
            'CREATE VIEW results AS SELECT s.study AS study, s.hash AS hash, s.position, s.label, s."case", s.role, '
            f"s.baseline_hash, s.speedup, {cols} FROM study_runs s JOIN runs r ON r.hash = s.hash"
        )

    def _ensure_columns(self, names: Iterable[str]) -> None:
        new = [n for n in names if n not in self._columns and _COLUMN.match(n)]
        for n in new:
            self.db.execute(f"ALTER TABLE runs ADD COLUMN {n} REAL")
        if new:
            self._columns |= set(new)
            self._view()

    # -- writing ------------------------------------------------------------------------------

    def register_study(self, resolved: Any) -> None:
        """Record a study and its run list; runs dropped from the file leave the study."""
        sf = resolved.file
        listing = [{"hash": r.hash, "label": r.label, "case": r.case, "role": r.role} for r in resolved.runs]
        with self._transaction():
            self.db.execute(
                "INSERT INTO studies (name, path, source, resolved, updated_at) VALUES (?, ?, ?, ?, ?) "
                "ON CONFLICT(name) DO UPDATE SET path=excluded.path, source=excluded.source, "
                "resolved=excluded.resolved, updated_at=excluded.updated_at",
                (resolved.name, str(sf.path), sf.text, json.dumps(listing), _now()),
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

    def complete_hashes(self, hashes: Iterable[str] | None = None) -> set[str]:
        rows = self.db.execute(f"SELECT hash FROM runs WHERE status IN ({_marks(COMPLETE)})", COMPLETE)
        done = {r["hash"] for r in rows}
        return done if hashes is None else done & set(hashes)

    def write(self, study: str, run: Any, outcome: dict[str, Any]) -> None:
        """Store one finished run (``run``: a ResolvedRun; ``outcome``: worker.run_config's)."""
        cols = outcome.get("columns") or {}
        self._ensure_columns(cols)
        c = run.config
        row = {
            "hash": run.hash,
            "study": study,
            "config": run.config_json,
            "machine": c["machine"],
            "workload": c["workload"],
            "params": json.dumps(c["params"], sort_keys=True),
            "placement": c["placement"],
            "balancing": json.dumps(c["balancing"], sort_keys=True),
            "kernel": c["kernel"],
            "seed": c["seed"],
            "status": outcome["status"],
            "error": outcome.get("error"),
            "wall_s": outcome.get("wall_s"),
            "finished_at": _now(),
            "result": outcome.get("result"),
            **{k: v for k, v in cols.items() if k in self._columns},
        }
        names = ", ".join(row)
        with self._transaction():
            # REPLACE: a failed run tried again overwrites its earlier row.
            self.db.execute(f"INSERT OR REPLACE INTO runs ({names}) VALUES ({_marks(row)})", tuple(row.values()))
            self._update_speedups(study, run.hash)

    def _update_speedups(self, study: str, hash_: str | None = None) -> None:
        """speedup = time(baseline) / time(run), for this run and the runs it is the baseline of."""
        where = "study = ?" + ("" if hash_ is None else " AND (hash = ? OR baseline_hash = ?)")
        args: tuple[Any, ...] = (study,) if hash_ is None else (study, hash_, hash_)
        self.db.execute(
            "UPDATE study_runs SET speedup = ("
            "SELECT b.time_s / r.time_s FROM runs r, runs b WHERE r.hash = study_runs.hash AND b.hash = study_runs.baseline_hash "
            "AND r.status = 'ok' AND b.status = 'ok' AND r.time_s > 0) WHERE " + where,
            args,
        )

    def _transaction(self) -> "_Tx":
        return _Tx(self.db)

    # -- reading ------------------------------------------------------------------------------

    def studies(self) -> list[str]:
        return [r["name"] for r in self.db.execute("SELECT name FROM studies ORDER BY name")]

    def study_source(self, name: str) -> dict[str, Any] | None:
        row = self.db.execute("SELECT * FROM studies WHERE name = ?", (name,)).fetchone()
        return dict(row) if row else None

    def rows(self, study: str | None = None, documents: bool = False) -> list[dict[str, Any]]:
        """Rows of the ``results`` view (one per run of a study), in study order."""
        cols = "*" if documents else ", ".join(c for c in self._view_columns() if c != "result")
        sql = f"SELECT {cols} FROM results" + (" WHERE study = ?" if study else "") + " ORDER BY study, position"
        return [dict(r) for r in self.db.execute(sql, (study,) if study else ())]

    def _view_columns(self) -> list[str]:
        return [f'"{d[0]}"' if d[0] == "case" else d[0] for d in self.db.execute("SELECT * FROM results LIMIT 0").description]

    def find(self, prefix: str) -> dict[str, Any]:
        """The run whose hash starts with ``prefix`` (at least 4 characters, unambiguous)."""
        if len(prefix) < 4 or not re.fullmatch(r"[0-9a-f]+", prefix):
            raise UsageError(f"'{prefix}' is not a run hash (expected at least 4 hex digits, as `numalab results list` shows)")
        rows = self.db.execute("SELECT * FROM runs WHERE hash LIKE ? LIMIT 3", (prefix + "%",)).fetchall()
        if not rows:
            raise UsageError(f"no run with hash {prefix}... in {self.path}")
        if len(rows) > 1:
            raise UsageError(f"hash {prefix}... is ambiguous ({', '.join(r['hash'][:12] for r in rows)}, ...); give more digits")
        return dict(rows[0])


class _Tx:
    """``BEGIN IMMEDIATE`` ... ``COMMIT`` (rolled back on error)."""

    def __init__(self, db: sqlite3.Connection):
        self.db = db

    def __enter__(self) -> None:
        self.db.execute("BEGIN IMMEDIATE")

    def __exit__(self, kind: Any, *exc: Any) -> None:
        self.db.execute("ROLLBACK" if kind else "COMMIT")


def _marks(values: Any) -> str:
    return ", ".join("?" for _ in values)


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")
