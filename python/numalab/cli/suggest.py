"""Did you mean: the closest known spelling of a mistyped option or parameter, in one line
(``numalab: no such option --interleav for numalab sim; did you mean --interleave?``).

Commands that take workload or graph parameters as ``--name value`` accept unknown options, so a
mistyped option reaches them as a parameter: :func:`check_params` judges those names against the
command's own options and the parameters the workload (or graph) has, together."""

from __future__ import annotations

import difflib
import re
from typing import Iterable, Optional

import click

from numalab.exceptions import UsageError


def closest(word: str, candidates: Iterable[str]) -> Optional[str]:
    """The candidate nearest ``word`` (difflib's ratio >= 0.6), or None."""
    found = difflib.get_close_matches(word, sorted(set(candidates)), n=1, cutoff=0.6)
    return found[0] if found else None


def hint(word: str, candidates: Iterable[str]) -> str:
    """``"; did you mean X?"`` or ``""``."""
    best = closest(word, candidates)
    return f"; did you mean {best}?" if best else ""


def long_options(command: click.Command) -> list[str]:
    """Every ``--name`` a command takes (aliases and ``--no-x`` switches included)."""
    return [o for p in command.params if isinstance(p, click.Option) for o in (*p.opts, *p.secondary_opts) if o.startswith("--")]


def no_such_option(e: click.NoSuchOption) -> str:
    """click's NoSuchOption as one line with at most one suggestion."""
    where = f" for {e.ctx.command_path}" if e.ctx is not None else ""
    candidates = list(e.possibilities or []) or (long_options(e.ctx.command) if e.ctx is not None else [])
    return f"no such option {e.option_name}{where}" + hint(e.option_name, candidates)


def unknown_short_option(arg: str) -> str:
    """A one-letter option the running command does not take (workload parameters are long)."""
    ctx = click.get_current_context(silent=True)
    where = f" for {ctx.command_path}" if ctx is not None else ""
    return f"no such option {arg}{where} (workload parameters are given as --name value)"


def check_params(given: Iterable[str], accepted: Iterable[str], owner: str) -> None:
    """Refuse a parameter name ``owner`` (``workload stream``) does not have, suggesting the
    nearest of its parameters and of the running command's options."""
    accepted = list(accepted)
    unknown = [k for k in given if k not in accepted]
    if not unknown:
        return
    key = unknown[0]
    flag = "--" + key.replace("_", "-")
    params = ["--" + p.replace("_", "-") for p in accepted]
    ctx = click.get_current_context(silent=True)
    options = long_options(ctx.command) if ctx is not None else []
    what = f"neither an option of {ctx.command_path} nor a parameter" if ctx is not None else "not a parameter"
    listed = ", ".join(sorted(params)) or "none"
    raise UsageError(f"{flag} is {what} of {owner} ({listed}){hint(flag, options + params)}")


_NO_SUCH_COMMAND = re.compile(r"^No such command '(.+)'\.")


def usage_message(e: click.UsageError) -> str:
    """click's usage error as one line; a mistyped command of any group gets its nearest command."""
    found = _NO_SUCH_COMMAND.match(e.message)
    if found and e.ctx is not None and isinstance(e.ctx.command, click.Group):
        name = found.group(1)
        return f"no such command '{name}' for {e.ctx.command_path}" + hint(name, e.ctx.command.list_commands(e.ctx))
    return e.format_message()
