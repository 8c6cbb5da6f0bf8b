"""The names the code around the cursor loads and nothing binds, made likely where the middle may bind them.

A middle that writes `from typing import ` above a body that uses `Annotated` and `Any` with no import of them
owes both: the name judge refuses its end until they are bound (`fimlsp.python.names`), and a small model seldom
writes the ones the file needs (on 240 held-out cuts, of the 63 middles the editors' strict names showed nothing for,
19 owed an import, 14 a parameter or an assignment). Where the middle writes the names of a `from M import` line,
the owed names that M defines are weighed against the model's choice as the file's own members are after a dot
(`fimlsp.decoding.likely_names`), and so is a comma after a name while M still defines an owed one; on an `import`
line, the owed names that are modules; at a parameter of the header of the function the cursor is in, the owed
names its body loads. It only ranks: what the judges admit is unchanged.

The owed names are pyflakes' undefined loads in the file without the cursor's line (the whole lines of the left
context and of the right context), less every word of that line: its two parts may bind what the rest loads (the
right's `Any` in `from typing import |Any`). A cursor's line that begins a function (`def`) is read as `def _():`,
whose body's loads are then the parameters it owes. Where that text does not parse, none are known.
"""

from __future__ import annotations

import ast
import functools
import re
from collections import Counter

from fimlsp.python import lexemes as lx
from fimlsp.python.lexer import LexerState
from fimlsp.python.middle_names import Names
from fimlsp.python.modules import module_found
from fimlsp.python.names import FileNames, syntax_tree, undefined_loads_in

_WORD = re.compile(r"\w+")
_FUNCTION_START = re.compile(r"([ \t]*)(?:async[ \t]+)?def\b")
_LIST_STARTS = frozenset({"import", ",", "("})  # what the next name of an import list follows
_PARAMETER_STARTS = frozenset({"(", ",", "*", "**"})  # what a parameter's name follows in a header's brackets
# Larger files owe nothing here: pyflakes reads 100 kB in about 70 ms, once a cursor's text, inside its time budget.
_MOST_CHARS = 300_000


def owed_names(left: str, right: str) -> dict[str, int]:
    """The names the file around the cursor's line loads and nothing binds, with how often it loads each."""
    return _owed(left, right)[0]


def owed_parameters(left: str, right: str) -> dict[str, int]:
    """The owed names the body of the function whose header the cursor is in loads (none elsewhere)."""
    return _owed(left, right)[1]


@functools.lru_cache(maxsize=8)
def _owed(left: str, right: str) -> tuple[dict[str, int], dict[str, int]]:
    """The owed names of the file and of the body of the function whose header holds the cursor."""
    if len(left) + len(right) > _MOST_CHARS:
        return {}, {}
    before, after = left[:left.rfind("\n") + 1], (right[right.find("\n") + 1:] if "\n" in right else "")
    line = left[left.rfind("\n") + 1:] + _first_line(right)
    number = before.count("\n") + 1  # the cursor's line
    header = _FUNCTION_START.match(line)
    text = before + (header.group(1) + "def _():\n" if header else "") + after
    tree = syntax_tree(text)
    loads = undefined_loads_in(tree, text)
    if not loads:
        return {}, {}
    written = set(_WORD.findall(line))
    owed = [(name, at) for name, at in loads if name not in written]
    body = _function_body(tree, number, bool(header))
    inside = [name for name, at in owed if body is not None and body[0] <= at <= body[1]]
    return dict(Counter(name for name, _at in owed)), dict(Counter(inside))


def _function_body(tree, number: int, stub: bool) -> tuple[int, int] | None:
    """The lines of the body of the function whose header held the cursor's line `number`: the stub `def _():` that
    took its place, or the function whose header spans it (the line taken out: the header's lines before it, the
    body's after)."""
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            if (node.lineno == number) if stub else (node.lineno < number <= node.body[0].lineno):
                return node.body[0].lineno, node.end_lineno
    return None


def likely_bindings(names: Names, lexer: LexerState) -> tuple[str, dict[str, float]] | None:
    """What of the name being written is written, and the owed names (or text that goes on to one) that are likely
    there: an import's (`likely_imports`), a parameter's (`likely_parameters`); None elsewhere."""
    if names.off:
        return None
    return likely_imports(names, lexer) or likely_parameters(names, lexer)


def likely_parameters(names: Names, lexer: LexerState) -> tuple[str, dict[str, float]] | None:
    """At a parameter's name in the header of the function the cursor is in, the names its body loads that nothing
    binds, by how often it loads each; None elsewhere."""
    if not (names.header_free and len(names.calls) == 1 and names.previous in _PARAMETER_STARTS):
        return None
    begun = _begun(lexer)
    if begun is None:
        return None
    owed = owed_parameters(names.file.left, names.file.right)
    likely = {name: float(count) for name, count in owed.items()
              if name.startswith(begun) and name not in names.written}
    return (begun, likely) if likely else None


def _begun(lexer: LexerState) -> str | None:
    """The name in progress where one may be (none yet: ""); None where another token is begun."""
    pending = lexer.possible_terminals()
    if pending is None:
        return ""
    return lexer.text if lx.NAME in pending else None


def likely_imports(names: Names, lexer: LexerState) -> tuple[str, dict[str, float]] | None:
    """Where `lexer` has read up to a name of an import list the middle writes (`Names` follows the line), what of
    the list's next item is written and the owed names (or `, ` and an owed name) it may go on with, by how often the
    file loads each, or the line's end once the line imports every owed name M defines; None elsewhere or where none
    is owed."""
    if not (names.importing or names.import_module == ""):
        return None
    owed = owed_names(names.file.left, names.file.right)
    if not owed:
        return None
    if names.previous in _LIST_STARTS:
        begun = _begun(lexer)
    elif names.importing and names.previous == lx.NAME and lexer.possible_terminals() == frozenset({","}):
        begun = ","  # the comma after a name, until what follows it is written
    else:
        return None
    if begun is None:
        return None
    remaining = {name: count for name, count in owed.items() if name not in names.written and name != begun}
    if names.importing:  # the names M defines, not the modules it imports (`re` of `from typing import`)
        defined = names.file.imported(names.from_module)
        if defined is None:
            return None
        remaining = {name: count for name, count in remaining.items()
                     if name in defined and not _is_module(names.file, name)}
    else:  # an `import` line: the owed names that are modules
        remaining = {name: count for name, count in remaining.items() if _is_module(names.file, name)}
    likely = {name: float(count) for name, count in remaining.items() if name.startswith(begun)}
    if names.importing and begun and (begun == "," or begun in defined):
        if remaining:  # the name may end here: a comma and the next owed one
            after = "," if begun == "," else begun + ","
            likely.update({after + " " + name: float(count) for name, count in remaining.items()})
        elif begun != "," and not names.calls and not _first_line(names.file.right).strip():
            likely[begun + "\n"] = 1.0  # every owed name M defines is written: the line ends (the right's is blank)
    return (begun, likely) if likely else None


def _is_module(file: FileNames, name: str) -> bool:
    return module_found(name, file.folder, file.roots)


def _first_line(text: str) -> str:
    """`text` up to its first line break, without copying the rest (the right context, read at every step)."""
    end = text.find("\n")
    return text if end < 0 else text[:end]
