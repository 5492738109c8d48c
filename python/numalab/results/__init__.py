"""Results: the result document, derived metrics (and later the results store)."""

from numalab.results.result import SCHEMA, Result

__all__ = ["Result", "SCHEMA"]
