"""Expand a study into resolved runs: top level, then ``[[runs]]``, crossed with ``[sweep]`` and
the seeds; every value checked (machine, workload parameters, placement on that machine) before
anything runs, each error pointing at the key that set the bad value.

Each run gets two names for tables: its *case* (the row: machine when it varies, workload, and
the workload parameters that are sweep axes or set by unlabelled runs) and its *label* (the
column: the run's ``label``, else its placement, plus balancing, kernel and THP where they vary).
"""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Any, Iterable, Iterator

from numalab.exceptions import USAGE_ERRORS, UsageError
from numalab.spec import RunSpec
from numalab.spec.run import load_machine
from numalab.spec import config as config_language
from numalab.spec.balancing import label as balancing_label
from numalab.study import kinds
from numalab.study.canonical import text_hash, to_json
from numalab.study.errors import located
from numalab.study.load import StudyFile
from numalab.study.model import RunPatch, Study
from numalab.study.resolved import ResolvedRun, ResolvedStudy
from numalab.study.sweep import check_size
from numalab.workload import descriptor

FIELDS = ("machine", "workload", "placement", "balancing", "kernel", "thp")
COLUMN_FIELDS = ("placement", "balancing", "kernel", "thp")
PLACEMENT_EXAMPLES = ("default", "interleave=all", "membind=0", "preferred=0", "localalloc", "cpunodebind=0")


@dataclass
class _Point:
    """A run before resolution: raw values and the key path each came from."""

    values: dict[str, Any]
    params: dict[str, Any]
    origin: dict[str, str]
    explicit_label: str | None = None
    run_fields: set[str] = field(default_factory=set)  # column fields an unlabelled run set
    row_params: set[str] = field(default_factory=set)
    swept: set[str] = field(default_factory=set)
    seed: int = 1

    def copy(self) -> "_Point":
        return _Point(dict(self.values), dict(self.params), dict(self.origin), self.explicit_label,
                      set(self.run_fields), set(self.row_params), set(self.swept), self.seed)

    def apply(self, patch: RunPatch, prefix: str) -> None:
        for f in FIELDS:
            value = getattr(patch, f)
            if value is not None:
                self.values[f] = value
                self.origin[f] = f"{prefix}.{f}"
        for k, v in patch.params.items():
            self.params[k] = v
            self.origin[f"params.{k}"] = f"{prefix}.params.{k}"


def expand(sf: StudyFile) -> ResolvedStudy:
    """All runs of a study (deduplicated by hash, in file order), baselines added where missing."""
    s = sf.study
    if s.kind != kinds.PLACEMENT:
        return kinds.get(s.kind).expand(sf)
    _check_size(sf)
    points = _points(sf)
    resolver = _Resolver(sf)
    resolved = [(p, resolver.config(p)) for p in points]
    varying = {f for f in COLUMN_FIELDS if _varies(c[f] for _, c in resolved)}
    machines = {c["machine"] for _, c in resolved}
    named = [(p, c, _label(p, c, varying), _case(p, c, machines)) for p, c in resolved]
    _check_labels(sf, named)
    runs: dict[str, ResolvedRun] = {}
    pending_baselines: list[ResolvedRun] = []
    for p, c, label, case in named:
        run = _run(c, label, case, "run")
        if s.baseline is not None:
            bp = p.copy()
            bp.apply(s.baseline, "baseline")
            baseline = _run(resolver.config(bp), "", case, "baseline")
            run = replace(run, baseline_hash=baseline.hash)
            pending_baselines.append(baseline)
        runs.setdefault(run.hash, run)
    label = s.baseline.label if s.baseline and s.baseline.label else "baseline"
    for baseline in pending_baselines:
        if baseline.hash not in runs:
            runs[baseline.hash] = replace(baseline, label=label, baseline_hash=baseline.hash)
    return ResolvedStudy(s.name, sf, list(runs.values()))


def _varies(values: Iterable[Any]) -> bool:
    """More than one distinct value. Repetitions share their configuration's value objects (the
    resolver keeps them), so each object is encoded once, not once per run (a 200-seed study:
    5 ms of its expansion)."""
    distinct = {id(v): v for v in values}
    return len({to_json({"v": v}) for v in distinct.values()}) > 1


