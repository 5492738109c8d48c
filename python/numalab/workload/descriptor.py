"""Workload descriptors: what a program does to memory, phase by phase (docs/workloads.md).

A descriptor is a TOML file (the library is in ``library/``; users pass their own with
``--workload path.toml``)::

    name = "dgemv"
    description = "y = A x ..."            # one line
    source = "where the structure comes from"

    [params]                               # every parameter with its default
    n = 20000
    init = "parallel"
    threads = 16                           # the engine needs `threads` (per process)
    copies = 1                             # optional: identical single-program processes

    [choices]                              # optional: allowed values of a parameter
    init = ["serial", "parallel"]

    [minimum]                              # optional: smallest accepted value of a number
    n = 1

    [classes.A]                            # optional: values selected by the `class` parameter
    n = 10000

    [derived]                              # optional: names computed from parameters, in order
    rows_per_thread = "n // threads"

    [[regions]]                            # one allocation (mmap) each
    name = "A"
    bytes = "8 * n * n"                    # expressions over params (see expr.py)
    planes = "n"                           # units of the slowest dimension (partitions split these)
    thp = false                            # 2 MiB pages
    policy = "interleave=all"              # optional per-region policy, as mbind would set it
    per_thread = false                     # bytes is per thread; each thread owns its slice
    alloc = "malloc"                       # optional: static | malloc | calloc | mmap (how the program gets it)
    alloc_by = "master"                    # master | each-thread | a thread index (0 = the main thread)
    alloc_chunks = "n"                     # allocations of bytes / alloc_chunks each (one per row, say)
    alloc_freed = false                    # freed before the first phase (a scratch buffer no phase uses)
    file = false                           # a file mapping: pages from the page cache, read around each fault
    madvise = "random"                     # file mappings only: MADV_RANDOM (no read-around); default "normal"; or an expression giving one
    only = ["rwcp-2.3-c"]                  # optional: the versions that have this region (accesses to it
                                           # are dropped under the others)

    [[phases]]
    name = "mult"
    cycles = "2 * n * n / 4"               # compute cycles of the phase, all threads together
    instructions = "3 * n * n"             # optional: instructions, all threads together (MAPKI)
    chain = "n * n"                        # optional: dependent FP adds on a reduction's chain, all threads
                                           # together (docs/contention.md §4); cite the loop
    sync = "barrier"                       # barrier | none | pipeline (pipeline_steps = K)
    access = [{ region = "A", pattern = "block", rd = 1.0 }]

    program = [{ phases = ["init"] }, { phases = ["mult"], repeat = "reps", timed = true }]   # top-level key
                                           # timed: inside the program's own timer (what it reports)

    version = "3.4.2"                      # optional: the release of the benchmark the text follows
    [versions."3.3.1"]                     # another release: its description, source, derived names
    derived = { kj_rows = "1" }
    [versions."rwcp-2.3-c".regions.A]      # another implementation's allocation of a region (size, split,
    alloc = "malloc"                       # alloc keys) and the source line that allocates and first writes it
    first_write = "NPB2.3-omp-C/MG/mg.c: main, line 208: ..."

Access patterns (each thread's share of a region; ``rd``/``wr`` are DRAM bytes read/written per
region byte swept, write-allocate included by the author): ``block`` (OpenMP static over planes),
``stencil`` (block plus ``halo`` planes of each neighbour), ``transpose`` (the thread's static
share of every plane), ``shared`` (every thread sweeps the whole region; ``rd``/``wr`` are then the share of each
thread's sweep that reaches DRAM, in [0, 1]), ``master`` (thread 0
sweeps it all), ``private`` (= block), ``dynamic`` (chunks of ``chunk`` planes shuffled each time
and dealt round-robin), ``gather``/``scatter`` (``count`` random 64-byte lines per thread; ``rd``
and ``wr`` are per line). ``rows`` makes a static split (block, private, stencil) divide
``planes x rows`` units, as ``collapse(2)`` over (plane, row) does. ``passes`` repeats a sweep. The first *write* to a page places it.

Allocation (docs/allocation.md §3.5). Without ``alloc`` a region is untouched until its first
write, as a static array (``alloc = "static"`` says so explicitly). ``malloc`` and ``calloc`` go
through glibc's allocator as the engine models it (``crates/numalab-sim/src/malloc.rs``): each
chunk's header is written by the allocating thread at allocation time, below the mmap threshold
(128 KiB, raised by frees up to 32 MiB) on the ``brk`` heap for the main thread and in a per-thread
arena for the others, above it in a mapping of its own (only its first page written); ``calloc``
clears memory that is not fresh. ``mmap`` writes nothing. ``alloc_by = "each-thread"`` gives each
thread its ``schedule(static)`` share of the chunks. A region allocated in ``alloc_chunks`` pieces
spans its chunks with their headers, so it may be a page or so longer than ``bytes``. At most
``MAX_CHUNKS`` (2^22) allocations per region; ``address`` only with ``static`` or ``mmap``.

Caches: ``rd``/``wr`` are the traffic when the access's re-use misses; an optional
``cached = { rd = 1.0, wr = 0.0, window = "2 * 8 * n * n", shared = false }`` gives the traffic
when it hits and the re-use window (bytes the thread touches between two uses of a line; with
``shared``, all the process's threads under one last-level cache together). The engine takes the
share that misses from the capacity each thread gets of its caches on the machine it runs on
(docs/contention.md §4.1), so the machine, thread count and class change the traffic.

Bounds. A descriptor is code from strangers, so everything it can make numalab compute is
bounded, and a descriptor beyond a bound is refused with the key, the value and the bound before
anything runs (docs/workloads.md §1.1):

- expressions (expr.py): numbers only in arithmetic, every value finite with ``|x| <= 2^63``,
  at most 1,000 characters and 64 operators deep; the file at most 16 MiB, tables and arrays
  at most 64 deep (machine/tomlfile.py);
- at most ``MAX_REGIONS`` (1,024) regions, ``MAX_PHASES`` (1,024) phases, ``MAX_ACCESSES`` (64)
  accesses per phase and ``MAX_STEPS`` (1,024) program steps;
- ``threads`` and ``copies`` at most ``MAX_THREADS`` (16,384, the engine's limit over all processes);
- a region's ``bytes`` (all threads together) and ``address + bytes`` at most ``MAX_ADDRESS``
  (2^56, the user address space of x86-64 with five-level paging);
- a gather/scatter ``count`` at most ``MAX_COUNT`` (2^40 lines per thread), ``passes`` at most
  ``MAX_PASSES`` (2^20), ``pipeline_steps``, ``halo``, ``chunk`` and ``rows`` at most 2^40;
- the engine then estimates the run from the resolved workload before it starts
  (``crates/numalab-sim/src/footprint.rs``): its own memory, threads (at most 64 per CPU), page
  visits, and, up to where the run would end out of memory, at most 2^22 phase executions per
  process (repeats included) and 2^44 compute cycles per thread (about two simulated hours at
  2.5 GHz; the engine's cost grows with simulated time), and refuses a run beyond them.
"""

