"""The text a result document is stored as: JSON, keys sorted, no spaces, encoded by orjson.

orjson encodes a study's documents (11-17 KB, a few hundred floats each) in a tenth of the time of
Python's json encoder (30-35 against 150-370 us a document), which was the largest part of a
study's overhead (bench/study_overhead.py). Its text differs from ``json.dumps(doc, sort_keys=True,
separators=(",", ":"))``, which stored documents before it, only in spelling; ``json.loads`` of
either gives equal values, and every reader of the store parses the text:

* floats: the same shortest round-trip digits, but decimal down to 1e-5 (``0.00002`` for
  ``2e-05``) and exponents without a zero pad (``1.5e-7`` for ``1.5e-07``). orjson's version is
  pinned in pyproject.toml, so the spelling of a document does not change with an install;
* characters beyond ASCII are written as UTF-8, not escaped;
* NaN and infinities, which JSON cannot spell, are written as ``null`` (json wrote ``NaN``, which
  SQLite's ``json_valid`` rejects).

A document orjson refuses (keys that are not strings, integers beyond 64 bits, objects that are
not JSON: numpy scalars, sets; dataclasses and dates too, which orjson could write but json did
not) is encoded by the json encoder, as before: the same text for the same document, and the same
TypeError for one that is not JSON at all. Enums and UUIDs, which json refused, are written as
their values.
"""

from __future__ import annotations

import json
from typing import Any

import orjson

# A document is a tree (the engine's output, plain dicts and lists), so the check for cycles is
# not needed: without it the text is the same, a fifth faster.
_FALLBACK = json.JSONEncoder(sort_keys=True, separators=(",", ":"), check_circular=False)
_OPTIONS = orjson.OPT_SORT_KEYS | orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_DATETIME


def document_text(doc: Any) -> str:
    """``doc`` as the store keeps it (the module's docstring says how it is spelled)."""
    try:
        return orjson.dumps(doc, option=_OPTIONS).decode()
    except orjson.JSONEncodeError:
        return _FALLBACK.encode(doc)
