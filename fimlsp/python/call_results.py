"""A member of a call's result that the right context loads, where the middle closed the call (issue 49, members
after a dot): held-out diskcache fanout.py, `return self._remove('evict', args=(tag,` + ` retry))` +
`._remove('cull', retry=retry)`, a member of the int `_remove` returns (pyright: no attribute "_remove" for
`int`). The member judge reads chains of names as the middle writes them, not calls; this is its end's check.

Judged only where jedi infers the result as an instance of one built-in type whose instances take no attribute
(an int, a str, a list...): what such an instance has is fixed, so a name it lacks is an error wherever the call
stands. Any other result, several types, or none, and the middle is not refused. jedi is asked on the analysis's
thread (`Analysis.run`) within the judge's time, and a late answer lets the middle go.
"""

from __future__ import annotations

import hashlib
import re
from concurrent.futures import TimeoutError as FutureTimeout

from fimlsp.python.analysis import Analysis, Answers, judges_script
from fimlsp.python.waits import WaitBudget

_MEMBER_AFTER = re.compile(r"[ \t]*\.[ \t]*([A-Za-z_]\w*)")
# Built-in types without an instance dict: what their instances hold is what the type defines.
_FIXED = {f"builtins.{kind.__name__}": kind for kind in (int, float, complex, bool, str, bytes, bytearray, list,
                                                          tuple, dict, set, frozenset)}
_KEPT = 64  # answers kept: a finish search checks the same end at several of its steps
_ANSWERS = Answers(_KEPT)


def missing_member(analysis: Analysis, text: str, whole: str, left: str, path: str | None,
                   budget: WaitBudget | None) -> str | None:
    """The member that the right context of `whole` (after `text`, which ends the middle; `left` the left context)
    loads on the result of a call the middle closed and that the result's built-in type lacks; None where there is
    none, or it is not known within the `budget`'s time left (None: no bound)."""
    after = _MEMBER_AFTER.match(whole, len(text))
    closed = text.rstrip()
    if after is None or not closed.endswith(")") or len(closed) <= len(left) or after.group(1).startswith("__"):
        return None
    code = closed + whole[len(text):].lstrip()  # (`)) ` and `))` of a finish search are one question)
    line, column = code.count("\n", 0, len(closed)) + 1, len(closed) - (code.rfind("\n", 0, len(closed)) + 1)
    key = (hashlib.blake2b(code.encode("utf-8", "surrogatepass"), digest_size=16).digest(), line, column, path)
    future = _ANSWERS.ask(analysis, key, _result_type, analysis, code, line, column, path)
    try:
        kind = future.result() if budget is None else budget.result(future)
    except FutureTimeout:
        return None
    name = after.group(1)
    return name if kind is not None and name not in dir(kind) else None


def _result_type(analysis: Analysis, code: str, line: int, column: int, path: str | None) -> type | None:
    """The fixed built-in type of every value jedi infers for the call (or bracketed expression) whose `)` ends at
    `line`, `column` of `code`, as it infers a receiver before a dot there when it completes (the completion itself,
    which lists the members, took as long again: 0.3 of fanout's 0.55 s); None where it infers nothing, another
    type, several, or a class or module."""
    from jedi.inference.helpers import infer_call_of_leaf

    try:
        script, _path = judges_script(code, path, analysis.project, "results")
        leaf = script._module_node.get_leaf_for_position((line, column))
        if leaf is None or leaf.type != "operator" or leaf.value != ")" or leaf.end_pos != (line, column):
            return None
        values = infer_call_of_leaf(script._get_module_context().create_context(leaf), leaf)
        kinds = {None if value.is_class() or value.is_module() else _full_name(value.py__class__())
                 for value in values}
    except Exception:  # jedi's inner API on odd code: not known
        return None
    return _FIXED.get(kinds.pop()) if len(kinds) == 1 else None


def _full_name(kind) -> str:
    """The module and name of jedi's class value `kind` (`builtins.int`)."""
    return f"{kind.get_root_context().py__name__()}.{kind.py__name__()}"
