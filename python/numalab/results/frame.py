"""The store as pandas: ``load(path_or_db, study=None) -> DataFrame`` and CSV/Parquet export.

One row per run of a study, with the store's columns plus each workload parameter as
``param_<name>`` and each balancing setting as ``balancing_<name>``, so a sweep axis is a column
to group by.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from numalab.exceptions import UsageError
from numalab.results.store import Store, StoreError


def load(path_or_db: str | Path | Store, study: str | None = None, documents: bool = False):  # -> pandas.DataFrame
    """Runs in a results store (a results directory, a ``numalab.db`` file or an open Store).

    ``study`` keeps one study's runs; ``documents=True`` adds the result documents as a
    ``result`` column (JSON text).
    """
    import pandas as pd

    if isinstance(path_or_db, Store):
        rows, where = path_or_db.rows(study, documents), path_or_db.path
    else:
        with Store(path_or_db, create=False) as store:
            if study is not None and study not in store.studies():
                raise UsageError(f"no study '{study}' in {store.path} (studies: {', '.join(store.studies()) or 'none'})")
            rows, where = store.rows(study, documents), store.path
    return pd.DataFrame([_flatten(r, where) for r in rows])


def _flatten(row: dict[str, Any], where: Any) -> dict[str, Any]:
    out = dict(row)
    try:
        for k, v in json.loads(row.get("params") or "{}").items():
            out[f"param_{k}"] = v
        for k, v in json.loads(row.get("balancing") or "{}").items():
            out[f"balancing_{k}"] = v
    except (TypeError, ValueError, AttributeError):
        raise StoreError(f"{where}: database is corrupt (run {str(row.get('hash'))[:12]}: its parameters are not JSON)") from None
    return out


def export(df: Any, csv: str | Path | None = None, parquet: str | Path | None = None, store: str | Path | None = None) -> list[Path]:
    """Write ``df`` as CSV and/or Parquet (Parquet needs pyarrow); return the paths written.
    Both paths are checked before anything is written (``store``: the results store read, which
    neither may overwrite); each file appears whole or not at all."""
    from numalab.results.outfile import check_output, write_atomic

    if parquet:
        try:
            import pyarrow  # noqa: F401
        except ImportError:
            raise UsageError("Parquet export needs pyarrow, which is not installed: pip install pyarrow (or export --csv)") from None
    targets = [(opt, Path(p)) for opt, p in (("--csv", csv), ("--parquet", parquet)) if p]
    for opt, path in targets:
        writable_file(path, opt, "runs.csv" if opt == "--csv" else "runs.parquet")
        check_output(path, opt, None if store is None else Path(store))
    written = []
    for opt, path in targets:
        if opt == "--csv":
            write_atomic(path, lambda f: spreadsheet_safe(df).to_csv(f, index=False, encoding="utf-8"), opt)
        else:
            write_atomic(path, lambda f: df.to_parquet(f, index=False), opt)
        written.append(path)
    return written


# A cell starting with one of these is a formula to Excel, LibreOffice and Google Sheets
# (owasp.org, "CSV Injection"): a label "=HYPERLINK(...)" would run when the CSV is opened.
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def spreadsheet_safe(df: Any) -> Any:
    """``df`` with every text cell (and column name) that a spreadsheet would take for a formula
    prefixed with ``'``, as OWASP recommends; numbers (a negative speedup delta) stay numbers."""

    def safe(v: Any) -> Any:
        return "'" + v if isinstance(v, str) and v.startswith(_FORMULA_START) else v

    from pandas.api.types import is_numeric_dtype

    out = df.rename(columns=safe)
    for col in out.columns:
        if not is_numeric_dtype(out[col]):
            out[col] = out[col].map(safe)
    return out


def writable_file(path: Path, option: str, example: str = "runs.csv") -> None:
    """``path`` can be created or overwritten as a file: its directory exists and is writable,
    and it is not a directory itself (one clear error instead of an OSError later)."""
    import os

    parent = path.parent
    if path.is_dir():
        raise UsageError(f"{option} {path}: is a directory (give a file name, e.g. {path / example})")
    if not parent.exists():
        raise UsageError(f"{option} {path}: directory {parent} does not exist (create it first)")
    if not parent.is_dir():
        raise UsageError(f"{option} {path}: {parent} is not a directory")
    if not os.access(parent, os.W_OK | os.X_OK) or (path.exists() and not os.access(path, os.W_OK)):
        raise UsageError(f"{option} {path}: cannot write there (permission denied)")
