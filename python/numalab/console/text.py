"""User text on a terminal: ``printable(text)`` shows control characters as visible escapes.

Labels, study, descriptor and preset names come from files anyone may write; an ESC sequence in
one would otherwise reach the terminal raw (recolour it, move the cursor, retitle the window,
hide what follows), and a carriage return or a bidirectional override could make a line read as
something it is not. Each such character becomes ``\\x1b``, ``\\r``, ``\\u202e``: visible, and
the same in a pipe, a log or a golden file.
"""

from __future__ import annotations

import re

_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
# C0 and C1 controls, DEL, and the Unicode bidirectional embeddings, overrides and isolates.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
_CONTROL_BUT_LINES = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _escape(m: re.Match[str]) -> str:
    c = m.group()
    return _NAMED.get(c) or (f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}")


def printable(text: object, lines: bool = False) -> str:
    """``text`` with every control character shown as an escape; ``lines=True`` keeps newlines
    and tabs (a message of several lines), escaping the rest."""
    return (_CONTROL_BUT_LINES if lines else _CONTROL).sub(_escape, str(text))
