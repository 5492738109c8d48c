"""User text in reports is text: a description, design, label, scatter title or error holding
``<script>``, Markdown table breakers (``|``, newlines) or emphasis renders literally in the
Markdown report (checked by rendering it with markdown-it, as GitHub would) and in the HTML one."""

from __future__ import annotations

from html.parser import HTMLParser

import pytest

from numalab.report import write_report
from numalab.study import worker

from inline_backend import run_stored

SCRIPT = "<script>alert(1)</script>"
STUDY = f'''
name = "esc"
description = "{SCRIPT} | desc\\nsecond line"
design = "<img src=x onerror=alert(2)> | design"
machine = "e5-2620v4-2s"
workload = "dgemv"
params = {{ n = 2000, reps = 2 }}
[baseline]
placement = "default"
[[runs]]
label = "{SCRIPT} | a\\nb"
placement = "default"
[[runs]]
label = "x|y *bold* _it_ `code` [link](http://e.org)"
placement = "interleave=all"
[[runs]]
label = "fails | here"
placement = "membind=1"
[[report.scatter]]
title = "{SCRIPT} scatter"
x = "remote_pct"
y = "speedup"
'''
ERROR = f"{SCRIPT} | boom\nline two"




class _Doc(HTMLParser):
    """Tags, image sources, link targets, and per table the number of cells in each row."""

    def __init__(self):
        super().__init__()
        self.tags: list[str] = []
        self.srcs: list[str] = []
        self.hrefs: list[str] = []
        self.rows: list[list[int]] = []
        self.cells: list[str] = []
        self._cell = False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.tags.append(tag)
        if tag == "img":
            self.srcs.append(a.get("src") or "")
        if tag == "a":
            self.hrefs.append(a.get("href") or "")
        if tag == "table":
            self.rows.append([])
        elif tag == "tr":
            self.rows[-1].append(0)
        elif tag in ("td", "th"):
            self.rows[-1][-1] += 1
            self.cells.append("")
            self._cell = True

    def handle_endtag(self, tag):
        if tag in ("td", "th"):
            self._cell = False

    def handle_data(self, data):
        if self._cell:
            self.cells[-1] += data


@pytest.fixture(scope="module")
def stored(tmp_path_factory):
    root = tmp_path_factory.mktemp("esc")
    real = worker.simulate

    def failing(config):
        if config["placement"] == "membind=1":
            raise RuntimeError(ERROR)
        return real(config)

    worker.simulate = failing
    try:
        s = run_stored(STUDY, root / "esc.toml", root / "r")
    finally:
        worker.simulate = real
    assert (s.ok, s.failed) == (2, 1)
    return root


@pytest.fixture(scope="module")
def markdown(stored) -> tuple[str, str, _Doc]:
    """The Markdown report, written once (its figures cost seconds), as GitHub renders it."""
    from markdown_it import MarkdownIt

    md = write_report(stored / "esc.toml", stored / "r.md", results=stored / "r").read_text()
    html = MarkdownIt("commonmark").enable("table").render(md)  # raw HTML passes through, as on GitHub
    doc = _Doc()
    doc.feed(html)
    return md, html, doc


def test_markdown_report_renders_user_text_literally(markdown):
    md, html, doc = markdown
    fence = md.index("```toml")
    outside = md[:fence] + md[md.index("\n```\n", fence) + 5:]
    assert "<script" not in outside and "<img" not in outside
    assert "script" not in doc.tags
    assert all(src.endswith(".png") for src in doc.srcs), doc.srcs  # only the report's figures
    for rows in doc.rows:
        assert len(set(rows)) == 1, f"a table row has another number of cells: {rows}"
    assert f"{SCRIPT} | a b" in doc.cells, "a label with | and a newline stays one cell"
    assert f"RuntimeError: {SCRIPT} | boom line two" in doc.cells
    assert "<h1>esc: &lt;script&gt;alert(1)&lt;/script&gt; | desc second line</h1>" in html
    assert "follows &lt;img src=x onerror=alert(2)&gt; | design" in html


def test_markdown_emphasis_code_and_links_in_labels_stay_text(markdown):
    _, html, doc = markdown
    assert "x|y *bold* _it_ `code` [link](http://e.org)" in doc.cells
    assert "em" not in doc.tags  # the report's own emphasis is **bold** only
    assert doc.tags.count("code") == 1  # the study file's fence, nothing inline
    assert "http://e.org" not in doc.hrefs


def test_html_report_escapes_the_same_text(stored):
    html = write_report(stored / "esc.toml", stored / "r.html", results=stored / "r").read_text()
    doc = _Doc()
    doc.feed(html)
    assert "script" not in doc.tags
    assert all(src.startswith("data:image/svg+xml") for src in doc.srcs)
    assert "&lt;img src=x onerror=alert(2)&gt;" in html
    assert any(c.startswith(SCRIPT) for c in doc.cells)
