"""Attribute debt (issue 49, item 2): a middle ends only where the attributes that the class around it loads on
`self`/`cls` outside the middle are assigned or defined somewhere, as the name judge's ends need the right context's
names bound (`fimlsp.python.members` asks at each end).

Owed only where the class's text and its ancestry are the whole truth of its instances: no decorator or class
keyword, no dynamic attributes in the file, and no base but `object` or bases whose ancestry is known
(`fimlsp.python.inherited`: held-out uvicorn's WSProtocol(asyncio.Protocol)). And then only by a middle in
`__init__` of a class whose `__init__` sets up its state (a method may load what subclasses define), or anywhere in
a typed class (every method outside the middle annotates its return), whose loads a type checker holds to the
class's own definitions: uvicorn's BaseReload.run calls `self.startup()`, and a middle that drops `def startup`
owes it.
For a middle of one line the class is parsed once per line, whatever is typed on it (`_outside_line`); a file
whose context loads no attribute that nothing around the middle stores owes nothing, unparsed.
"""

from __future__ import annotations

import ast
import functools
import re
import threading
from collections import OrderedDict
from dataclasses import dataclass

from fimlsp.lines import line_bounds
from fimlsp.python.analysis import quoted_names, slot_names, stored_attributes
from fimlsp.python.class_facts import binds_receiver, meant_for_subclasses, sets_up_state
from fimlsp.python.class_text import class_lines, in_plain_class, subclass_names
from fimlsp.python.inherited import BaseReader, BasesPending, Inherited
from fimlsp.syntax_trees import parsed

_DYNAMIC_ATTRIBUTES = re.compile(r"\bsetattr\s*\(|\bvars\s*\(|\b__dict__\b|\b__getattr__\b|\b__setattr__\b")
# What may say on a line that subclasses complete the class (`meant_for_subclasses`).
_SUBCLASSES_MEANT = re.compile(r"NotImplementedError|subclass", re.IGNORECASE)
# An attribute loaded on `self` or `cls` (not stored), where a typed class may owe it wherever it is.
_SELF_LOADED = re.compile(r"(?<![\w.])(?:self|cls)[ \t]*\.[ \t]*([A-Za-z_]\w*)(?![ \t]*(?::[^=\n]*)?=(?!=))")
_IGNORED = re.compile(r"#[ \t]*(?:type|pyright):[ \t]*ignore")


class AttributeDebt:
    """What the middles of one completion owe, with what is the same for all of them worked out once."""

    def __init__(self, left: str, right: str, bases: BaseReader | None = None):
        self.left, self.right, self.bases = left, right, bases
        self._possibly: frozenset[str] | None = None  # `_possibly_owed`, at the first end asked about
        self._outside: _Owed | frozenset | None = None  # what a middle of one line must store (`attribute_debt`)

    def owed(self, text: str) -> frozenset[str]:
        """The attributes the middle of the whole file `text` (which compiles) leaves owed (`attribute_debt`), of
        those the file around it loads and nowhere defines (`_possibly_owed`: a mixin's method may load what a
        sibling class of the file defines)."""
        if not (text.startswith(self.left) and text.endswith(self.right)):
            return frozenset()
        try:
            return self._owed(text)
        except BasesPending:  # the bases' answer is late: owed nothing now, and asked again at the next end
            return frozenset()

    def prefetch(self) -> None:
        """Ask about the bases of the class around the cursor where it has some, without waiting (the answer is
        kept for the ends)."""
        if self.bases is not None:
            try:
                _cursor_bases(self.left, self.left.count("\n") + 1, self.bases, wait=False)
            except BasesPending:
                pass

    def _owed(self, text: str) -> frozenset[str]:
        if self._possibly is None:
            self._possibly = _possibly_owed(self.left, self.right, self.bases)
        start, end = len(self.left), len(text) - len(self.right)
        middle = text[start:end]
        if not self._possibly or not self._possibly - stored_attributes(middle):
            return frozenset()  # the whole file's parse below only where the middle may leave something unassigned
        # The middle's whole line: a middle that begins or ends in a name stores what the line's text says.
        line = text[slice(*line_bounds(text, start, end))]
        if "\n" in middle or _CLASS_WORD.search(line):  # (on a class header's line, its bases are the middle's)
            return attribute_debt(text, start, end, bases=self.bases) & self._possibly
        if _DYNAMIC_ATTRIBUTES.search(line) or _SUBCLASSES_MEANT.search(line):
            return frozenset()  # (what the whole file's `attribute_debt` reads on the line: owed nothing)
        if self._outside is None:
            self._outside = _outside_line(text, start, end, self.bases)
        owed = self._outside
        if not owed or not (owed.typed or owed.set_up or owed.init_receiver and re.search(
                r"(?<![\w.])" + owed.init_receiver + r"[ \t]*\.[ \t]*\w+[ \t]*(?::[^=\n]*)?=(?!=)", line)):
            return frozenset()  # no state set up in __init__ (but by the middle): a base meant to be subclassed
        return (owed.names & self._possibly) - _stored_in(line)


