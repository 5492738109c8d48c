"""A small, safe, bounded expression language for workload descriptors.

Sizes and counts in a descriptor depend on parameters (``"8 * n * n"``, ``"niter * 25"``,
``"'master' if init == 'serial' else 'block'"``). Only arithmetic, comparisons, boolean
operators, conditional expressions, parameter names and the functions below are allowed; anything
else is rejected with the offending text, so a descriptor can never run code.

A descriptor comes from strangers, so evaluation is bounded as well as safe: arithmetic takes
numbers only (text may be compared and chosen, never computed with), every value, intermediate
ones included, is finite with ``|x| <= 2^63``, an exponent is checked before the power is
computed, and an expression is at most ``MAX_TEXT`` characters and ``MAX_DEPTH`` operators deep.
Each step then costs at most a few machine words, so any expression ends in microseconds.
"""

from __future__ import annotations

import ast
import math
import operator
from typing import Any, Callable, Mapping

from numalab.exceptions import UsageError

#: Largest magnitude of any value an expression computes: what a signed 64-bit integer holds.
MAX_VALUE = 2**63
#: Longest expression text; the library's longest is under 100 characters.
MAX_TEXT = 1000
#: Deepest nesting of operators and calls; the library's deepest is under 10.
MAX_DEPTH = 64

_BINOPS = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_CMPOPS = {
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
}
_FUNCS: dict[str, Callable[..., Any]] = {
    "min": min,
    "max": max,
    "ceil": math.ceil,
    "floor": math.floor,
    "log2": math.log2,
    "int": int,
    "round": round,
}
#: Arguments each function takes (round's digit count would size a power of ten: one argument).
_ARITY = {"min": (1, 16), "max": (1, 16), "ceil": (1, 1), "floor": (1, 1), "log2": (1, 1), "int": (1, 1), "round": (1, 1)}


class _Bound(Exception):
    """A value or a step beyond the bounds; the message says which."""


def is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def check_value(v: Any) -> Any:
    """``v`` if it is text, a truth value or a finite number of magnitude at most 2^63."""
    if isinstance(v, float) and not math.isfinite(v):
        raise _Bound(f"{v} is not a finite number")
    if is_number(v) and abs(v) > MAX_VALUE:
        raise _Bound(f"{_magnitude(v)} is beyond the bound |x| <= 2^63")
    return v


def _magnitude(v: int | float) -> str:
    """A number as written when short, else as 2^k (Python refuses to print ints beyond 4300 digits)."""
    if abs(v) < 1e15:
        return repr(v)
    return f"~2^{abs(v).bit_length() - 1}" if isinstance(v, int) else f"{v:.3g}"


def _short(text: str) -> str:
    """Expression text for a message: long ones cut, so an error stays one readable line."""
    return text if len(text) <= 80 else text[:77] + "..."


def evaluate(text: Any, env: Mapping[str, Any], where: str) -> Any:
    """Evaluate ``text`` if it is a string expression; numbers and booleans pass through, checked.

    A string that is not a valid expression over ``env`` is returned as is only when it is a
    plain word not naming a parameter (``"block"``); ``where`` names the key in errors.
    """
    if not isinstance(text, str):
        try:
            return check_value(text)
        except _Bound as e:
            raise UsageError(f"{where}: {e}") from None
    if len(text) > MAX_TEXT:
        raise UsageError(f"{where}: expression of {len(text)} characters; at most {MAX_TEXT} are accepted")
    try:
        tree = ast.parse(text, mode="eval")
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        raise UsageError(f"{where}: cannot parse expression '{_short(text)}'") from None
    if isinstance(tree.body, ast.Name) and tree.body.id not in env and tree.body.id not in _FUNCS:
        return text  # a bare word: an enum value such as a pattern name
    try:
        return _eval(tree.body, env, where, text, 0)
    except _Bound as e:
        raise UsageError(f"{where}: cannot evaluate '{_short(text)}': {e}") from None
    except (ArithmeticError, ValueError, TypeError) as e:
        raise UsageError(f"{where}: cannot evaluate '{_short(text)}': {e}") from None


def _num(v: Any, what: str) -> int | float:
    """A number for arithmetic; truth values count as 0/1 as in Python, text is refused."""
    if isinstance(v, bool):
        return int(v)
    if not is_number(v):
        raise _Bound(f"{what} takes numbers, got {v!r}")
    return v


def _power(base: int | float, exp: int | float) -> int | float:
    """``base ** exp``, refused before computing when the result would exceed 2^63."""
    if exp > 0 and abs(base) > 1 and exp * math.log2(abs(base)) > 63:
        raise _Bound(f"{_magnitude(base)} ** {_magnitude(exp)} is beyond the bound |x| <= 2^63")
    if exp < 0 and base == 0:
        raise _Bound("0 cannot be raised to a negative power")
    # Otherwise |result| <= 2^63 or |base| <= 1: square-and-multiply takes at most 64 steps.
    r = base**exp
    if isinstance(r, complex):
        raise _Bound(f"{base} ** {exp} is not a real number")
    return r


def _eval(node: ast.AST, env: Mapping[str, Any], where: str, text: str, depth: int) -> Any:
    if depth > MAX_DEPTH:
        raise _Bound(f"nested more than {MAX_DEPTH} deep")
    d = depth + 1
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float, str, bool)):
        return check_value(node.value)
    if isinstance(node, ast.Name):
        if node.id not in env:
            known = ", ".join(sorted(env))
            raise UsageError(f"{where}: unknown name '{node.id}' in '{_short(text)}' (parameters: {known})")
        return check_value(env[node.id])
    if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
        sym = type(node.op).__name__
        left = _num(_eval(node.left, env, where, text, d), sym)
        right = _num(_eval(node.right, env, where, text, d), sym)
        if isinstance(node.op, ast.Pow):
            return check_value(_power(left, right))
        return check_value(_BINOPS[type(node.op)](left, right))
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd, ast.Not)):
        v = _eval(node.operand, env, where, text, d)
        if isinstance(node.op, ast.Not):
            return not v
        v = _num(v, "sign")
        return -v if isinstance(node.op, ast.USub) else +v
    if isinstance(node, ast.Compare) and all(type(o) in _CMPOPS for o in node.ops):
        left = _eval(node.left, env, where, text, d)
        for op, comp in zip(node.ops, node.comparators):
            right = _eval(comp, env, where, text, d)
            if not _CMPOPS[type(op)](left, right):
                return False
            left = right
        return True
    if isinstance(node, ast.BoolOp):
        vals = [_eval(v, env, where, text, d) for v in node.values]
        return all(vals) if isinstance(node.op, ast.And) else any(vals)
    if isinstance(node, ast.IfExp):
        cond = _eval(node.test, env, where, text, d)
        return _eval(node.body if cond else node.orelse, env, where, text, d)
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in _FUNCS
        and not node.keywords
    ):
        name = node.func.id
        low, high = _ARITY[name]
        if not low <= len(node.args) <= high:
            raise _Bound(f"{name}() takes {low if low == high else f'{low} to {high}'} argument(s), got {len(node.args)}")
        args = [_num(_eval(a, env, where, text, d), f"{name}()") for a in node.args]
        return check_value(_FUNCS[name](*args))
    raise UsageError(f"{where}: '{_short(text)}' uses something a descriptor expression cannot ({type(node).__name__})")
