"""Read a TOML file so that every error says which file, which line and which key.

``load_toml`` turns tomllib's syntax errors, bytes that are not UTF-8 and nesting deeper than
any description needs into ``UsageError("file:line:col: ...")``; ``locate`` finds the line that
defines a key path such as ``links[3].gbps`` so that errors found later (by the Rust model or by
pydantic) can point at it too. The text is indexed once, so locating every key of a file of many
thousand tables costs time linear in its size.
"""

from __future__ import annotations

import bisect
import functools
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from numalab.exceptions import UsageError

#: Largest TOML file read: the largest preset, descriptor or study is a few tens of KiB.
MAX_TOML_BYTES = 16 << 20
#: Deepest nesting of arrays and inline tables: descriptors and presets nest 3 deep.
MAX_TOML_DEPTH = 64


def load_toml(path: Path) -> tuple[dict[str, Any], str]:
    """Parse ``path``; return the data and the text (kept for locating keys)."""
    try:
        with open(path, "rb") as f:
            raw = f.read(MAX_TOML_BYTES + 1)
    except OSError as e:
        raise UsageError(f"{path}: cannot read: {e.strerror}") from None
    if len(raw) > MAX_TOML_BYTES:
        raise UsageError(f"{path}: larger than the {MAX_TOML_BYTES >> 20} MiB numalab reads as TOML")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        line = raw.count(b"\n", 0, e.start) + 1
        col = e.start - (raw.rfind(b"\n", 0, e.start) + 1) + 1
        raise UsageError(f"{path}:{line}:{col}: not UTF-8 (byte 0x{raw[e.start]:02x}); TOML files are UTF-8 text") from None
    return loads(text, path), text


def loads(text: str, path: Path | str) -> dict[str, Any]:
    """Parse TOML ``text`` read from ``path`` (named in errors)."""
    deep = _too_deep(text)
    if deep is not None:
        line, col = deep
        raise UsageError(f"{path}:{line}:{col}: malformed TOML: arrays or tables nested more than {MAX_TOML_DEPTH} deep")
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        # tomllib says "... (at line L, column C)"; put the location first, as compilers do.
        msg = str(e)
        m = re.search(r"\(at line (\d+), column (\d+)\)", msg)
        if m:
            msg = msg[: m.start()].strip()
            raise UsageError(f"{path}:{m.group(1)}:{m.group(2)}: malformed TOML: {msg}") from None
        raise UsageError(f"{path}: malformed TOML: {msg}") from None
    except RecursionError:
        raise UsageError(f"{path}: malformed TOML: nested too deeply") from None
    # Dotted keys and table headers (a.b.c... = 1, [a.b.c...]) nest without brackets.
    deep_key = _deep_key(data)
    if deep_key is not None:
        at = locate(text, deep_key)
        raise UsageError(
            f"{path}{f':{at}' if at else ''}: {deep_key}...: tables nested more than {MAX_TOML_DEPTH} deep"
        )
    return data


def _deep_key(data: Any) -> str | None:
    """The first key path (its first segments) whose tables or arrays nest deeper than
    MAX_TOML_DEPTH, found without recursion; None when none does."""
    stack: list[tuple[Any, int, str]] = [(data, 0, "")]
    while stack:
        value, depth, key = stack.pop()
        if depth > MAX_TOML_DEPTH:
            return ".".join(key.split(".")[:3])
        if isinstance(value, dict):
            stack.extend((v, depth + 1, f"{key}.{k}" if key else str(k)) for k, v in value.items())
        elif isinstance(value, list):
            stack.extend((v, depth + 1, key) for v in value)
    return None


_NEST = re.compile(r"""["'\[\]{}\n#]""")