_LOADED = re.compile(r"\.[ \t]*([A-Za-z_]\w*)(?![ \t]*(?::[^=\n]*)?=(?!=))")
_DEFINED = re.compile(r"\b(?:def|class)[ \t]+([A-Za-z_]\w*)|^[ \t]+([A-Za-z_]\w*)[ \t]*(?::[^=\n]*)?=(?!=)",
                      re.MULTILINE)


@dataclass(frozen=True)
class _Owed:
    """What a middle of one line owes whatever it is, where the class is `typed`, its `__init__` sets up its state
    outside the middle (`set_up`), or the middle is in `__init__`, whose first parameter is `init_receiver`, and
    stores on it."""

    names: frozenset[str]
    set_up: bool
    init_receiver: str | None
    typed: bool = False


# What a middle of one line owes whatever it is (`attribute_debt(outside=True)`), by the file's text outside that
# line: the same for every middle of the line, and so for every keystroke on it (`_outside_line`).
_OUTSIDE_LINES = 8
_OUTSIDE: OrderedDict[tuple[str, str], _Owed | frozenset] = OrderedDict()
_OUTSIDE_LOCK = threading.Lock()


def _outside_line(text: str, start: int, end: int, bases: BaseReader | None) -> _Owed | frozenset:
    """`attribute_debt(text, start, end, outside=True)` for a middle of one line on no class header's line,
    remembered by the text outside the middle's line, which is all it reads (the line's own stores are
    `_stored_in(line)`'s, its dynamic attributes `AttributeDebt.owed`'s): the class is parsed once a line, not once
    a keystroke."""
    line_start, line_end = line_bounds(text, start, end)
    key = (text[:line_start], text[line_end:], bases and bases.key)
    with _OUTSIDE_LOCK:
        found = _OUTSIDE.get(key)
        if found is not None:
            _OUTSIDE.move_to_end(key)
            return found
    found = attribute_debt(text, start, end, outside=True, bases=bases)
    with _OUTSIDE_LOCK:
        _OUTSIDE[key] = found
        while len(_OUTSIDE) > _OUTSIDE_LINES:
            _OUTSIDE.popitem(last=False)
    return found


_CLASS_WORD = re.compile(r"\bclass\b")
# What a middle may store or define: an attribute before an assignment (augmented too), a target list's comma or
# bracket or a `for` target's `in`; a name before an assignment; a function or class name; a quoted name.
_MIDDLE_STORES = re.compile(r"\.[ \t]*([A-Za-z_]\w*)[ \t]*(?:[-+*/%&|^@<>]{0,2}=(?!=)|:|,|\)|\]|in\b)"
                            r"|\b([A-Za-z_]\w*)[ \t]*(?::[^=\n]*)?=(?!=)|\b(?:def|class)[ \t]+([A-Za-z_]\w*)"
                            r"|['\"]([A-Za-z_]\w*)['\"]")


def _stored_in(line: str) -> set[str]:
    """Every name the line of a middle of one line may store as an attribute or bind in a class body (more, never
    fewer)."""
    return {name for group in _MIDDLE_STORES.findall(line) for name in group if name}


def _possibly_owed(left: str, right: str, bases: BaseReader | None) -> frozenset[str]:
    """Every attribute the right context loads that nothing in the file around the middle stores, defines or names
    and that the cursor's class does not inherit: a superset of any `attribute_debt` (which then needs the middle
    to store one of them)."""
    line_start = left.rfind("\n") + 1
    line_end = right.find("\n") if "\n" in right else len(right)
    taken, self_loaded, loaded = _around_line(left[:line_start], right[line_end:])
    line_left, line_right = left[line_start:], right[:line_end]
    loads = loaded | set(_LOADED.findall(line_right))
    line = left.count("\n") + 1
    if in_plain_class(left, line):  # a typed class may owe what it loads before the middle too
        loads |= self_loaded | set(_SELF_LOADED.findall(line_left))
    elif bases is not None and (found := _cursor_bases(left, line, bases)) is not None:
        loads = (loads | self_loaded | set(_SELF_LOADED.findall(line_left))) - found.names
    return frozenset(loads - taken - _taken(line_left + line_right) - set(dir(object)))