def sample(sf: StudyFile, n: int) -> list[ResolvedRun]:
    """The first ``n`` runs of a placement study in ``expand``'s order, without building the
    others: what ``study --dry-run`` shows of a large sweep. Which column fields vary (and so
    appear in unlabelled runs' labels) is read from the file's sweep axes and runs, plus the
    sample; baselines are not included."""
    points = list(itertools.islice(_iter_points(sf), n))
    resolver = _Resolver(sf)
    resolved = [(p, resolver.config(p)) for p in points]
    s = sf.study
    written = {f: {repr(v) for v in [getattr(s, f), *(getattr(r, f) for r in s.runs if getattr(r, f) is not None)]}
               for f in ("machine", *COLUMN_FIELDS)}
    swept = {name for name, _key, values in _axes(s) if len(values) > 1}
    varying = {f for f in COLUMN_FIELDS if f in swept or len(written[f]) > 1 or len({to_json({"v": c[f]}) for _, c in resolved}) > 1}
    machines = {c["machine"] for _, c in resolved}
    if "machine" in swept or len(written["machine"]) > 1:
        machines.add("")  # more than one machine in the whole study: cases name theirs
    return [_run(c, _label(p, c, varying), _case(p, c, machines), "run") for p, c in resolved]


def _check_size(sf: StudyFile) -> None:
    """Count the runs before making them (``sweep.check_size``): a sweep typed with an extra zero
    must not exhaust memory."""
    try:
        check_size(sf.study)
    except UsageError as e:
        raise located(sf.path, sf.text, "sweep" if _axes(sf.study) else "repetitions", str(e)) from None


def _check_labels(sf: StudyFile, named: list[tuple["_Point", dict[str, Any], str, str]]) -> None:
    """Tables average the runs of one (case, label) cell as repetitions: they must differ only in
    their seed, or two configurations would be averaged as one."""
    seen: dict[tuple[str, str], tuple[str, dict[str, Any]]] = {}
    for p, c, label, case in named:
        config = {k: v for k, v in c.items() if k != "seed"}
        where = p.origin.get("label", "runs")
        first_where, first = seen.setdefault((case, label), (where, config))
        if first != config:
            raise located(sf.path, sf.text, where, f"label '{label}' (case '{case}') is already used by {first_where} for another "
                          "configuration; runs that share a label are averaged as repetitions (give each configuration its own label)")


def _run(c: dict[str, Any], label: str, case: str, role: str) -> ResolvedRun:
    """A run without a baseline; its configuration encoded once, for its text and its hash."""
    text = to_json(c)
    return ResolvedRun(text_hash(text), c, text, label, case, role, None)


def _points(sf: StudyFile) -> list[_Point]:
    return list(_iter_points(sf))


def _iter_points(sf: StudyFile) -> Iterator[_Point]:
    """The points in expansion order, one at a time (``sample`` takes the first few of a sweep
    too large to build)."""
    s = sf.study
    base = _Point({f: getattr(s, f) for f in FIELDS}, dict(s.params), {f: f for f in FIELDS})
    base.values["npb_rows"] = bool(s.compare_npb)  # rows name their implementation when several run
    base.origin.update({f"params.{k}": f"params.{k}" for k in s.params})
    axes = _axes(s)
    points = []
    for i, patch in enumerate(s.runs or [None]):
        p = base.copy()
        if patch is not None:
            prefix = f"runs[{i}]"
            for name, _key, _values in axes:
                if (name.startswith("params.") and name[7:] in patch.params) or getattr(patch, name, None) is not None:
                    raise located(sf.path, sf.text, f"{prefix}.{name}", f"is also a sweep axis (sweep.{name}); set it in one place")
            p.apply(patch, prefix)
            p.explicit_label = patch.label
            p.origin["label"] = f"{prefix}.label"
            if patch.label is None:
                p.run_fields = {f for f in COLUMN_FIELDS if getattr(patch, f) is not None}
                p.row_params = set(patch.params)
        points.append(p)
    for p in points:
        for combo in itertools.product(*(range(len(values)) for _n, _k, values in axes)):
            q = p.copy()
            for (name, key, values), j in zip(axes, combo):
                if name.startswith("params."):
                    q.params[name[7:]] = values[j]
                    q.row_params.add(name[7:])
                else:
                    q.values[name] = values[j]
                    q.swept.add(name)
                q.origin[name] = f"{key}[{j}]"
            # The study's implementation, then those run beside it (compare_npb), each its own row.
            for i, impl in enumerate([s.npb, *s.compare_npb]):
                for seed in s.seed_list():
                    r = q.copy()
                    r.values["npb"] = impl
                    r.origin["npb"] = f"compare_npb[{i - 1}]" if i else "npb"
                    r.seed = seed
                    yield r