from __future__ import annotations

import copy
import datetime
import math
import re
from pathlib import Path
from typing import Any, Mapping, Union

from pydantic import BaseModel, ConfigDict, Field, StrictBool, ValidationError

from numalab.exceptions import UsageError
from numalab.machine.tomlfile import load_toml, where
from numalab.workload.expr import MAX_VALUE, evaluate

LIBRARY = Path(__file__).parent / "library"

Expr = Union[int, float, str]
PATTERNS = ("block", "stencil", "transpose", "shared", "master", "private", "dynamic", "gather", "scatter")
#: Every thread of a ``shared`` sweep reads the whole region, so its ``rd``/``wr`` is the share of
#: each thread's sweep that reaches DRAM (the rest is found in a cache another thread filled, as
#: CG's ``shared_rd``): at most one DRAM transfer per thread and byte (docs/workloads.md §1).
SHARED_FRACTION_MAX = 1.0

# Bounds on what a descriptor may ask for (the docstring above says why each is where it is).
MAX_REGIONS = 1024
MAX_PHASES = 1024
MAX_ACCESSES = 64
MAX_STEPS = 1024
MAX_THREADS = 1 << 14
#: x86-64 user address space with five-level paging (arch/x86/include/asm/page_64_types.h:
#: TASK_SIZE_MAX, 2^56 less a page).
MAX_ADDRESS = 1 << 56
MAX_COUNT = 1 << 40
MAX_PASSES = 1 << 20
MAX_SMALL = 1 << 40  # pipeline_steps, halo, chunk, rows
#: Allocations per region (crates/numalab-sim/src/malloc.rs: MAX_CHUNKS).
MAX_CHUNKS = 1 << 22
ALLOC_KINDS = ("static", "malloc", "calloc", "mmap")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class CachedDesc(_Strict):
    """DRAM traffic when the access's re-use hits in cache, and its re-use window (docs/contention.md §4.1)."""

    rd: Expr = 0.0
    wr: Expr = 0.0
    window: Expr
    shared: Expr = False


