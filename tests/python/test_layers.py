"""The Python package's layers, read from its imports (``ast``): module-level, function-level
and ``if TYPE_CHECKING:`` imports are told apart; a function-level import counts like any other
(it runs, later), a TYPE_CHECKING one does not (it never runs).

Rules (docs/architecture.md §5):
1. no library module imports ``numalab.cli``;
2. ``numalab.study`` and ``numalab.report`` import no feature package (``tasks``, ``vm``, the
   kinds registration ``numalab.kinds``): a kind registers its parts (study/kinds.py);
3. each package imports only what the table in docs/architecture.md allows (the one place the
   table is written; a new package must be added there);
4. no import cycles between modules (strongly connected components of more than one module).
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SOURCE = REPO / "python"
ARCHITECTURE = REPO / "docs" / "architecture.md"
FEATURES = {"tasks", "vm", "kinds", "cli"}
# Cycles tolerated while another change removes them, each with why; a stale entry fails. None
# today (the last, vm/kmem.py <-> vm/setup.py, went when both took Debian's packages from vm/debian.py).
KNOWN_CYCLES: list[frozenset[str]] = []


@dataclass(frozen=True)
class Import:
    source: str  # importing module
    target: str  # imported module (the deepest numalab module the statement names)
    file: str  # python/numalab/...
    line: int
    where: str  # "module", "function" or "type-checking"

    def __str__(self) -> str:
        level = "" if self.where == "module" else f" ({self.where}-level)" if self.where == "function" else " (TYPE_CHECKING)"
        return f"{self.file}:{self.line}: {self.source} imports {self.target}{level}"


def modules(root: Path) -> dict[str, tuple[Path, bool]]:
    """``numalab.study.expand`` -> (its file, is a package ``__init__``)."""
    out = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        if is_package:
            parts = parts[:-1]
        out[".".join(parts)] = (path, is_package)
    return out


def imports(root: Path, top: str = "numalab") -> list[Import]:
    """Every import of a ``top`` module by a ``top`` module (the compiled ``_core`` aside)."""
    mods = modules(root)
    found = []
    for name, (path, is_package) in mods.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        for node, where in _walk(tree, "module"):
            for raw in _targets(node, name, is_package, mods):
                target = _known(raw, mods)
                if raw.split(".")[0] == top and not raw.startswith(f"{top}._core") and target != name:
                    found.append(Import(name, target, f"python/{path.relative_to(root).as_posix()}", node.lineno, where))
    return found


def _walk(node: ast.AST, where: str):
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.Import, ast.ImportFrom)):
            yield child, where
        elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            yield from _walk(child, "type-checking" if where == "type-checking" else "function")
        elif isinstance(child, ast.If) and _is_type_checking(child.test):
            for stmt in child.body:
                yield from _walk(ast.Module(body=[stmt], type_ignores=[]), "type-checking")
            for stmt in child.orelse:
                yield from _walk(ast.Module(body=[stmt], type_ignores=[]), where)
        else:
            yield from _walk(child, where)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _targets(node: ast.Import | ast.ImportFrom, name: str, is_package: bool, mods: dict[str, tuple[Path, bool]]) -> list[str]:
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    if node.level:
        base = name.split(".") if is_package else name.split(".")[:-1]
        base = base[: len(base) - (node.level - 1)]
        prefix = ".".join(base + ([node.module] if node.module else []))
    else:
        prefix = node.module or ""
    # ``from numalab.study import kinds`` imports the module numalab.study.kinds.
    return [f"{prefix}.{a.name}" if f"{prefix}.{a.name}" in mods or f"{prefix}.{a.name}".endswith("._core") else prefix for a in node.names]


def _known(target: str, mods: dict[str, tuple[Path, bool]]) -> str:
    while target not in mods and "." in target:
        target = target.rsplit(".", 1)[0]
    return target


def package(module: str) -> str:
    """``numalab.study.expand`` -> ``study``; ``numalab.kinds`` -> ``kinds``; ``numalab`` -> ``numalab``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def allowed_table(text: str) -> dict[str, set[str] | None]:
    """The table between ``<!-- layers:begin -->`` and ``<!-- layers:end -->``: package -> the
    packages it may import (None: every package)."""
    block = re.search(r"<!-- layers:begin -->(.*?)<!-- layers:end -->", text, re.S)
    assert block, f"{ARCHITECTURE}: no package dependency table between <!-- layers:begin --> and <!-- layers:end -->"
    table: dict[str, set[str] | None] = {}
    for row in block.group(1).splitlines():
        cells = [c.strip() for c in row.strip().strip("|").split("|")]
        if len(cells) < 2 or not cells[0].startswith("`"):
            continue
        pkg = re.match(r"`([\w.]+)`", cells[0]).group(1)
        table[pkg] = None if "every package" in cells[1] else set(re.findall(r"`(\w+)`", cells[1]))
    return table