def _too_deep(text: str) -> tuple[int, int] | None:
    """(line, column) where ``[``/``{`` nesting first exceeds MAX_TOML_DEPTH, outside strings and
    comments (tomllib parses nesting by recursion, so a deep file must be refused before it)."""
    depth, line, start, quote = 0, 1, 0, None
    pos = 0
    while True:
        m = _NEST.search(text, pos)
        if m is None:
            return None
        ch, pos = m.group(), m.end()
        if ch == "\n":
            line, start = line + 1, pos
            if quote is not None and len(quote) == 1:
                quote = None  # a basic string ends at the line; tomllib reports it
            continue
        if quote is not None:
            if text.startswith(quote, pos - 1) and not (quote[0] == '"' and _escaped(text, pos - 1)):
                pos += len(quote) - 1
                quote = None
            continue
        if ch == "#":
            nl = text.find("\n", pos)
            pos = len(text) if nl < 0 else nl
        elif ch in "\"'":
            quote = ch * 3 if text.startswith(ch * 3, pos - 1) else ch
            pos += len(quote) - 1
        elif ch in "[{":
            depth += 1
            if depth > MAX_TOML_DEPTH:
                return line, pos - start
        else:
            depth = max(0, depth - 1)


def _escaped(text: str, i: int) -> bool:
    """Whether ``text[i]`` follows an odd number of backslashes."""
    n = 0
    while i > 0 and text[i - 1] == "\\":
        n, i = n + 1, i - 1
    return n % 2 == 1


def _segments(path: str) -> list[tuple[str, int | None]]:
    out: list[tuple[str, int | None]] = []
    for part in path.split("."):
        m = re.fullmatch(r"([^\[\]]+)((?:\[\d+\])*)", part)
        if not m:
            return out
        idx = re.findall(r"\[(\d+)\]", m.group(2))
        out.append((m.group(1), int(idx[0]) if idx else None))
    return out


_ARRAY = re.compile(r"^\s*\[\[\s*([^\[\]\s]+)\s*\]\]")
_TABLE = re.compile(r"^\s*\[\s*([^\[\]\s]+)\s*\]")
_ASSIGN = re.compile(r"^\s*([A-Za-z0-9_\-]+)\s*=")


@dataclass
class _Index:
    """Where each name is defined, found in one pass over the lines."""

    lines: list[str]
    arrays: dict[str, list[int]] = field(default_factory=dict)  # [[name]] headers, in order
    first_other: dict[str, int] = field(default_factory=dict)  # first [name] header or `name =`
    assigns: dict[str, list[int]] = field(default_factory=dict)  # every `name =` line
    section: list[int] = field(default_factory=list)  # per line: the index of its '['-started section


@functools.lru_cache(maxsize=8)
def _index(text: str) -> _Index:
    ix = _Index(text.splitlines())
    sec = 0
    for i, line in enumerate(ix.lines):
        if line.lstrip().startswith("["):
            sec += 1
        ix.section.append(sec)
        m = _ARRAY.match(line)
        if m:
            ix.arrays.setdefault(m.group(1), []).append(i)
            continue
        m = _TABLE.match(line) or _ASSIGN.match(line)
        if m:
            ix.first_other.setdefault(m.group(1), i)
            if not line.lstrip().startswith("["):
                ix.assigns.setdefault(m.group(1), []).append(i)
    return ix


def locate(text: str, key_path: str) -> int | None:
    """1-based line defining ``key_path`` (best effort: the key itself, else its table)."""
    segs = _segments(key_path)
    if not segs:
        return None
    ix = _index(text)
    first, index = segs[0]
    arrays = ix.arrays.get(first, [])
    array_line = arrays[index if index is not None else 0] if (index or 0) < len(arrays) else None
    other = ix.first_other.get(first)
    if other is not None and (array_line is None or other < array_line):
        table_line = other
        line = ix.lines[other]
        if index is not None and not line.lstrip().startswith("[") and not line.rstrip().endswith("]"):
            # A value list: element k usually sits on line +k+1 when written one per line.
            if other + index + 1 < len(ix.lines):
                return other + index + 2
    elif array_line is not None:
        table_line = array_line
    else:
        return None
    if len(segs) > 1:
        # The key's first assignment after the table line, before the next '['-started line.
        candidates = ix.assigns.get(segs[1][0], [])
        k = bisect.bisect_right(candidates, table_line)
        if k < len(candidates) and ix.section[candidates[k]] == ix.section[table_line]:
            return candidates[k] + 1
    return table_line + 1


def where(path: Path, text: str, key_path: str) -> str:
    """``file:line`` for a key path, or just ``file`` when it cannot be found."""
    line = locate(text, key_path)
    return f"{path}:{line}" if line else str(path)