class AccessDesc(_Strict):
    region: str
    pattern: str
    rd: Expr = 0.0
    wr: Expr = 0.0
    halo: Expr = 1
    chunk: Expr = 1
    rows: Expr = 1
    count: Expr = 0
    passes: Expr = 1
    cached: CachedDesc | None = None


class PhaseDesc(_Strict):
    name: str
    cycles: Expr = 0
    instructions: Expr | None = None
    chain: Expr | None = None
    mlp: Expr | None = None
    sync: Expr = "barrier"
    pipeline_steps: Expr = 1
    access: list[AccessDesc] = Field(default_factory=list)


class RegionDesc(_Strict):
    name: str
    bytes: Expr
    planes: Expr | None = None
    thp: Expr = False
    policy: str | None = None
    per_thread: Expr = False
    address: Expr | None = None
    alloc: Expr | None = None
    alloc_by: Expr | None = None
    alloc_chunks: Expr | None = None
    alloc_freed: Expr | None = None
    #: A file mapping (docs/allocation.md §3.6) and its madvise advice (normal or random).
    file: Expr = False
    madvise: str | None = None
    #: Where the program's source allocates the region and which loop first writes each page:
    #: ``file: function, line N: ...`` (docs/workloads.md §4.1.1).
    first_write: str | None = None
    #: The versions (releases or implementations) that have this region; None: every one.
    only: list[str] | None = None


class RegionPatch(_Strict):
    """What another implementation changes in a region: its size and split, how the program
    allocates it, and the citation of the allocation and the first writing loop."""

    bytes: Expr | None = None
    planes: Expr | None = None
    alloc: Expr | None = None
    alloc_by: Expr | None = None
    alloc_chunks: Expr | None = None
    alloc_freed: Expr | None = None
    first_write: str | None = None


class StepDesc(_Strict):
    phases: list[str]
    repeat: Expr = 1
    # Inside the program's own timer (docs/workloads.md §1.2): what the program reports as its time.
    timed: StrictBool = False


class VersionDesc(_Strict):
    """What another release or implementation of the same benchmark changes: its description and
    source, the derived names whose value differs, and its regions' allocation and first-write
    citations (docs/workloads.md §4.1, §4.1.1)."""

    description: str | None = None
    source: str | None = None
    derived: dict[str, str] = Field(default_factory=dict)
    regions: dict[str, RegionPatch] = Field(default_factory=dict)
    #: The implementation's own program where its steps or timed region differ (its main differs).
    program: list["StepDesc"] | None = None


class WorkloadDesc(_Strict):
    name: str
    description: str = ""
    source: str = ""
    version: str | None = None
    versions: dict[str, VersionDesc] = Field(default_factory=dict)
    params: dict[str, Any] = Field(default_factory=dict)
    choices: dict[str, list[Any]] = Field(default_factory=dict)
    minimum: dict[str, Union[int, float]] = Field(default_factory=dict)
    classes: dict[str, dict[str, Any]] = Field(default_factory=dict)
    derived: dict[str, str] = Field(default_factory=dict)
    regions: list[RegionDesc]
    phases: list[PhaseDesc]
    program: list[StepDesc]
    # Ranges of estimated numbers, read by `numalab sensitivity` (python/numalab/study/uncertainty.py).
    estimates: dict[str, Any] = Field(default_factory=dict)


def library_names() -> list[str]:
    return sorted(p.stem for p in LIBRARY.glob("*.toml"))


def find(name_or_path: str) -> Path:
    """A library name (``cg``) or a path to a descriptor file."""
    if name_or_path.endswith(".toml") or "/" in name_or_path:
        p = Path(name_or_path)
        if not p.is_file():
            raise UsageError(f"workload file {p} does not exist")
        return p
    p = LIBRARY / f"{name_or_path}.toml"
    if not p.is_file():
        import difflib

        close = difflib.get_close_matches(name_or_path, library_names(), n=1, cutoff=0.5)
        hint = f"; did you mean {close[0]}?" if close else ""
        raise UsageError(
            f"unknown workload '{name_or_path}' (known: {', '.join(library_names())}, or a path to a .toml descriptor){hint}"
        )
    return p


#: Pydantic's names of union members in an error's location (``bytes.int``): not keys of the file.
_UNION_TAGS = {"int", "float", "str", "bool"}


