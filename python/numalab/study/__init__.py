"""Studies: declarative study files (pydantic), their expansion into resolved runs, and the sweep
that executes them (local worker processes, or a Dask cluster) into the results store.

``load_study(path)`` validates a file; ``expand(study_file)`` gives the runs, each with its
canonical configuration and sha256; ``numalab.study.sweep.run_study`` executes them.
"""

from numalab.study.expand import expand
from numalab.study.load import StudyFile, load_study, parse_study
from numalab.study.model import Study, json_schema
from numalab.study.resolved import ResolvedRun, ResolvedStudy

__all__ = ["ResolvedRun", "ResolvedStudy", "Study", "StudyFile", "expand", "json_schema", "load_study", "parse_study"]
