"""The resolved configuration of one run: a plain dict, its sorted-key JSON and its sha256.

Two spellings of the same run must give the same hash, so the configuration holds normalised
values only: the placement rewritten in one order and spelling, workload parameters merged over
the descriptor's defaults and converted to their types, balancing knobs only when set::

    {"balancing": {"enabled": false}, "kernel": "6.13", "machine": "e5-2620v4-2s",
     "params": {"init": "serial", "n": 2000, "reps": 10, "threads": 16},
     "placement": "interleave=all", "sample_rate": 1.0, "seed": 1, "thp": null,
     "workload": "dgemv"}

It is ``RunSpec.canonical()``; ``RunSpec.from_canonical()`` reads it back.
The numalab version is not part of it: a new version does not invalidate a store (the result
document records the engine version that produced each row).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any


# One encoder for every configuration: ``json.dumps`` with options builds one per call, and a
# configuration is a tree, so the check for cycles is not needed (the same text, 8 -> 6 us a run).
_ENCODER = json.JSONEncoder(sort_keys=True, separators=(",", ":"), check_circular=False)


def to_json(config: dict[str, Any]) -> str:
    return _ENCODER.encode(config)


def config_hash(config: dict[str, Any]) -> str:
    return text_hash(to_json(config))


def text_hash(text: str) -> str:
    """The hash of a configuration's ``to_json`` text (a run keeps both: encoded once)."""
    return hashlib.sha256(text.encode()).hexdigest()