def _taken(text: str) -> set[str]:
    """The names `text` defines (`def`, `class`, a class body's assignment), stores as an attribute, lists in
    `__slots__` or quotes."""
    return ({name for pair in _DEFINED.findall(text) for name in pair if name} | stored_attributes(text)
            | slot_names(text) | quoted_names(text))


@functools.lru_cache(maxsize=8)  # the latest lines typed on
def _around_line(above: str, below: str) -> tuple[frozenset[str], frozenset[str], frozenset[str]]:
    """What the lines above and below the cursor's take (`_taken`), what those above load on `self` or `cls`, and
    what those below load after a dot: read once per line, as the keystrokes on it change none of them (the
    patterns read a line at a time, so the parts read apart find what the whole file does, but `__slots__`
    declarations that the cursor's line splits, whose names are then owed no less)."""
    return (frozenset(_taken(above) | _taken(below)), frozenset(_SELF_LOADED.findall(above)),
            frozenset(_LOADED.findall(below)))


def _cursor_bases(left: str, line: int, bases: BaseReader, wait: bool = True) -> Inherited | None:
    """What the class around the cursor (at `line` of `left`, 1-based) inherits, read from its header alone (which
    the left context holds whole); None where no class holds the cursor, its header does not parse so, or its
    ancestry is not known. Without `wait`, only an answer that is ready (`BaseReader`)."""
    span = class_lines(left, line)
    if span is None:
        return None
    lines = left.split("\n")
    first = span[0]
    indent = len(lines[first]) - len(lines[first].lstrip())
    for last in range(first + 1, min(first + 12, line)):  # (a header of several lines: its brackets' lines)
        block = ("\n" * (first - 1) + "if 1:\n" if indent else "\n" * first) + "\n".join(lines[first:last])
        try:
            tree = parsed(block + "\n" + " " * (indent + 4) + "pass")
        except (SyntaxError, ValueError, MemoryError, RecursionError):
            continue
        holder = next((node for node in ast.walk(tree) if isinstance(node, ast.ClassDef)), None)
        return None if holder is None or not holder.bases else bases(left, holder, wait)
    return None


def attribute_debt(text: str, start: int, end: int, outside: bool = False, bases: BaseReader | None = None):
    """The attributes that the innermost class holding the middle (`text[start:end]`), where its `__init__` sets up its
    state, loads on its methods' first parameter after the middle and not before it (in a typed class: before or
    after it, but on a line a type checker is told to ignore), that neither the class nor anything in the file
    assigns (an attribute store on any receiver, the class body's names, its subclasses' in the file, `__slots__`)
    and that no string of the file names (`getattr(self, "x")` guards), nor its bases (`bases`, which reads them;
    a stub's ancestry leaves only public names owed). Classes whose attributes may come from elsewhere owe
    nothing: bases other than `object` whose ancestry is not known (or no `bases`), decorators, keywords (a
    metaclass), and files that set attributes dynamically (`setattr`, `__dict__`, `__getattr__`, `__setattr__`).
    `outside`, for a middle of one line: `_Owed`, what the rest of the file leaves unassigned, whatever the middle's
    line (its stores not counted, which `AttributeDebt.owed` finds by pattern)."""
    first_line, last_line = text.count("\n", 0, start) + 1, text.count("\n", 0, _code_end(text, start, end)) + 1
    line_start, line_end = line_bounds(text, start, end)
    around = text[:line_start] + "\n" + text[line_end:] if outside else text
    if _DYNAMIC_ATTRIBUTES.search(around):
        return frozenset()
    holder = _holder(_class_tree(text, first_line), first_line, last_line)
    inherited = None if holder is None else _inherited(text, holder, bases)
    if inherited is None:
        return frozenset()
    left_out = first_line if outside else 0  # the line whose statements are the middle's
    typed = _typed(holder, first_line, last_line)
    if not typed and meant_for_subclasses(holder, left_out):
        return frozenset()
    assigned = (stored_attributes(around) | slot_names(around) | quoted_names(around) | set(dir(object))
                | inherited.names)
    assigned |= subclass_names(text, holder.lineno + 1)  # a base's method may load what its subclasses define
    for statement in holder.body:  # the class body's names, in conditional blocks too (`if os.name != "nt": def`)
        for node in ast.walk(statement):
            if getattr(node, "lineno", 0) == left_out:
                continue
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                assigned.add(node.id)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                assigned.add(node.name)
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                assigned.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
    if not typed and not any(isinstance(method, ast.FunctionDef) and method.name == "__init__"
                             and method.lineno < first_line <= (method.end_lineno or 0) for method in holder.body):
        return frozenset()  # owed only by `__init__`: a method may load what subclasses define (idlelib's
        # SearchDialogBase.open loads self.default_command)
    set_up = sets_up_state(holder, left_out)
    if not set_up and not outside and not typed:
        return frozenset()  # a base meant to be subclassed (its attributes are its subclasses')
    loads, excused = set(), set()
    lines = text.split("\n")
    for method in holder.body:
        if not isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef)) or not method.args.args or any(
                not binds_receiver(decorator) for decorator in method.decorator_list):
            continue
        receiver = method.args.args[0].arg
        for node in ast.walk(method):
            if (isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load)
                    and isinstance(node.value, ast.Name) and node.value.id == receiver):
                if typed:  # wherever it is loaded, but on the middle's lines or a line the checker ignores
                    if not first_line <= node.lineno <= last_line and not _IGNORED.search(lines[node.lineno - 1]):
                        loads.add(node.attr)
                elif node.lineno < first_line:
                    excused.add(node.attr)  # loaded before the middle too: unassigned whatever the middle
                elif node.lineno > last_line:
                    loads.add(node.attr)
            elif isinstance(node, ast.Attribute) and not isinstance(node.ctx, ast.Load) and node.lineno != left_out:
                assigned.add(node.attr)
    if inherited.public_only:
        loads = {name for name in loads if not name.startswith("_")}
    if outside:
        init = next((method for method in holder.body if isinstance(method, ast.FunctionDef)
                     and method.name == "__init__" and method.args.args
                     and method.lineno < first_line <= (method.end_lineno or 0)), None)
        return _Owed(frozenset(loads - assigned - excused), set_up, init and init.args.args[0].arg, typed)
    return frozenset(loads - assigned - excused)


