"""Read a TOML file so that every error says which file, which line and which key.

``load_toml`` turns tomllib's syntax errors into ``UsageError("file:line:col: ...")``;
``locate`` finds the line that defines a key path such as ``links[3].gbps`` so that errors found
later (by the Rust model or by pydantic) can point at it too.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

from numalab.exceptions import UsageError

_SEGMENT = re.compile(r"([A-Za-z0-9_\-]+)(?:\[(\d+)\])*")


def load_toml(path: Path) -> tuple[dict[str, Any], str]:
    """Parse ``path``; return the data and the text (kept for locating keys)."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise UsageError(f"{path}: cannot read: {e.strerror}") from None
    try:
        return tomllib.loads(text), text
    except tomllib.TOMLDecodeError as e:
        # tomllib says "... (at line L, column C)"; put the location first, as compilers do.
        msg = str(e)
        m = re.search(r"\(at line (\d+), column (\d+)\)", msg)
        if m:
            msg = msg[: m.start()].strip()
            raise UsageError(f"{path}:{m.group(1)}:{m.group(2)}: malformed TOML: {msg}") from None
        raise UsageError(f"{path}: malformed TOML: {msg}") from None


def _segments(path: str) -> list[tuple[str, int | None]]:
    out: list[tuple[str, int | None]] = []
    for part in path.split("."):
        m = re.fullmatch(r"([^\[\]]+)((?:\[\d+\])*)", part)
        if not m:
            return out
        idx = re.findall(r"\[(\d+)\]", m.group(2))
        out.append((m.group(1), int(idx[0]) if idx else None))
    return out


def locate(text: str, key_path: str) -> int | None:
    """1-based line defining ``key_path`` (best effort: the key itself, else its table)."""
    segs = _segments(key_path)
    if not segs:
        return None
    lines = text.splitlines()
    first, index = segs[0]
    header_single = re.compile(rf"^\s*\[\s*{re.escape(first)}\s*\]")
    header_array = re.compile(rf"^\s*\[\[\s*{re.escape(first)}\s*\]\]")
    assign = re.compile(rf"^\s*{re.escape(first)}\s*=")
    table_line = None
    seen = -1
    for i, line in enumerate(lines):
        if header_array.match(line):
            seen += 1
            if index is None or seen == index:
                table_line = i
                break
        elif header_single.match(line) or assign.match(line):
            table_line = i
            if assign.match(line) and index is not None:
                # A value list: element k usually sits on line +k+1 when written one per line.
                if i + index + 1 < len(lines) and not lines[i].rstrip().endswith("]"):
                    return i + index + 2
            break
    if table_line is None:
        return None
    if len(segs) > 1:
        key = re.compile(rf"^\s*{re.escape(segs[1][0])}\s*=")
        for j in range(table_line + 1, len(lines)):
            if lines[j].lstrip().startswith("["):
                break
            if key.match(lines[j]):
                return j + 1
    return table_line + 1


def where(path: Path, text: str, key_path: str) -> str:
    """``file:line`` for a key path, or just ``file`` when it cannot be found."""
    line = locate(text, key_path)
    return f"{path}:{line}" if line else str(path)
