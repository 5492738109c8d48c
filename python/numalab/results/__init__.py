"""Results: the result document, derived metrics, the results store (SQLite) and its pandas view.

``load(path_or_db, study=None) -> pandas.DataFrame`` reads a store; ``numalab.results.store.Store``
writes one.
"""

from numalab.results.frame import load
from numalab.results.result import SCHEMA, Result

__all__ = ["Result", "SCHEMA", "load"]
