"""What a report is made from, read once from the store: the study's file, its runs as a
DataFrame, and the result documents of the runs that finished."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from numalab.exceptions import UsageError
from numalab.results.frame import load
from numalab.results.store import Store, db_path
from numalab.study.model import Report, Study


@dataclass
class ReportData:
    study: str
    db: Path
    frame: Any  # pandas.DataFrame, one row per run of the study
    source: str = ""
    source_path: str = ""
    spec: Study | None = None
    docs: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def options(self) -> Report:
        return self.spec.report if self.spec else Report()

    @property
    def cases(self) -> list[str]:
        return list(dict.fromkeys(self.frame["case"])) if len(self.frame) else []

    @property
    def labels(self) -> list[str]:
        return list(dict.fromkeys(self.frame["label"])) if len(self.frame) else []

    def finished(self):  # -> DataFrame of runs with a result document
        return self.frame[self.frame["status"].isin(["ok", "out-of-memory"])] if len(self.frame) else self.frame

    def first_seed(self, case: str, label: str) -> dict[str, Any] | None:
        """The document of the lowest seed of (case, label): maps show one repetition."""
        f = self.finished()
        rows = f[(f["case"] == case) & (f["label"] == label)].sort_values("seed")
        return self.docs.get(rows.iloc[0]["hash"]) if len(rows) else None


def resolve_target(target: str | Path, results: str | Path, study: str | None) -> tuple[Path, str, Any]:
    """``STUDY_OR_DB`` -> (database, study name, the study file or None). A study file names its
    study (and its current [report] options apply); a database or results directory holding one
    study needs no ``--study``."""
    t = Path(target)
    if t.suffix == ".toml":
        from numalab.study.load import load_study

        sf = load_study(t)
        return db_path(results), study or sf.study.name, sf
    db = db_path(t)
    with Store(db, create=False) as store:
        names = store.studies()
    if study is None:
        if len(names) != 1:
            raise UsageError(f"{db} holds {len(names)} studies; choose one with --study (expected one of: {', '.join(names) or 'none'})")
        return db, names[0], None
    if study not in names:
        raise UsageError(f"no study '{study}' in {db} (expected one of: {', '.join(names) or 'none'})")
    return db, study, None


def gather(db: Path, study: str, study_file: Any = None) -> ReportData:
    """The study's runs from the store; with ``study_file``, its text and [report] options are
    the file's (edit the report section, render again, nothing re-runs)."""
    with Store(db, create=False) as store:
        info = store.study_source(study)
        if info is None:
            raise UsageError(f"no study '{study}' in {db} (run `numalab study FILE` first; studies: {', '.join(store.studies()) or 'none'})")
        frame = load(store, study, documents=True)
    if study_file is not None:
        data = ReportData(study, db, frame, study_file.text, str(study_file.path), study_file.study)
    else:
        data = ReportData(study, db, frame, info.get("source") or "", info.get("path") or "")
        data.spec = _spec(data.source)
    if len(frame):
        for h, doc in zip(frame["hash"], frame["result"]):
            if isinstance(doc, str) and doc:
                data.docs[h] = json.loads(doc)
        data.frame = frame.drop(columns=["result"])
    return data


def _spec(source: str) -> Study | None:
    """The stored study file, for its [report] options; a file that no longer validates (an older
    format) still reports, with default options."""
    if not source:
        return None
    try:
        from numalab.study.load import parse_study

        return parse_study(source).study
    except UsageError:
        return None