def load(name_or_path: str) -> tuple[WorkloadDesc, Path, str]:
    path = find(name_or_path)
    data, text = load_toml(path)
    try:
        desc = WorkloadDesc.model_validate(data)
    except ValidationError as e:
        err = e.errors()[0]
        loc = [p for p in err["loc"] if p not in _UNION_TAGS]
        key = ".".join(f"[{p}]" if isinstance(p, int) else str(p) for p in loc).replace(".[", "[")
        raise UsageError(f"{where(path, text, key)}: {key}: {_message(err)}") from None
    for key, items, bound in (("regions", desc.regions, MAX_REGIONS), ("phases", desc.phases, MAX_PHASES), ("program", desc.program, MAX_STEPS)):
        if len(items) > bound:
            raise UsageError(f"{where(path, text, f'{key}[{bound}]')}: {key}: {len(items)} entries; a descriptor may have at most {bound}")
    for i, p in enumerate(desc.phases):
        if len(p.access) > MAX_ACCESSES:
            k = f"phases[{i}].access"
            raise UsageError(f"{where(path, text, k)}: {k}: {len(p.access)} accesses; a phase may have at most {MAX_ACCESSES}")
    return desc, path, text


def _message(err: Mapping[str, Any]) -> str:
    """Pydantic's message, or what was expected when the file gave a TOML value of another kind."""
    value = err.get("input")
    if isinstance(value, (datetime.date, datetime.time)):
        return f"a date or time ({value.isoformat()}) is not accepted here; expected a number, a truth value or an expression"
    return err["msg"]


def versions(desc: WorkloadDesc) -> list[str]:
    """The releases a descriptor describes, its own first (empty: a single, unnamed release)."""
    return [desc.version, *desc.versions] if desc.version else []


def with_version(desc: WorkloadDesc, version: str | None) -> WorkloadDesc:
    """The descriptor as release or implementation ``version`` of its benchmark: the base text with
    that version's description, source, derived names and region patches in place of the base's,
    and without the regions (and their accesses) of other implementations (``only``)."""
    if not desc.version or version is None or version == desc.version:
        return _only(desc, desc.version)
    if version not in desc.versions:
        raise UsageError(f"workload {desc.name}: no version '{version}' (versions: {', '.join(versions(desc))})")
    v = desc.versions[version]
    derived = {**desc.derived, **v.derived}  # overridden names keep their place, so later names see them
    names = [r.name for r in desc.regions]
    for name in v.regions:
        if name not in names:
            raise UsageError(f"workload {desc.name}: versions.{version}.regions.{name}: no region '{name}' (regions: {', '.join(names)})")
    regions = [
        r.model_copy(update=v.regions[r.name].model_dump(exclude_none=True)) if r.name in v.regions else r
        for r in desc.regions
    ]
    return _only(desc.model_copy(update={
        "description": v.description if v.description is not None else desc.description,
        "source": v.source if v.source is not None else desc.source,
        "derived": derived,
        "regions": regions,
        "program": v.program if v.program is not None else desc.program,
        "version": version,
    }), version)


def _only(desc: WorkloadDesc, version: str | None) -> WorkloadDesc:
    """``desc`` without the regions other implementations alone have, nor the accesses to them."""
    known = {v for v in (desc.version, *desc.versions) if v is not None}
    for r in desc.regions:
        unknown = [v for v in r.only or [] if v not in known]
        if unknown:
            raise UsageError(f"workload {desc.name}: region '{r.name}': only names '{unknown[0]}', which is not one of its versions ({', '.join(sorted(known)) or 'none'})")
    gone = {r.name for r in desc.regions if r.only is not None and version not in r.only}
    if not gone:
        return desc
    phases = [p.model_copy(update={"access": [a for a in p.access if a.region not in gone]}) for p in desc.phases]
    return desc.model_copy(update={"regions": [r for r in desc.regions if r.name not in gone], "phases": phases})


def parameters(desc: WorkloadDesc) -> dict[str, Any]:
    """Parameters and their defaults (for --help and for validating overrides)."""
    return dict(desc.params)


def resolve(name_or_path: str, overrides: dict[str, Any] | None = None, version: str | None = None) -> dict[str, Any]:
    """Resolve a descriptor with parameter overrides into the engine's plain workload JSON.
    ``version`` picks a release of a benchmark whose descriptor has several (``version`` and
    ``[versions.X]``); descriptors of a single release ignore it."""
    desc, path, text = load(name_or_path)
    desc = with_version(desc, version)
    env = _params(desc, overrides or {}, path)
    R = _Resolver(desc, env, path, text)
    return R.workload()