def _code_end(text: str, start: int, end: int) -> int:
    """Where the code of the middle `text[start:end]` ends: before the lines of blanks and comments it ends with,
    which lie in no class as `ast` places it (a class ends at its last statement; held-out uvicorn workers.py: a
    middle that ended `# Don't let the SIG_DFLAGS` on a line of its own was in no class, and owed nothing)."""
    lines = text[start:end].split("\n")
    while len(lines) > 1 and (not lines[-1].strip() or lines[-1].lstrip().startswith("#")):
        lines.pop()
    return start + len("\n".join(lines))


def _holder(tree: ast.Module | None, first_line: int, last_line: int) -> ast.ClassDef | None:
    """The innermost class statement of `tree` that holds the lines `first_line` to `last_line`."""
    holder = None
    for node in ast.walk(tree) if tree is not None else ():
        if isinstance(node, ast.ClassDef) and node.lineno <= first_line and (node.end_lineno or 0) >= last_line:
            if holder is None or node.lineno > holder.lineno:
                holder = node
    return holder


def _inherited(text: str, holder: ast.ClassDef, bases: BaseReader | None) -> Inherited | None:
    """What `holder`'s instances have from its bases: nothing but object's where it has no other; None where that
    is not known (no `bases` to ask), or where a decorator or a class keyword (a metaclass) may add anything."""
    if holder.decorator_list or holder.keywords:
        return None
    if all(isinstance(base, ast.Name) and base.id == "object" for base in holder.bases):
        return Inherited(frozenset())
    return None if bases is None else bases(text, holder)


def _typed(holder: ast.ClassDef, first_line: int, last_line: int) -> bool:
    """Every method of the class outside the middle's lines (two at least) annotates its return: code a type
    checker reads, which defines on the class what its methods load."""
    methods = [node for node in holder.body if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
               and ((node.end_lineno or node.lineno) < first_line or node.lineno > last_line)]
    return len(methods) >= 2 and all(method.returns is not None for method in methods)


def _class_tree(text: str, line: int) -> ast.Module | None:
    """A tree of `text` that holds the class around `line` (1-based) with its own line numbers: the class's lines
    alone where they parse so (a finish search asks of many texts), else the whole text; None where neither parses
    or the class is decorated."""
    span = class_lines(text, line)
    if span is not None:
        lines = text.split("\n")
        first, last = span
        if first and lines[first - 1].lstrip().startswith("@"):
            return None
        if first and lines[first][:1] in (" ", "\t"):
            block = "\n" * (first - 1) + "if 1:\n" + "\n".join(lines[first:last])
        else:
            block = "\n" * first + "\n".join(lines[first:last])
        try:
            return parsed(block)
        except (SyntaxError, ValueError, MemoryError, RecursionError):
            pass
    try:
        return parsed(text)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None


