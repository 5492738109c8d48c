"""Turn pydantic's validation errors into one line that names the file, the key path
(``runs[2].placement``) and what is accepted there."""

from __future__ import annotations

import re
import typing
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from numalab.exceptions import UsageError

_ARRAY_HEADER = re.compile(r"^\s*\[\[\s*([^\]]+?)\s*\]\]")
_HEADER = re.compile(r"^\s*\[\s*([^\]]+?)\s*\]")
_KEY = re.compile(r"^\s*\"?([A-Za-z0-9_\-]+)\"?\s*=")


def key_path(loc: tuple[Any, ...]) -> str:
    """``("runs", 2, "placement")`` -> ``runs[2].placement``."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out


def key_lines(text: str) -> dict[str, int]:
    """Map every key path the file writes (``runs[2].placement``, ``sweep.params.n``) to its
    1-based line, following ``[table]`` and ``[[array]]`` headers as TOML does."""
    counts: dict[str, int] = {}
    out: dict[str, int] = {}
    table = ""
    for n, line in enumerate(text.splitlines(), 1):
        m = _ARRAY_HEADER.match(line) or _HEADER.match(line)
        if m:
            parts = [p.strip().strip('"') for p in m.group(1).split(".")]
            is_array = bool(_ARRAY_HEADER.match(line))
            path = ""
            for i, part in enumerate(parts):
                raw = ".".join(parts[: i + 1])
                path = f"{path}.{part}" if path else part
                last = i == len(parts) - 1
                if last and is_array:
                    counts[raw] = counts.get(raw, 0) + 1
                if raw in counts:
                    path += f"[{counts[raw] - 1}]"
            table = path
            out.setdefault(table, n)
            continue
        k = _KEY.match(line)
        if k:
            key = f"{table}.{k.group(1)}" if table else k.group(1)
            out.setdefault(key, n)
            if not line.rstrip().endswith("]") and line.rstrip().endswith("["):
                out.setdefault(key + "[]", n)  # a list written one element per line
    return out


def where(path: Path, text: str, key: str) -> str:
    """``file:line`` of ``key`` (or of the nearest enclosing key or table it is written in)."""
    lines = key_lines(text)
    probe = key
    while probe:
        if probe in lines:
            return f"{path}:{lines[probe]}"
        m = re.fullmatch(r"(.*)\[(\d+)\]", probe)
        if m and m.group(1) + "[]" in lines:
            return f"{path}:{lines[m.group(1) + '[]'] + int(m.group(2)) + 1}"
        probe = m.group(1) if m else probe.rpartition(".")[0]
    return str(path)


def _model_at(model: type[BaseModel], loc: tuple[Any, ...]) -> type[BaseModel] | None:
    """The model class that holds the last key of ``loc`` (to list its accepted keys)."""
    current: Any = model
    for part in loc[:-1]:
        if isinstance(part, int):
            continue
        if not (isinstance(current, type) and issubclass(current, BaseModel)) or part not in current.model_fields:
            return None
        current = _inner_model(current.model_fields[part].annotation)
    return current if isinstance(current, type) and issubclass(current, BaseModel) else None


def _inner_model(annotation: Any) -> Any:
    """``Optional[list[RunPatch]]`` -> ``RunPatch``."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in typing.get_args(annotation):
        found = _inner_model(arg)
        if found is not None:
            return found
    return None


def _message(err: dict[str, Any], model: type[BaseModel]) -> str:
    kind, ctx, value = err["type"], err.get("ctx") or {}, err.get("input")
    if kind == "extra_forbidden":
        holder = _model_at(model, err["loc"])
        accepted = ", ".join(holder.model_fields) if holder else ""
        return f"unknown key (expected one of: {accepted})" if accepted else "unknown key"
    if kind == "literal_error":
        expected = str(ctx.get("expected", "")).replace("'", "")
        return f"{value!r} is not accepted (expected one of: {expected.replace(' or ', ', ')})"
    if kind == "missing":
        return "required key is missing"
    if kind == "value_error":
        return str(ctx.get("error", err["msg"]))
    return f"{err['msg'][0].lower()}{err['msg'][1:]}, got {value!r}"


def _location(loc: tuple[Any, ...]) -> tuple[Any, ...]:
    # pydantic adds union-branch names (``str``, ``function-after[...]``) to locations; drop them.
    return tuple(p for p in loc if isinstance(p, int) or ("[" not in str(p) and str(p) not in ("str", "int", "float", "bool")))


def study_error(e: ValidationError, path: Path, text: str, model: type[BaseModel]) -> UsageError:
    errors = e.errors(include_url=False)
    loc = _location(errors[0]["loc"])
    first = dict(errors[0], loc=loc)
    key = key_path(loc) or "(top level)"
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return UsageError(f"{where(path, text, key)}: {key}: {_message(first, model)}{more}")


def located(path: Path, text: str, key: str, message: str) -> UsageError:
    """An error found after validation (expansion, machine or workload checks), at ``key``."""
    return UsageError(f"{where(path, text, key)}: {key}: {message}")
