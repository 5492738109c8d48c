"""Automatic NUMA balancing as a study key: any spelling ``numalab.spec.balancing`` reads
(``true``, ``2``, ``"on:scan-period-min-ms=100"``, ``{ enabled = true, scan_size_mb = 128 }``,
``{ numa_balancing = 2, demotion_enabled = true }``),
validated there and nowhere else."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import PlainValidator, WithJsonSchema

from numalab.exceptions import UsageError
from numalab.spec.balancing import KNOBS
from numalab.spec.balancing import Balancing as _Balancing


def parse_balancing(value: Any) -> _Balancing:
    try:
        return _Balancing.parse(value)
    except UsageError as e:
        raise ValueError(str(e)) from None


_SCHEMA = {
    "description": "Automatic NUMA balancing: true/false, a config string, or a table of the kernel's knobs.",
    "anyOf": [
        {"type": "boolean"},
        {"type": "integer", "minimum": 0, "maximum": 3},
        {"type": "string", "examples": ["off", "on", "on:scan-period-min-ms=100:scan-size-mb=128", "2:demotion-enabled"]},
        {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "enabled": {"type": "boolean"},
                "numa_balancing": {"type": ["integer", "string"], "description": "kernel.numa_balancing: 0-3 (2 = memory tiering, 3 = both)"},
                "memory_tiering": {"type": "boolean"},
                "demotion_enabled": {"type": "boolean", "description": "/sys/kernel/mm/numa/demotion_enabled"},
                "weighted_interleave_auto": {"type": "boolean", "description": "weighted interleave default weights from node bandwidth (6.16+)"},
                **{k: {"type": ["integer", "string"], "description": f"{v['help']} (kernel default {v['default']})"} for k, v in KNOBS.items()},
            },
        },
    ],
}

Balancing = Annotated[_Balancing, PlainValidator(parse_balancing), WithJsonSchema(_SCHEMA)]
