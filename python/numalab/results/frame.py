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
from numalab.results.store import Store


def load(path_or_db: str | Path | Store, study: str | None = None, documents: bool = False):  # -> pandas.DataFrame
    """Runs in a results store (a results directory, a ``numalab.db`` file or an open Store).

    ``study`` keeps one study's runs; ``documents=True`` adds the result documents as a
    ``result`` column (JSON text).
    """
    import pandas as pd

    if isinstance(path_or_db, Store):
        rows = path_or_db.rows(study, documents)
    else:
        with Store(path_or_db, create=False) as store:
            if study is not None and study not in store.studies():
                raise UsageError(f"no study '{study}' in {store.path} (studies: {', '.join(store.studies()) or 'none'})")
            rows = store.rows(study, documents)
    return pd.DataFrame([_flatten(r) for r in rows])


def _flatten(row: dict[str, Any]) -> dict[str, Any]:
    out = dict(row)
    for k, v in json.loads(row.get("params") or "{}").items():
        out[f"param_{k}"] = v
    for k, v in json.loads(row.get("balancing") or "{}").items():
        out[f"balancing_{k}"] = v
    return out


def export(df: Any, csv: str | Path | None = None, parquet: str | Path | None = None) -> list[Path]:
    """Write ``df`` as CSV and/or Parquet (Parquet needs pyarrow); return the paths written."""
    written = []
    if csv:
        df.to_csv(csv, index=False)
        written.append(Path(csv))
    if parquet:
        try:
            import pyarrow  # noqa: F401
        except ImportError:
            raise UsageError("Parquet export needs pyarrow, which is not installed: pip install pyarrow (or export --csv)") from None
        df.to_parquet(parquet, index=False)
        written.append(Path(parquet))
    return written
