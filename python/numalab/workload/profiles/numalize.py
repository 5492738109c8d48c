"""numalize's page table (``PROGRAM.full.page.csv``) -> a :class:`Profile`.

numalize (Pin) writes one row per page a thread touched [src: matthiasdiener/numalize
numalize.cpp: print_page]: ``page.address`` (the address >> log2(page size), decimal),
``alloc.thread``, ``alloc.location``, ``firsttouch.thread``, ``firsttouch.location``,
``structure.name``, then ``T0..Tn-1``, each thread's accesses to the page. Every memory access is
counted (no cache filtering) and reads and writes are not told apart.
"""

from __future__ import annotations

import csv
from pathlib import Path

from numalab.workload.profiles import MAX_THREADS, Page, Profile, count, malformed, read_text

COLUMNS = ["page.address", "alloc.thread", "alloc.location", "firsttouch.thread", "firsttouch.location", "structure.name"]


def read(path: str | Path) -> Profile:
    text = read_text(path)
    rows = csv.reader(text.splitlines())
    header = next(rows, None)
    if header is None:
        raise malformed(path, 1, "empty file (expected numalize's header: " + ",".join(COLUMNS) + ",T0,...)")
    if header[: len(COLUMNS)] != COLUMNS:
        raise malformed(path, 1, "not numalize's page table: the header must start with " + ",".join(COLUMNS))
    tcols = header[len(COLUMNS):]
    if not tcols or tcols != [f"T{i}" for i in range(len(tcols))]:
        raise malformed(path, 1, "expected thread columns T0, T1, ... after structure.name")
    threads = len(tcols)
    if threads > MAX_THREADS:
        raise malformed(path, 1, f"{threads} threads, more than {MAX_THREADS}")
    pages: dict[int, Page] = {}
    for n, row in enumerate(rows, start=2):
        if not row:
            continue
        if len(row) != len(header):
            raise malformed(path, n, f"{len(row)} fields, expected {len(header)} (as the header)")
        number = count(path, n, row[0], "page.address")
        ft = count(path, n, row[3], "firsttouch.thread")
        if ft >= threads:
            raise malformed(path, n, f"firsttouch.thread {ft} is not one of the {threads} threads")
        if number in pages:
            raise malformed(path, n, f"page {number} listed twice")
        counts = [float(count(path, n, v, f"T{i}")) for i, v in enumerate(row[len(COLUMNS):])]
        pages[number] = Page(number, counts, first_touch=ft, group=row[5])
    if not pages:
        raise malformed(path, 2, "no pages (numalize writes one row per page touched)")
    return Profile(source=f"numalize {Path(path).name}", threads=threads, pages=list(pages.values()))
