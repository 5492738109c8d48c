"""The resolved configuration of one run: a plain dict, its sorted-key JSON and its sha256.

Two spellings of the same run must give the same hash, so the configuration holds normalised
values only: the placement rewritten in one order and spelling, workload parameters merged over
the descriptor's defaults and converted to their types, balancing knobs only when set::

    {"balancing": {"enabled": false}, "kernel": "6.13", "machine": "e5-2620v4-2s",
     "params": {"init": "serial", "n": 2000, "reps": 10, "threads": 16},
     "placement": "interleave=all", "sample_rate": 1.0, "seed": 1, "thp": null,
     "workload": "dgemv"}

The numalab version is not part of it: a new version does not invalidate a store (the result
document records the engine version that produced each row).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import fields
from typing import Any

from numalab.placement import PlacementOptions
from numalab.study import balancing as bal

_DEFAULTS = PlacementOptions()


def placement_string(opts: PlacementOptions) -> str:
    """The options in a fixed order and numactl's spelling; ``default`` when nothing is set."""
    items = []
    for f in fields(PlacementOptions):
        value = getattr(opts, f.name)
        if f.name == "weights" or value == getattr(_DEFAULTS, f.name):
            continue
        key = f.name.replace("_", "-")
        items.append(key if value is True else f"{key}={str(value).strip()}")
    return ":".join(items) or "default"


def to_json(config: dict[str, Any]) -> str:
    return json.dumps(config, sort_keys=True, separators=(",", ":"))


def config_hash(config: dict[str, Any]) -> str:
    return hashlib.sha256(to_json(config).encode()).hexdigest()


def engine_config_string(config: dict[str, Any]) -> str:
    """What the worker hands to ``placement.parse_config``: the placement with the balancing items
    appended, so balancing reaches the simulator the same way ``numalab compare`` passes it."""
    return ":".join([config["placement"], *bal.config_items(config["balancing"])])