class ParamError(UsageError):
    """A workload parameter is wrong; ``key`` names it (studies point at the key that set it)."""

    def __init__(self, key: str, message: str):
        super().__init__(message)
        self.key, self.message = key, message

    def __reduce__(self):  # keep ``key`` when a worker process sends it back
        return type(self), (self.key, self.message)


def typed_params(desc: WorkloadDesc, given: dict[str, Any]) -> dict[str, Any]:
    """Every parameter of ``desc`` (defaults, then ``given``), each of its default's type, with
    ``[choices]`` and the class table checked. The one place parameter values are judged."""
    env = copy.deepcopy(desc.params)
    for k, v in given.items():
        if k not in env:
            raise ParamError(k, f"workload {desc.name} has no parameter '{k}' (expected one of: {', '.join(sorted(env))})")
        env[k] = coerce(v, env[k], k, desc.name)
    for k, allowed in desc.choices.items():
        if env.get(k) not in allowed:
            raise ParamError(k, f"workload {desc.name}: {k} = {env.get(k)!r} is not accepted (expected one of: {', '.join(map(str, allowed))})")
    for k, low in desc.minimum.items():
        if k in env and env[k] < low:
            raise ParamError(k, f"workload {desc.name}: {k} must be at least {low}, got {env[k]!r}")
    if desc.classes and env.get("class") not in desc.classes:
        raise ParamError("class", f"workload {desc.name} does not define class {env.get('class')!r} (classes: {', '.join(desc.classes)})")
    return dict(sorted(env.items()))


def _params(desc: WorkloadDesc, overrides: dict[str, Any], path: Path) -> dict[str, Any]:
    env = typed_params(desc, overrides)
    given = {k: env[k] for k in overrides}
    if desc.classes:
        env.update(desc.classes[env["class"]])
        env.update(given)  # a parameter given explicitly wins over the class table
    # checked before the derived names, which may divide by it
    if isinstance(env.get("threads"), bool) or not isinstance(env.get("threads"), int) or env["threads"] < 1:
        raise ParamError("threads", f"workload {desc.name}: threads must be a whole number >= 1, got {env.get('threads')!r}")
    for k in ("threads", "copies"):
        v = env.get(k, 1)
        if isinstance(v, int) and not isinstance(v, bool) and v > MAX_THREADS:
            raise ParamError(k, f"workload {desc.name}: {k} = {v} is more than numalab simulates ({MAX_THREADS})")
    for k, e in desc.derived.items():
        env[k] = evaluate(e, env, f"{path}: derived.{k}")
    return env


_TRUE, _FALSE = ("1", "true", "yes", "on"), ("0", "false", "no", "off")


def coerce(v: Any, default: Any, key: str, name: str) -> Any:
    """``v`` as the type of ``default``; text from the CLI or a config string is parsed, but a
    value of another type is refused, never rounded or reinterpreted (``n = true``, ``n = 2000.5``)."""
    def bad(kind: str) -> ParamError:
        shown = repr(v) if len(repr(v)) <= 60 else repr(v)[:57] + "..."
        return ParamError(key, f"workload {name}: {key} must be {kind}, got {shown} (default {default!r})")

    if isinstance(default, bool):
        if isinstance(v, bool):
            return v
        if isinstance(v, str) and v.strip().lower() in _TRUE + _FALSE:
            return v.strip().lower() in _TRUE
        raise bad("true or false")
    if isinstance(default, int):
        if isinstance(v, bool) or isinstance(v, float):
            raise bad("a whole number")
        if isinstance(v, str):
            # ASCII digits only: int() would also take '５' and '1_000'.
            if not _INT_TEXT.fullmatch(v.strip()):
                long = re.fullmatch(r"[+-]?[0-9]+", v.strip())
                raise bad("a whole number of magnitude at most 2^63" if long else "a whole number (ASCII digits)")
            v = int(v.strip())
        if not isinstance(v, int):
            raise bad("a whole number")
        if abs(v) > MAX_VALUE:
            raise bad("a whole number of magnitude at most 2^63")
        return v
    if isinstance(default, float):
        if isinstance(v, bool):
            raise bad("a number")
        if isinstance(v, str) and not _FLOAT_TEXT.fullmatch(v.strip()):
            raise bad("a number (ASCII digits)")
        try:
            f = float(v)
        except (TypeError, ValueError, OverflowError):
            raise bad("a number") from None
        if not math.isfinite(f) or abs(f) > MAX_VALUE:
            raise bad("a finite number of magnitude at most 2^63")
        return f
    if not isinstance(v, str):
        raise bad("text")
    return v


