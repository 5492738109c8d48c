"""The repository documents its own model: every citation must lead to something a reader of the
repository can open. No file may cite the design notes that live outside the repository
(``design/...``, ``../shared``, or the bare names of those notes: ``linux-numa.md``, ``model.md``,
``style.md``, and outside ``docs/`` also ``workloads.md`` and ``studies.md``). Documentation is
cited as ``docs/<page>.md §<section>``, and every such citation must name an existing page and a
section number that is a heading of that page (``## 4. ...``, ``### 4.1 ...``)."""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
THIS = Path(__file__).resolve()

# Material outside the repository: the design folder and its reference notes. The names
# workloads.md and studies.md are also docs pages, so only their bare (path-less) form is outside.
OUTSIDE = re.compile(
    r"design/"
    r"|\.\./shared\b"
    r"|linux-numa\.md"
    r"|(?<![\w./-])(?:model|style|workloads|studies)\.md"
)
# Inside docs/, workloads.md and studies.md are sibling pages; the rest is still outside.
OUTSIDE_IN_DOCS = re.compile(r"design/|\.\./shared\b|linux-numa\.md|(?<![\w./-])(?:model|style)\.md")
# A docs citation: optional "docs/" then a page, then optionally sections "§4.1", "§4.3-§4.5",
# "§4, §6".
CITATION = re.compile(r"(?<![\w./-])(docs/)?([a-z0-9_-]+)\.md((?:\s*(?:,|-|–|and)?\s*§\s*\d+(?:\.\d+)*)*)")
SECTION = re.compile(r"§\s*(\d+(?:\.\d+)*)")
HEADING = re.compile(r"^#{2,6}\s+(\d+(?:\.\d+)*)\.?\s", re.MULTILINE)


@dataclass(frozen=True)
class Offence:
    path: str
    line: int
    what: str
    text: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.what}: {self.text.strip()[:160]}"


def repository_files() -> list[Path]:
    """Files git knows about or would add (tracked, plus untracked ones not ignored)."""
    out = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.decode()
    files = [ROOT / p for p in out.split("\0") if p]
    return sorted(p for p in files if p.is_file() and p.resolve() != THIS)


def text_of(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except (UnicodeDecodeError, OSError):
        return None


def page_sections(page: str) -> set[str] | None:
    """Section numbers of docs/<page>.md, or None when the page does not exist."""
    path = DOCS / f"{page}.md"
    if not path.is_file():
        return None
    return set(HEADING.findall(path.read_text(encoding="utf-8")))


def outside_citations(rel: str, text: str, in_docs: bool = False) -> list[Offence]:
    pattern = OUTSIDE_IN_DOCS if in_docs else OUTSIDE
    return [
        Offence(rel, n, f"cites '{m.group(0)}', which is not in the repository", line)
        for n, line in enumerate(text.splitlines(), 1)
        for m in pattern.finditer(line)
    ]


def docs_citations(rel: str, text: str, in_docs: bool) -> list[Offence]:
    """Broken docs citations. Outside docs/ only ``docs/<page>.md`` counts as a citation; inside
    docs/ a bare ``<page>.md`` names a sibling page."""
    bad = []
    for n, line in enumerate(text.splitlines(), 1):
        for m in CITATION.finditer(line):
            prefixed, page, sections = m.group(1), m.group(2), m.group(3)
            if not prefixed and not in_docs:
                continue
            if not prefixed and page not in _known_pages() and not sections:
                continue  # inside docs, another file name (README.md of a folder, ...)
            found = page_sections(page)
            if found is None:
                bad.append(Offence(rel, n, f"docs/{page}.md does not exist", line))
                continue
            for s in SECTION.findall(sections):
                if s not in found:
                    bad.append(Offence(rel, n, f"docs/{page}.md has no section {s}", line))
    return bad


def _known_pages() -> set[str]:
    return {p.stem for p in DOCS.glob("*.md")} | {"architecture"}


def scan() -> tuple[list[Offence], list[Offence]]:
    outside, broken = [], []
    for path in repository_files():
        text = text_of(path)
        if text is None:
            continue
        rel = path.relative_to(ROOT).as_posix()
        in_docs = rel.startswith("docs/")
        outside += outside_citations(rel, text, in_docs)
        broken += docs_citations(rel, text, in_docs)
    return outside, broken


def report(offences: list[Offence]) -> str:
    return f"{len(offences)} offending line(s):\n" + "\n".join(str(o) for o in offences)


def test_nothing_cites_material_outside_the_repository():
    outside, _ = scan()
    assert not outside, report(outside)


def test_every_docs_citation_names_an_existing_page_and_section():
    _, broken = scan()
    assert not broken, report(broken)


def test_every_docs_page_has_numbered_sections():
    pages = sorted(DOCS.glob("*.md"))
    assert pages, "docs/ has no pages"
    for page in pages:
        if page.name == "README.md":
            continue
        assert page_sections(page.stem), f"{page.relative_to(ROOT)} has no numbered section headings (## 1. ...)"


def test_the_checks_recognise_good_and_bad_citations():
    bad = outside_citations("x.rs", "// see design/model.md §4\n// (workloads.md §5.1)\n# linux-numa.md §4.1")
    assert [o.line for o in bad] == [1, 2, 3]
    assert not outside_citations("x.rs", "// docs/workloads.md §5, docs/studies.md §6.1, design = \"S1\"")
    assert not outside_citations("docs/a.md", "see [workloads.md §5](workloads.md)", in_docs=True)
    assert outside_citations("docs/a.md", "as design/model.md says", in_docs=True)
    assert docs_citations("x.rs", "// docs/balancing.md §99", in_docs=False)
    assert docs_citations("x.rs", "// docs/no-such-page.md §1", in_docs=False)
    assert not docs_citations("x.rs", "// docs/balancing.md §7.3, §8", in_docs=False)
    assert docs_citations("docs/a.md", "see [balancing.md §4.3-§4.99](balancing.md)", in_docs=True)


def test_the_index_lists_every_page():
    """docs/README.md links every page of docs/, and only pages that exist."""
    index = (DOCS / "README.md").read_text(encoding="utf-8")
    listed = set(re.findall(r"\]\(([\w-]+\.md)\)", index))
    pages = {p.name for p in DOCS.glob("*.md")} - {"README.md"}
    assert listed == pages, f"docs/README.md: missing {sorted(pages - listed)}, not a page {sorted(listed - pages)}"
