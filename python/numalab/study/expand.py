"""Expand a study into resolved runs: top level, then ``[[runs]]``, crossed with ``[sweep]`` and
the seeds; every value checked (machine, workload parameters, placement on that machine) before
anything runs, each error pointing at the key that set the bad value.

Each run gets two names for tables: its *case* (the row: machine when it varies, workload, and
the workload parameters that are sweep axes or set by unlabelled runs) and its *label* (the
column: the run's ``label``, else its placement, plus balancing, kernel and THP where they vary).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from pydantic import ValidationError

from numalab.exceptions import USAGE_ERRORS
from numalab.placement import parse_config
from numalab.study import balancing as bal
from numalab.study.canonical import config_hash, placement_string, to_json
from numalab.study.errors import located
from numalab.study.load import StudyFile
from numalab.study.model import RunPatch, Study

FIELDS = ("machine", "workload", "placement", "balancing", "kernel", "thp")
COLUMN_FIELDS = ("placement", "balancing", "kernel", "thp")
PLACEMENT_EXAMPLES = ("default", "interleave=all", "membind=0", "preferred=0", "localalloc", "cpunodebind=0")


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
    points = _points(sf)
    resolver = _Resolver(sf)
    resolved = [(p, resolver.config(p)) for p in points]
    varying = {f for f in COLUMN_FIELDS if len({to_json({"v": c[f]}) for _, c in resolved}) > 1}
    machines = {c["machine"] for _, c in resolved}
    runs: dict[str, ResolvedRun] = {}
    pending_baselines: list[tuple[_Point, dict[str, Any], str]] = []
    for p, c in resolved:
        h = config_hash(c)
        b_hash = None
        if s.baseline is not None:
            bp = p.copy()
            bp.apply(s.baseline, "baseline")
            bc = resolver.config(bp)
            b_hash = config_hash(bc)
            pending_baselines.append((bp, bc, _case(p, c, machines)))
        runs.setdefault(h, _run(c, h, _label(p, c, varying), _case(p, c, machines), "run", b_hash))
    for bp, bc, case in pending_baselines:
        h = config_hash(bc)
        label = s.baseline.label if s.baseline and s.baseline.label else "baseline"
        runs.setdefault(h, _run(bc, h, label, case, "baseline", h))
    return ResolvedStudy(s.name, sf, list(runs.values()))


def _run(c: dict[str, Any], h: str, label: str, case: str, role: str, b_hash: str | None) -> ResolvedRun:
    return ResolvedRun(h, c, to_json(c), label, case, role, b_hash)


def _points(sf: StudyFile) -> list[_Point]:
    s = sf.study
    base = _Point({f: getattr(s, f) for f in FIELDS}, dict(s.params), {f: f for f in FIELDS})
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
            if patch.label is None:
                p.run_fields = {f for f in COLUMN_FIELDS if getattr(patch, f) is not None}
                p.row_params = set(patch.params)
        points.append(p)
    out = []
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
            for seed in s.seed_list():
                r = q.copy()
                r.seed = seed
                out.append(r)
    return out


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
        return "balancing " + bal.label(value)
    if f == "thp":
        return f"thp {'always' if value else 'never' if value is False else 'default'}"
    return f"kernel {value}"


def _case(p: _Point, c: dict[str, Any], machines: set[str]) -> str:
    parts = [c["workload"]]
    parts += [f"{k}={c['params'][k]}" for k in sorted(p.row_params) if k in c["params"]]
    if len(machines) > 1:
        parts.insert(0, c["machine"] + ":")
    return " ".join(parts)


class _Resolver:
    """Point -> canonical configuration, checking each value once (results are cached)."""

    def __init__(self, sf: StudyFile):
        self.sf = sf
        self.checked: set[tuple[str, str]] = set()

    def fail(self, p: _Point, key: str, message: str) -> Exception:
        return located(self.sf.path, self.sf.text, p.origin.get(key, key), message)

    def config(self, p: _Point) -> dict[str, Any]:
        v = p.values
        for f in ("machine", "workload"):
            if not v[f]:
                raise located(self.sf.path, self.sf.text, f, f"no {f} given (set {f}, sweep.{f} or runs[i].{f})")
        try:
            opts, place_params, items = parse_config(v["placement"])
        except USAGE_ERRORS as e:
            raise self.fail(p, "placement", str(e)) from None
        params = dict(p.params)
        for k, value in place_params.items():
            params[k] = value
            p.origin[f"params.{k}"] = p.origin["placement"]
        balancing, kernel, thp = v["balancing"].resolved(), v["kernel"], v["thp"]
        balancing, kernel, thp = self._settings(p, items, balancing, kernel, thp)
        self._placement(p, v["machine"], v["placement"], opts)
        return {
            "machine": v["machine"],
            "workload": v["workload"],
            "params": self._params(p, v["workload"], params),
            "placement": placement_string(opts),
            "balancing": balancing,
            "kernel": kernel,
            "thp": None if thp is None else thp == "always",
            "sample_rate": self.sf.study.sample_rate,
            "seed": p.seed,
        }

    def _settings(self, p: _Point, items: dict[str, str], balancing: dict[str, Any], kernel: str, thp: str | None):
        """Settings written inside a placement string (``interleave=all:balancing``)."""
        knob_items = [f"{k}={v}" for k, v in items.items() if k == "balancing" or k.startswith("scan-")]
        if knob_items:
            from numalab.study.balancing import Balancing

            try:
                balancing = Balancing.model_validate({**balancing, **bal.parse_items(":".join(knob_items))}).resolved()
            except ValidationError as e:
                raise self.fail(p, "placement", str(e.errors()[0].get("ctx", {}).get("error", e.errors()[0]["msg"]))) from None
            except ValueError as e:
                raise self.fail(p, "placement", str(e)) from None
        for k, value in items.items():
            if k == "kernel":
                kernel = value
            elif k == "thp":
                thp = value
            elif k in ("seed", "sample-rate"):
                raise self.fail(p, "placement", f"'{k}' cannot be set in a placement (use the study's seeds / sample_rate)")
            elif k != "balancing" and not k.startswith("scan-"):
                # Anything else would be dropped from the configuration (and its hash): refuse it.
                raise self.fail(p, "placement", f"setting '{k}' is not accepted in a study placement (expected: balancing, scan-*, kernel, thp)")
        from numalab.runner.sim import KERNELS

        if kernel not in KERNELS:
            raise self.fail(p, "placement", f"kernel '{kernel}' is not accepted (expected one of: {', '.join(KERNELS)})")
        if thp not in (None, "always", "never"):
            raise self.fail(p, "placement", f"thp '{thp}' is not accepted (expected one of: always, never)")
        return balancing, kernel, thp

    def _placement(self, p: _Point, machine: str, text: str, opts: Any) -> None:
        """The placement's nodes and CPUs exist on the machine (checked once per pair)."""
        if (machine, text) in self.checked:
            return
        try:
            m = _load_machine(machine)
        except USAGE_ERRORS as e:
            raise self.fail(p, "machine", str(e)) from None
        from numalab.placement import resolve

        try:
            resolve(opts, m)
        except USAGE_ERRORS as e:
            raise self.fail(p, "placement", str(e)) from None
        self.checked.add((machine, text))

    def _params(self, p: _Point, workload: str, given: dict[str, Any]) -> dict[str, Any]:
        try:
            desc = _load_workload(workload)
        except USAGE_ERRORS as e:
            raise self.fail(p, "workload", str(e)) from None
        params = dict(desc.params)
        for k, value in given.items():
            if k not in params and p.origin.get(f"params.{k}", "").endswith("placement"):
                raise self.fail(p, f"params.{k}", f"'{k}' is neither a placement option nor a parameter of workload {desc.name} "
                                f"(expected a placement such as {', '.join(PLACEMENT_EXAMPLES)}, or one of: {', '.join(sorted(params))})")
            if k not in params:
                raise self.fail(p, f"params.{k}", f"workload {desc.name} has no parameter '{k}' (expected one of: {', '.join(sorted(params))})")
            params[k] = _coerce(value, params[k])
            if isinstance(params[k], str) and isinstance(desc.params[k], (int, float)) and not isinstance(desc.params[k], bool):
                raise self.fail(p, f"params.{k}", f"'{value}' is not a number (workload {desc.name}, {k} = {desc.params[k]!r} by default)")
            allowed = desc.choices.get(k)
            if allowed is not None and params[k] not in allowed:
                raise self.fail(p, f"params.{k}", f"{params[k]!r} is not accepted (expected one of: {', '.join(map(str, allowed))})")
        try:
            _check_workload(workload, to_json(params))
        except USAGE_ERRORS as e:
            raise self.fail(p, "workload", str(e)) from None
        return dict(sorted(params.items()))


def _coerce(value: Any, default: Any) -> Any:
    """Parameters from placement strings are text; give them the default's type."""
    if not isinstance(value, str) or isinstance(default, str):
        return float(value) if isinstance(default, float) and isinstance(value, int) and not isinstance(value, bool) else value
    if isinstance(default, bool):
        return value.lower() in ("1", "true", "yes", "on")
    for kind in (int, float):
        if isinstance(default, kind):
            try:
                return kind(value)
            except ValueError:
                return value
    return value


@lru_cache(maxsize=64)
def _load_machine(name: str) -> Any:
    from numalab import machine

    return machine.load(name)


@lru_cache(maxsize=64)
def _load_workload(name: str) -> Any:
    from numalab.workload import descriptor

    return descriptor.load(name)[0]


@lru_cache(maxsize=1024)
def _check_workload(name: str, params_json: str) -> None:
    import json

    from numalab.workload import descriptor

    descriptor.resolve(name, json.loads(params_json))
