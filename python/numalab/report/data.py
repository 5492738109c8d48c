"""What a report is made from, read once from the store: the study's file, its runs as a
DataFrame, and the result documents of the runs that finished.

The text a report shows (description, configuration) is always the stored study file that the
numbers came from; a study file given on the command line contributes only its ``[report]``
options, and must be that study's file (a different file with the same study name is refused).
Repetitions are the runs of one configuration (``repeat_group``: the configuration without its
seed), never the runs that happen to share a label: two configurations with one label become two
columns, ``label`` and ``label #2``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from numalab.exceptions import UsageError
from numalab.results.frame import load
from numalab.results.store import Store, db_path, describe_run, document_problem
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
    report_options: Report | None = None  # the given study file's [report], else the stored one's
    notes: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # runs left out, each "run HASH (case | label, seed N): what is wrong"

    @property
    def options(self) -> Report:
        if self.report_options is not None:
            return self.report_options
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
        if study_file is not None:
            other = store.same_study_file(study, study_file.path, study_file.text)
            if other:
                raise UsageError(f"{study_file.path}: the study '{study}' in {db} was run from another file ({other}); report that "
                                 f"file, or the store itself: numalab report {db} --study {study}")
        frame = load(store, study, documents=True)
    data = ReportData(study, db, frame, info.get("source") or "", info.get("path") or "")
    if study_file is not None and study_file.text == data.source:
        data.spec = study_file.study
    else:
        data.spec = _spec(data.source)
    if study_file is not None:
        data.report_options = study_file.study.report
        if study_file.text != data.source:
            data.notes.append(f"{study_file.path} has changed since its runs were stored: the configuration shown is the stored "
                              "one that produced these numbers; the report options are the file's (run the study again to update it).")
    if len(frame):
        keep = []
        for i, row in enumerate(frame[["hash", "case", "label", "seed", "status", "result"]].to_dict("records")):
            text = row["result"] if isinstance(row["result"], str) else None  # pandas gives NaN for NULL
            problem = document_problem(text, row["status"])
            if problem:
                data.skipped.append(f"{describe_run(row)}: {problem}")
                continue
            keep.append(i)
            if text:
                data.docs[row["hash"]] = json.loads(text)
        if data.skipped:
            data.notes.append(f"{len(data.skipped)} run{'s are' if len(data.skipped) > 1 else ' is'} left out of this report, "
                              f"{'their' if len(data.skipped) > 1 else 'its'} stored document damaged: " + "; ".join(data.skipped)
                              + f" (restore {db} from a copy to report {'them' if len(data.skipped) > 1 else 'it'}).")
        data.frame = _split_labels(frame.iloc[keep].drop(columns=["result"]).reset_index(drop=True), data.notes)
    return data


def _split_labels(frame: Any, notes: list[str]) -> Any:
    """One column per configuration: a label that two configurations of a case share (two
    ``[[runs]]`` with one label) becomes ``label``, ``label #2``, ... so their runs are never
    averaged as if they were repetitions."""
    groups: dict[tuple[str, str], list[str]] = {}
    labels = []
    for case, label, group in zip(frame["case"], frame["label"], frame["repeat_group"]):
        seen = groups.setdefault((case, label), [])
        if group not in seen:
            seen.append(group)
        i = seen.index(group)
        labels.append(label if i == 0 else f"{label} #{i + 1}")
    shared = sorted({label for (_, label), seen in groups.items() if len(seen) > 1})
    if shared:
        notes.append("Different configurations share the label " + ", ".join(f"'{s}'" for s in shared)
                     + "; each is shown as its own column (label #2, ...), not averaged.")
        frame = frame.copy()
        frame["label"] = labels
    return frame


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