def _axes(s: Study) -> list[tuple[str, str, list[Any]]]:
    """(field, key path, values) per sweep axis, in a fixed order so expansion is stable."""
    axes: list[tuple[str, str, list[Any]]] = []
    for f in ("machine", "workload"):
        if getattr(s.sweep, f):
            axes.append((f, f"sweep.{f}", getattr(s.sweep, f)))
    for k, values in s.sweep.params.items():
        axes.append((f"params.{k}", f"sweep.params.{k}", values))
    for f in COLUMN_FIELDS:
        if getattr(s.sweep, f):
            axes.append((f, f"sweep.{f}", getattr(s.sweep, f)))
    return axes


def _label(p: _Point, c: dict[str, Any], varying: set[str]) -> str:
    """A labelled run keeps its label (plus the sweep axes crossed with it); an unlabelled one is
    described by the column fields it or a sweep set, and those that differ between runs."""
    if p.explicit_label:
        parts, shown = [p.explicit_label], p.swept
    else:
        parts, shown = [], p.swept | p.run_fields | varying
    # The placement as the user wrote it: "init=serial" resolves to placement default plus a
    # parameter, and the column must still say which configuration it is.
    described = dict(c, placement=" ".join(str(p.values["placement"]).split()))
    parts += [_describe(f, described[f]) for f in COLUMN_FIELDS if f in shown]
    return ", ".join(parts) or described["placement"]


def _describe(f: str, value: Any) -> str:
    if f == "placement":
        return value
    if f == "balancing":
        return "balancing " + balancing_label(value)
    if f == "thp":
        return f"thp {value or 'default'}"
    return f"kernel {value}"


def _case(p: _Point, c: dict[str, Any], machines: set[str]) -> str:
    parts = [c.get("corun") or c["workload"]]  # a co-run's row is its groups (docs/corun.md §1)
    parts += [f"{k}={c['params'][k]}" for k in sorted(p.row_params) if k in c["params"]]
    if p.origin.get("npb", "npb") != "npb" or p.values.get("npb_rows"):
        parts.append(f"[{p.values['npb']}]")
    if len(machines) > 1:
        parts.insert(0, c["machine"] + ":")
    return " ".join(parts)


# A point's values as its resolver key (``json.dumps`` with options builds an encoder per call);
# repr for the models (Balancing): a frozen dataclass's names every field.
_KEY_ENCODER = json.JSONEncoder(sort_keys=True, default=repr)


