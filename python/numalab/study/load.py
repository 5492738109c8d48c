"""Read a study file: TOML syntax, then the pydantic models, every error located in the file."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from numalab.machine.tomlfile import load_toml
from numalab.study.errors import study_error
from numalab.study.model import Study


@dataclass(frozen=True)
class StudyFile:
    """A validated study and where it came from (errors found later point into ``text``)."""

    study: Study
    path: Path
    text: str


def load_study(path: str | Path) -> StudyFile:
    p = Path(path)
    data, text = load_toml(p)
    try:
        return StudyFile(Study.model_validate(data), p, text)
    except ValidationError as e:
        raise study_error(e, p, text, Study) from None


def parse_study(text: str, name: str = "<study>") -> StudyFile:
    """Validate study TOML given as text (tests, the Python API)."""
    import tomllib

    from numalab.exceptions import UsageError

    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise UsageError(f"{name}: malformed TOML: {e}") from None
    try:
        return StudyFile(Study.model_validate(data), Path(name), text)
    except ValidationError as e:
        raise study_error(e, Path(name), text, Study) from None
