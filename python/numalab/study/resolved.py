"""What expanding a study gives, whatever its kind: the runs with their configurations and their
places in tables. The sweep, the store and every kind's expansion share these two types."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from numalab.study.load import StudyFile
from numalab.study.model import Study


@dataclass(frozen=True)
class ResolvedRun:
    """One run: its configuration (canonical dict, sorted JSON, sha256) and where it sits in tables."""

    hash: str
    config: dict[str, Any]
    config_json: str
    label: str
    case: str
    role: str  # "run", or "baseline" when it is only there to compare against
    baseline_hash: str | None


@dataclass(frozen=True)
class ResolvedStudy:
    name: str
    file: StudyFile
    runs: list[ResolvedRun]

    @property
    def study(self) -> Study:
        return self.file.study