_INT_TEXT = re.compile(r"[+-]?[0-9]{1,19}")
_FLOAT_TEXT = re.compile(r"[+-]?([0-9]{1,30}(\.[0-9]{0,30})?|\.[0-9]{1,30})([eE][+-]?[0-9]{1,3})?")


class _Resolver:
    def __init__(self, desc: WorkloadDesc, env: dict[str, Any], path: Path, text: str):
        self.desc, self.env, self.path, self.text = desc, env, path, text

    def ev(self, value: Any, key: str) -> Any:
        return evaluate(value, self.env, where(self.path, self.text, key) + f": {key}")

    def num(self, value: Any, key: str, minimum: float | None = None, maximum: float | None = None, why: str = "") -> float:
        v = self.ev(value, key)
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            shown = repr(v) if len(repr(v)) <= 60 else repr(v)[:57] + "..."
            raise UsageError(f"{where(self.path, self.text, key)}: {key}: expected a number, got {shown}")
        if minimum is not None and v < minimum:
            raise UsageError(f"{where(self.path, self.text, key)}: {key}: must be >= {minimum}, got {v}")
        if maximum is not None and v > maximum:
            raise UsageError(f"{where(self.path, self.text, key)}: {key}: {v:.6g} is more than the bound {_bound_text(maximum)}{why}")
        return v

    def refuse(self, key: str, message: str) -> UsageError:
        return UsageError(f"{where(self.path, self.text, key)}: {key}: {message}")

    def workload(self) -> dict[str, Any]:
        regions = [self.region(i, r) for i, r in enumerate(self.desc.regions)]
        names = [r["name"] for r in regions]
        for i, n in enumerate(names):
            if names.index(n) != i:
                raise UsageError(f"{where(self.path, self.text, f'regions[{i}]')}: regions[{i}]: region '{n}' is defined twice")
        _check_overlap(regions, self)
        freed = {i for i, r in enumerate(regions) if r.get("alloc", {}).get("freed")}
        phases = [self.phase(i, p, names) for i, p in enumerate(self.desc.phases)]
        for i, p in enumerate(phases):
            for j, a in enumerate(p["accesses"]):
                if a["region"] in freed:
                    raise self.refuse(f"phases[{i}].access[{j}]", f"region '{names[a['region']]}' is freed before the program starts (alloc_freed)")
        pnames = [p["name"] for p in phases]
        for i, n in enumerate(pnames):
            if pnames.index(n) != i:
                raise UsageError(f"{where(self.path, self.text, f'phases[{i}]')}: phases[{i}]: phase '{n}' is defined twice")
        program = []
        for i, step in enumerate(self.desc.program):
            key = f"program[{i}]"
            idx = []
            for ph in step.phases:
                if ph not in pnames:
                    raise UsageError(f"{where(self.path, self.text, key)}: {key}: no phase named '{ph}' (phases: {', '.join(pnames)})")
                idx.append(pnames.index(ph))
            program.append({"phases": idx, "repeat": int(self.num(step.repeat, f"{key}.repeat", 0)), "timed": step.timed})
        copies = int(self.env.get("copies", 1))
        threads = int(self.env["threads"])
        params = {k: v for k, v in sorted(self.env.items()) if isinstance(v, (int, float, str, bool))}
        out = {
            "name": self.desc.name,
            "description": self.desc.description,
            "params": params,
            "processes": copies,
            "threads": threads,
            "regions": regions,
            "phases": phases,
            "program": program,
        }
        # Instructions per phase execution (MAPKI, results/metrics.py): beside the phases, which
        # the engine takes exactly as its timing model needs them.
        out["instructions"] = [p.pop("instructions") for p in phases]
        if self.desc.version:
            out["version"] = self.desc.version
        return out

    def region(self, i: int, r: RegionDesc) -> dict[str, Any]:
        key = f"regions[{i}]"
        size = self.num(r.bytes, f"{key}.bytes")
        if size <= 0:
            raise UsageError(f"{where(self.path, self.text, key)}: {key}: region '{r.name}' has zero size ({size} bytes)")
        per_thread = bool(self.ev(r.per_thread, f"{key}.per_thread"))
        total = int(size) * (int(self.env["threads"]) if per_thread else 1)
        if total > MAX_ADDRESS:
            raise self.refuse(
                f"{key}.bytes", f"region '{r.name}' of {total} bytes{' (all threads)' if per_thread else ''} is larger than "
                f"the 2^56-byte address space of x86-64 (five-level paging)"
            )
        planes = int(self.num(r.planes, f"{key}.planes", 1)) if r.planes is not None else max(1, total // 64)
        if per_thread:
            planes = planes * int(self.env["threads"]) if r.planes is not None else planes
        if planes > total:
            raise UsageError(
                f"{where(self.path, self.text, key)}: {key}: region '{r.name}' has more planes ({planes}) than bytes ({total})"
            )
        out: dict[str, Any] = {
            "name": r.name,
            "bytes": total,
            "planes": planes,
            "thp": bool(self.ev(r.thp, f"{key}.thp")),
            "policy": r.policy,
            "address": int(self.num(r.address, f"{key}.address", 0)) if r.address is not None else None,
        }
        alloc = self.alloc(key, r, total)
        file = bool(self.ev(r.file, f"{key}.file"))
        # A bare word is the advice; anything else an expression giving it (from a parameter).
        madvise = r.madvise if r.madvise is None or str(r.madvise).isidentifier() else self.ev(r.madvise, f"{key}.madvise")
        if madvise is not None and madvise not in ("normal", "random"):
            raise self.refuse(f"{key}.madvise", f"{madvise!r} is not one of: normal, random")
        if madvise is not None and not file:
            raise self.refuse(f"{key}.madvise", f"madvise needs file = true (region '{r.name}' is anonymous memory)")
        if file:
            if alloc is not None:
                raise self.refuse(f"{key}.file", f"region '{r.name}' is a file mapping: it takes no alloc")
            out["file"] = {"random": madvise == "random"}
        if alloc is not None:
            if out["address"] is not None and alloc["kind"] in ("malloc", "calloc"):
                raise self.refuse(f"{key}.address", f"region '{r.name}' is {alloc['kind']}'d: the C library places it, not address")
            out["alloc"] = alloc
        if out["address"] is not None and out["address"] + total > MAX_ADDRESS:
            raise self.refuse(
                f"{key}.address", f"region '{r.name}' ends at {out['address'] + total:#x}, beyond the 2^56-byte address "
                "space of x86-64 (five-level paging)"
            )
        return out

    def alloc(self, key: str, r: RegionDesc, total: int) -> dict[str, Any] | None:
        """The region's allocation for the engine, or None (untouched until written, as before)."""
        if r.alloc is None:
            for k in ("alloc_by", "alloc_chunks", "alloc_freed"):
                if getattr(r, k) is not None:
                    raise self.refuse(f"{key}.{k}", f"{k} needs alloc (one of: {', '.join(ALLOC_KINDS)})")
            return None
        kind = self.ev(r.alloc, f"{key}.alloc")
        if kind not in ALLOC_KINDS:
            raise self.refuse(f"{key}.alloc", f"{kind!r} is not one of: {', '.join(ALLOC_KINDS)}")
        by: Any = "master" if r.alloc_by is None else self.ev(r.alloc_by, f"{key}.alloc_by")
        threads = int(self.env["threads"])
        if isinstance(by, str) and by.isascii() and by.isdigit():
            by = int(by)  # a thread index given as a parameter's text
        if isinstance(by, bool) or not (by in ("master", "each-thread") or isinstance(by, int)):
            raise self.refuse(f"{key}.alloc_by", f"expected master, each-thread or a thread index, got {by!r}")
        if isinstance(by, int):
            if not 0 <= by < threads:
                raise self.refuse(f"{key}.alloc_by", f"thread {by} does not exist (threads are 0..{threads - 1})")
            by = "master" if by == 0 else {"thread": by}
        most = min(total, MAX_CHUNKS)
        chunks = 1 if r.alloc_chunks is None else self.num(r.alloc_chunks, f"{key}.alloc_chunks", 1, most, " (allocations per region)")
        if chunks != int(chunks):
            raise self.refuse(f"{key}.alloc_chunks", f"expected a whole number of allocations, got {chunks}")
        freed = False if r.alloc_freed is None else self.ev(r.alloc_freed, f"{key}.alloc_freed")
        if freed not in (0, 1):  # TOML's true/false arrive as 1/0 (Expr's union)
            raise self.refuse(f"{key}.alloc_freed", f"expected true or false, got {freed!r}")
        return {"kind": kind, "by": by, "chunks": int(chunks), "freed": bool(freed)}

    def phase(self, i: int, p: PhaseDesc, regions: list[str]) -> dict[str, Any]:
        key = f"phases[{i}]"
        sync = self.ev(p.sync, f"{key}.sync")
        if sync not in ("barrier", "none", "pipeline"):
            raise UsageError(f"{where(self.path, self.text, key)}: {key}.sync: '{sync}' is not one of barrier, none, pipeline")
        accesses = []
        for j, a in enumerate(p.access):
            akey = f"{key}.access[{j}]"
            if a.region not in regions:
                raise UsageError(
                    f"{where(self.path, self.text, key)}: {akey}: pattern over region '{a.region}', which does not exist (regions: {', '.join(regions)})"
                )
            pattern = self.ev(a.pattern, f"{akey}.pattern")
            if pattern not in PATTERNS:
                raise UsageError(
                    f"{where(self.path, self.text, key)}: {akey}: unknown pattern '{pattern}' (patterns: {', '.join(PATTERNS)})"
                )
            count = int(self.num(a.count, f"{akey}.count", 0, MAX_COUNT, " (64-byte lines per thread)"))
            if pattern in ("gather", "scatter") and count < 1:
                raise UsageError(
                    f"{where(self.path, self.text, key)}: {akey}: a {pattern} pattern needs count >= 1 (64-byte lines per thread)"
                )
            rd, wr = float(self.num(a.rd, f"{akey}.rd", 0)), float(self.num(a.wr, f"{akey}.wr", 0))
            if pattern == "shared":
                for fld, v in (("rd", rd), ("wr", wr)):
                    if v > SHARED_FRACTION_MAX:
                        raise UsageError(
                            f"{where(self.path, self.text, key)}: {akey}.{fld}: a shared sweep's {fld} is the share of "
                            f"each thread's sweep that reaches DRAM, a fraction in [0, 1], got {v:g} (passes repeats a sweep)"
                        )
            accesses.append(
                {
                    "region": regions.index(a.region),
                    "pattern": pattern,
                    "rd": rd,
                    "wr": wr,
                    "halo": int(self.num(a.halo, f"{akey}.halo", 0, MAX_SMALL)),
                    "chunk": int(self.num(a.chunk, f"{akey}.chunk", 1, MAX_SMALL)),
                    "rows": int(self.num(a.rows, f"{akey}.rows", 1, MAX_SMALL)),
                    "count": count,
                    "passes": float(self.num(a.passes, f"{akey}.passes", 0, MAX_PASSES)),
                    "cached": None if a.cached is None else {
                        "rd": float(self.num(a.cached.rd, f"{akey}.cached.rd", 0)),
                        "wr": float(self.num(a.cached.wr, f"{akey}.cached.wr", 0)),
                        "window_bytes": float(self.num(a.cached.window, f"{akey}.cached.window", 0)),
                        "shared": bool(self.ev(a.cached.shared, f"{akey}.cached.shared")),
                    },
                }
            )
        mlp = None if p.mlp is None else float(self.num(p.mlp, f"{key}.mlp", 1))
        instructions = None if p.instructions is None else float(self.num(p.instructions, f"{key}.instructions", 0))
        out = {
            "name": p.name,
            "cycles": float(self.num(p.cycles, f"{key}.cycles", 0)),
            "instructions": instructions,
            "mlp": mlp,
            "sync": sync,
            "pipeline_steps": int(self.num(p.pipeline_steps, f"{key}.pipeline_steps", 1, MAX_SMALL)),
            "accesses": accesses,
        }
        if p.chain is not None:  # absent: no chain, and the resolved workload is as before
            out["chain"] = float(self.num(p.chain, f"{key}.chain", 0))
        return out


def _bound_text(b: float) -> str:
    """A bound as written in the docs: 2^k (and its value) for a power of two."""
    if isinstance(b, int) and b > 1024 and b & (b - 1) == 0:
        return f"2^{b.bit_length() - 1} ({b:,})"
    return f"{b:g}"


def total_instructions(w: dict[str, Any]) -> float | None:
    """Instructions a resolved workload executes, all processes together: each program step's
    phases times its repeat count. None if a phase it runs has no estimate."""
    per_phase = w.get("instructions") or [None] * len(w["phases"])
    total = 0.0
    for step in w["program"]:
        for i in step["phases"]:
            if per_phase[i] is None:
                return None
            total += per_phase[i] * step["repeat"]
    return total * w.get("processes", 1)


def _check_overlap(regions: list[dict[str, Any]], R: _Resolver) -> None:
    placed = sorted((r["address"], r["address"] + r["bytes"], r["name"]) for r in regions if r["address"] is not None)
    for (a0, a1, an), (b0, _b1, bn) in zip(placed, placed[1:]):
        if b0 < a1:
            raise UsageError(f"{R.path}: regions '{an}' and '{bn}' overlap ({an} ends at {a1:#x}, {bn} starts at {b0:#x})")