class _Resolver:
    """Point -> RunSpec -> canonical configuration. Every value is checked by the same rules as
    the CLI (``RunSpec``, the engine's ``RunSpec``); errors point at the key that set it."""

    def __init__(self, sf: StudyFile):
        self.sf = sf
        # A point's configuration and the parameters its placement set, by the point's values:
        # repetitions differ only in their seed (which the study's model has checked).
        self.kept: dict[str, tuple[dict[str, Any], list[str]]] = {}

    def fail(self, p: _Point, key: str, message: str) -> Exception:
        return located(self.sf.path, self.sf.text, p.origin.get(key, key), message)

    def config(self, p: _Point) -> dict[str, Any]:
        try:
            key = _KEY_ENCODER.encode({"values": p.values, "params": p.params})
        except (TypeError, ValueError):
            return self._config(p)[0]
        kept = self.kept.get(key)
        if kept is None:
            kept = self.kept[key] = self._config(p)
            return kept[0]
        config, moved = kept
        self._moved(p, moved)
        return {**config, "seed": p.seed}

    def _config(self, p: _Point) -> tuple[dict[str, Any], list[str]]:
        """The configuration and the workload parameters the placement set (``init=serial``)."""
        v = p.values
        for f in ("machine", "workload"):
            if not v[f]:
                raise located(self.sf.path, self.sf.text, f, f"no {f} given (set {f}, sweep.{f} or runs[i].{f})")
        try:
            spec = RunSpec.create(v["machine"], v["workload"], balancing=v["balancing"], kernel=v["kernel"], thp=v["thp"],
                                  seed=p.seed, sample_rate=self.sf.study.sample_rate, npb=v.get("npb", self.sf.study.npb))
        except USAGE_ERRORS as e:
            raise self.fail(p, "balancing", str(e)) from None
        items = self._items(p, v["placement"])
        try:
            spec = spec.with_config(v["placement"])
        except USAGE_ERRORS as e:
            raise self.fail(p, "placement", str(e)) from None
        moved = list(items.params)
        self._moved(p, moved)
        if spec.corun:
            if p.params or items.params:
                key = next(iter(p.params or items.params))
                raise self.fail(p, f"params.{key}", f"a co-run's workload parameters go inside its groups, e.g. stream*2(threads=4), not params.{key}")
            if self.sf.study.mapping_metrics:
                raise self.fail(p, "workload", f"'{v['workload']}' is a co-run, and mapping_metrics analyses one workload "
                                "(give a single workload, or set mapping_metrics = false)")
            self._check(p, spec)
            return spec.canonical(), moved
        params = self._params(p, v["workload"], {**p.params, **items.params})
        spec = spec.updated(params=params)
        self._check(p, spec)
        return self._with_analyses(spec.canonical()), moved

    @staticmethod
    def _moved(p: _Point, moved: list[str]) -> None:
        """Parameters set in the placement string point there in errors."""
        for k in moved:
            p.origin[f"params.{k}"] = p.origin["placement"]

    def _with_analyses(self, config: dict[str, Any]) -> dict[str, Any]:
        """The analyses a run adds to its document are part of its configuration (its hash and
        stored document differ), and only when asked for, so other runs keep their hash."""
        return {**config, "mapping_metrics": True} if self.sf.study.mapping_metrics else config

    def _items(self, p: _Point, text: str) -> Any:
        try:
            items = config_language.parse(text)
        except USAGE_ERRORS as e:
            raise self.fail(p, "placement", str(e)) from None
        for k in ("seed", "sample-rate"):
            if k in items.settings:
                raise self.fail(p, "placement", f"'{k}' cannot be set in a placement (use the study's seeds / sample_rate)")
        return items

    def _check(self, p: _Point, spec: RunSpec) -> None:
        """The engine's rules (nodes and CPUs that exist, knob ranges, bound threads), once per
        configuration whatever its seed."""
        try:
            load_machine(spec.machine)
        except USAGE_ERRORS as e:
            raise self.fail(p, "machine", str(e.args[0]) if e.args else str(e)) from None
        try:
            _bind(replace(spec, seed=1))
        except USAGE_ERRORS as e:
            message = str(e.args[0]) if e.args else str(e)
            key = ("balancing" if message.startswith(("--scan", "--explain", "numa_balancing")) else
                   "workload" if message.startswith("workload") else "placement")
            raise self.fail(p, key, message) from None

    def _params(self, p: _Point, workload: str, given: dict[str, Any]) -> dict[str, Any]:
        try:
            desc = _load_workload(workload)
        except USAGE_ERRORS as e:
            raise self.fail(p, "workload", str(e)) from None
        for k in given:
            if k not in desc.params and p.origin.get(f"params.{k}", "").endswith("placement"):
                raise self.fail(p, f"params.{k}", f"'{k}' is neither a placement option nor a parameter of workload {desc.name} "
                                f"(expected a placement such as {', '.join(PLACEMENT_EXAMPLES)}, or one of: {', '.join(sorted(desc.params))})")
        try:
            return descriptor.typed_params(desc, given)
        except descriptor.ParamError as e:
            raise self.fail(p, f"params.{e.key}", e.message) from None


@lru_cache(maxsize=64)
def _load_workload(name: str) -> Any:
    return descriptor.load(name)[0]


@lru_cache(maxsize=4096)
def _bind(spec: RunSpec) -> None:
    spec.bind()