def cycles(found: list[Import]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan), TYPE_CHECKING imports aside."""
    graph: dict[str, set[str]] = {}
    for i in found:
        if i.where != "type-checking":
            graph.setdefault(i.source, set()).add(i.target)
            graph.setdefault(i.target, set())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def describe_cycle(component: list[str], found: list[Import]) -> str:
    """One cycle through the component, each hop with its file and line."""
    members = set(component)
    edges = {}
    for i in found:
        if i.where != "type-checking" and i.source in members and i.target in members:
            edges.setdefault(i.source, []).append(i)
    start = component[0]
    paths = {start: []}
    queue = [start]
    while queue:  # breadth first, back to the start
        v = queue.pop(0)
        for i in edges.get(v, []):
            if i.target == start:
                return "import cycle: " + " -> ".join(str(hop) for hop in paths[v] + [i])
            if i.target not in paths:
                paths[i.target] = paths[v] + [i]
                queue.append(i.target)
    return "import cycle among " + ", ".join(component)


def violations(found: list[Import], table: dict[str, set[str] | None], known_cycles: list[frozenset[str]]) -> list[str]:
    out = []
    for i in found:
        if i.where == "type-checking":
            continue
        src, dst = package(i.source), package(i.target)
        if src == dst:
            continue
        if dst == "cli":
            out.append(f"{i}: library code must not import numalab.cli (move what it needs below cli/, e.g. to numalab.console)")
        elif src in ("study", "report") and dst in FEATURES:
            out.append(f"{i}: {src}/ must not import the feature package {dst}/ (register a study kind in study/kinds.py instead)")
        elif src not in table:
            out.append(f"{i}: package {src} is not in the dependency table of docs/architecture.md §5")
        elif table[src] is not None and dst not in table[src]:  # type: ignore[operator]
            out.append(f"{i}: {src} may import only {', '.join(sorted(table[src] or ())) or 'nothing of numalab'} (docs/architecture.md §5)")
    for comp in cycles(found):
        if frozenset(comp) not in known_cycles:
            out.append(describe_cycle(comp, found))
    return out


@pytest.fixture(scope="module")
def found() -> list[Import]:
    return imports(SOURCE)


def test_the_package_follows_its_layers(found):
    bad = violations(found, allowed_table(ARCHITECTURE.read_text(encoding="utf-8")), KNOWN_CYCLES)
    assert not bad, "\n".join(bad)


def test_the_table_names_every_package_and_only_packages_that_exist(found):
    table = allowed_table(ARCHITECTURE.read_text(encoding="utf-8"))
    packages = {package(m) for m in modules(SOURCE)} - {"_core"}
    assert set(table) == packages, f"docs/architecture.md §5 lists {sorted(table)}; the package has {sorted(packages)}"
    for pkg, may in table.items():
        assert may is None or may <= packages, f"{pkg}: the table allows unknown packages {sorted((may or set()) - packages)}"


def test_known_cycles_still_exist(found):
    """A known exception that no longer holds must leave KNOWN_CYCLES."""
    present = {frozenset(c) for c in cycles(found)}
    stale = [sorted(c) for c in KNOWN_CYCLES if c not in present]
    assert not stale, f"these cycles are gone: remove them from KNOWN_CYCLES: {stale}"


def test_console_depends_on_nothing_of_numalab(found):
    assert [str(i) for i in found if package(i.source) == "console" and package(i.target) != "console"] == []


# ---- the checker itself, on a small package written for the purpose ---------------------------

def _write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)


TABLE = """<!-- layers:begin -->
| package | may import |
|---|---|
| `low` | (nothing) |
| `study` | `low` |
| `tasks` | `low`, `study` |
| `cli` | every package |
<!-- layers:end -->"""


def test_the_checker_names_file_line_and_kind_of_each_offence(tmp_path):
    _write(tmp_path, {
        "numalab/__init__.py": "",
        "numalab/low/__init__.py": "",
        "numalab/low/a.py": "def f():\n    from numalab.low import b  # hidden in a function\n",
        "numalab/low/b.py": "from numalab.low.a import f\n",
        "numalab/study/__init__.py": "",
        "numalab/study/x.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from numalab.cli import main\n"
                              "def g():\n    from numalab.tasks import t\n",
        "numalab/tasks/__init__.py": "",
        "numalab/tasks/t.py": "from . import u\nfrom ..low import a\n",
        "numalab/tasks/u.py": "import numalab.cli.main\n",
        "numalab/cli/__init__.py": "",
        "numalab/cli/main.py": "from numalab.tasks import t\nfrom numalab import _core\n",
    })
    found = imports(tmp_path)
    bad = violations(found, allowed_table(TABLE), [])
    assert "numalab/study/x.py:5: numalab.study.x imports numalab.tasks.t (function-level): study/ must not import the feature package tasks/" in bad[0]
    assert bad[1].startswith("python/numalab/tasks/u.py:1: numalab.tasks.u imports numalab.cli.main: library code must not import numalab.cli")
    assert any(b.startswith("import cycle: python/numalab/low/a.py:2: numalab.low.a imports numalab.low.b (function-level) -> "
                            "python/numalab/low/b.py:1: numalab.low.b imports numalab.low.a") for b in bad), bad
    assert any("import cycle" in b and "numalab.cli.main" in b and "numalab.tasks.u" in b for b in bad), bad
    assert len(bad) == 4, bad  # the TYPE_CHECKING import of cli and the relative imports within rules pass
    known = [frozenset({"numalab.low.a", "numalab.low.b"}), frozenset({"numalab.cli.main", "numalab.tasks.t", "numalab.tasks.u"})]
    assert violations(found, allowed_table(TABLE), known) == bad[:2]


def test_the_checker_reads_the_table(tmp_path):
    _write(tmp_path, {"numalab/__init__.py": "", "numalab/low/__init__.py": "from numalab.study import y\n",
                      "numalab/study/__init__.py": "", "numalab/study/y.py": "", "numalab/other/__init__.py": "import numalab.low\n"})
    bad = violations(imports(tmp_path), allowed_table(TABLE), [])
    assert bad == ["python/numalab/low/__init__.py:1: numalab.low imports numalab.study.y: low may import only nothing of numalab (docs/architecture.md §5)",
                   "python/numalab/other/__init__.py:1: numalab.other imports numalab.low: package other is not in the dependency table of docs/architecture.md §5"]


def test_the_table_states_todays_imports(found):
    """The "imports today" column of docs/architecture.md §5.2 is what the code imports."""
    text = ARCHITECTURE.read_text(encoding="utf-8")
    block = re.search(r"<!-- layers:begin -->(.*?)<!-- layers:end -->", text, re.S).group(1)
    stated = {}
    for row in block.splitlines():
        cells = [c.strip() for c in row.strip().strip("|").split("|")]
        if len(cells) == 3 and cells[0].startswith("`"):
            stated[re.match(r"`([\w.]+)`", cells[0]).group(1)] = set(re.findall(r"`(\w+)`", cells[2]))
    actual: dict[str, set[str]] = {p: set() for p in stated}
    for i in found:
        if i.where != "type-checking" and package(i.source) != package(i.target):
            actual.setdefault(package(i.source), set()).add(package(i.target))
    wrong = {p: f"stated {sorted(stated.get(p, set()))}, imports {sorted(actual[p])}" for p in actual if stated.get(p) != actual[p]}
    rows = "\n".join(f"| `{p}` | ... | {', '.join(f'`{q}`' for q in _ordered(actual[p])) or '—'} |" for p in _ordered(wrong))
    assert not wrong, f"docs/architecture.md §5.2 'imports today' is out of date: {wrong}\nwrite these cells:\n{rows}"


def _ordered(packages) -> list[str]:
    """Packages in the table's order (lowest layer first), unknown ones last."""
    order = list(allowed_table(ARCHITECTURE.read_text(encoding="utf-8")))
    return sorted(packages, key=lambda p: (order.index(p) if p in order else len(order), p))
