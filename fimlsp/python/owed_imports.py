"""The names the code around the cursor loads and nothing binds, made likely where the middle imports them.

A middle that writes `from typing import ` above a body that uses `Annotated` and `Any` with no import of them
owes both: the name judge refuses its end until they are bound (`fimlsp.python.names`), and a small model seldom
writes the ones the file needs (on 240 held-out cuts, 19 of the 63 middles the editors' strict names showed nothing
for owed an import). Where the middle writes the names of a `from M import` line, the owed names that M defines
are weighed against the model's choice as the file's own members are after a dot (`fimlsp.decoding.likely_names`),
and so is a comma after a name while M still defines an owed one; on an `import` line, the owed names that are
modules. It only ranks: what the judges admit is unchanged.

The owed names are pyflakes' undefined loads in the file without the cursor's line (the whole lines of the left
context and of the right context), less every word of that line: its two parts may bind what the rest loads (the
right's `Any` in `from typing import |Any`). Where that text does not parse (a cursor inside a block's header), none
are known.
"""

from __future__ import annotations

import functools
import re
from collections import Counter

from fimlsp.python import lexemes as lx
from fimlsp.python.lexer import LexerState
from fimlsp.python.middle_names import Names
from fimlsp.python.modules import module_found
from fimlsp.python.names import FileNames, undefined_loads

_WORD = re.compile(r"\w+")
_LIST_STARTS = frozenset({"import", ",", "("})  # what the next name of an import list follows


@functools.lru_cache(maxsize=8)
def owed_names(left: str, right: str) -> dict[str, int]:
    """The names the file around the cursor's line loads and nothing binds, with how often it loads each."""
    text = left[:left.rfind("\n") + 1] + (right[right.find("\n") + 1:] if "\n" in right else "")
    loads = undefined_loads(text)
    if not loads:
        return {}
    line = left[left.rfind("\n") + 1:] + right.split("\n", 1)[0]
    written = set(_WORD.findall(line))
    return dict(Counter(name for name, _line in loads if name not in written))


def likely_imports(names: Names, lexer: LexerState) -> tuple[str, dict[str, float]] | None:
    """Where `lexer` has read up to a name of an import list the middle writes (`Names` follows the line), what of
    the list's next item is written and the owed names (or `, ` and an owed name) it may go on with, by how often the
    file loads each, or the line's end once the line imports every owed name M defines; None elsewhere or where none
    is owed."""
    if names.off or not (names.importing or names.import_module == ""):
        return None
    owed = owed_names(names.file.left, names.file.right)
    if not owed:
        return None
    pending = lexer.possible_terminals()
    if pending is None and names.previous in _LIST_STARTS:
        begun = ""
    elif pending is not None and lx.NAME in pending and names.previous in _LIST_STARTS:
        begun = lexer.text
    elif pending == frozenset({","}) and names.importing and names.previous == lx.NAME:
        begun = ","  # the comma after a name, until what follows it is written
    else:
        return None
    remaining = {name: count for name, count in owed.items() if name not in names.written and name != begun}
    if names.importing:  # the names M defines, not the modules it imports (`re` of `from typing import`)
        defined = names.file.imported(names.from_module)
        if defined is None:
            return None
        remaining = {name: count for name, count in remaining.items()
                     if name in defined and not _is_module(names.file, name)}
    else:  # an `import` line: the owed names that are modules
        remaining = {name: count for name, count in remaining.items()
                     if name.startswith(begun) and _is_module(names.file, name)}
    likely = {name: float(count) for name, count in remaining.items() if name.startswith(begun)}
    if names.importing and begun and (begun == "," or begun in defined):
        if remaining:  # the name may end here: a comma and the next owed one
            after = "," if begun == "," else begun + ","
            likely.update({after + " " + name: float(count) for name, count in remaining.items()})
        elif begun != "," and not names.calls and not names.file.right.split("\n", 1)[0].strip():
            likely[begun + "\n"] = 1.0  # every owed name M defines is written: the line ends (the right's is blank)
    return (begun, likely) if likely else None


def _is_module(file: FileNames, name: str) -> bool:
    return module_found(name, file.folder, file.roots)
