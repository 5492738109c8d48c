"""A small, safe expression language for workload descriptors.

Sizes and counts in a descriptor depend on parameters (``"8 * n * n"``, ``"niter * 25"``,
``"'master' if init == 'serial' else 'block'"``). Only arithmetic, comparisons, boolean
operators, conditional expressions, parameter names and the functions below are allowed; anything
else is rejected with the offending text, so a descriptor can never run code.
"""

from __future__ import annotations

import ast
import math
import operator
from typing import Any, Mapping

from numalab.exceptions import UsageError

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
_FUNCS = {
    "min": min,
    "max": max,
    "ceil": math.ceil,
    "floor": math.floor,
    "log2": math.log2,
    "int": int,
    "round": round,
}


def evaluate(text: Any, env: Mapping[str, Any], where: str) -> Any:
    """Evaluate ``text`` if it is a string expression; numbers and booleans pass through.

    A string that is not a valid expression over ``env`` is returned as is only when it is a
    plain word not naming a parameter (``"block"``); ``where`` names the key in errors.
    """
    if not isinstance(text, str):
        return text
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError:
        raise UsageError(f"{where}: cannot parse expression '{text}'") from None
    if isinstance(tree.body, ast.Name) and tree.body.id not in env and tree.body.id not in _FUNCS:
        return text  # a bare word: an enum value such as a pattern name
    try:
        return _eval(tree.body, env, where, text)
    except (ArithmeticError, ValueError, TypeError) as e:
        raise UsageError(f"{where}: cannot evaluate '{text}': {e}") from None


def _eval(node: ast.AST, env: Mapping[str, Any], where: str, text: str) -> Any:
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float, str, bool)):
        return node.value
    if isinstance(node, ast.Name):
        if node.id not in env:
            known = ", ".join(sorted(env))
            raise UsageError(f"{where}: unknown name '{node.id}' in '{text}' (parameters: {known})")
        return env[node.id]
    if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
        return _BINOPS[type(node.op)](_eval(node.left, env, where, text), _eval(node.right, env, where, text))
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd, ast.Not)):
        v = _eval(node.operand, env, where, text)
        return -v if isinstance(node.op, ast.USub) else (+v if isinstance(node.op, ast.UAdd) else not v)
    if isinstance(node, ast.Compare) and all(type(o) in _CMPOPS for o in node.ops):
        left = _eval(node.left, env, where, text)
        for op, comp in zip(node.ops, node.comparators):
            right = _eval(comp, env, where, text)
            if not _CMPOPS[type(op)](left, right):
                return False
            left = right
        return True
    if isinstance(node, ast.BoolOp):
        vals = [_eval(v, env, where, text) for v in node.values]
        return all(vals) if isinstance(node.op, ast.And) else any(vals)
    if isinstance(node, ast.IfExp):
        cond = _eval(node.test, env, where, text)
        return _eval(node.body if cond else node.orelse, env, where, text)
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in _FUNCS
        and not node.keywords
    ):
        return _FUNCS[node.func.id](*[_eval(a, env, where, text) for a in node.args])
    raise UsageError(f"{where}: '{text}' uses something a descriptor expression cannot ({type(node).__name__})")
