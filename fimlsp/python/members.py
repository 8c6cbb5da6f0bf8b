"""Members after a dot, judged as the middle is written: `receiver.name` where `name` is not a member of the
receiver is refused, where the receiver's members are known statically (`fimlsp.python.analysis`).

`Members` follows the middle's terminals beside the parser, like the name judge (`fimlsp.python.names`). It keeps
the dotted chain being written (`os.path`, `self._lock`); when a NAME follows its dot, the name must be one of the
receiver's members, and while the name is being written (a token may end mid-name) its text so far must begin one
(`admits`, a prefix search in the sorted members). What it never refuses, so that no middle Python accepts is
refused:
- a receiver whose members are unknown (`Lookup.names` None: no type, `Any`, `__getattr__`, `setattr`, mocks, a
  query past its time bound) or that is not a plain chain of names (`f().x`, `"s".join`);
- a receiver whose first name the middle wrote other than as a receiver (a new binding: `x = Foo()`, a
  parameter, a `for` target), and `self`/`cls` once the middle writes `def`, `class` or `lambda`;
- inside brackets, a receiver that is not a module, `self` or `cls` (a comprehension may bind it after use);
- a store (`self.x = ...`, `obj.y: int = 0`, tuple and `for`/`with` targets): where the chain begins a target, a
  name that is not a member is decided by the next terminal (`=`, `:`, `,`, `)`, `]`, `in` make it a store), and
  is a member of that receiver for the rest of the middle (`self.vbar = Scrollbar()` then `self.vbar.pack()`);
- `import`, `from`, `global`, `nonlocal` and `del` lines.
Receivers are asked of `fimlsp.python.member_lists` once per document and receiver (the cursor's line cut back, so
the keystrokes on a line share one jedi query), the one before the cursor ahead of the prompt's reading, and each
answer is kept per completion (`MemberSource`), so a finish search reads a cached answer; where the cursor is in a
string or a comment, the receiver could not stand there, and is not judged. Dunders (`self.__class__`) and chains
through them are never judged.

Attribute debt: a middle in `__init__` ends only where the attributes that the class around it loads on `self`/`cls`
outside the middle are assigned somewhere (`attribute_debt`), as the name judge's ends need the right context's
names bound.
For a middle of one line the class is parsed once per completion; a file whose right context loads no attribute
that nothing around the middle stores owes nothing, unparsed.
"""

from __future__ import annotations

import ast
import bisect
import re
import time
from dataclasses import dataclass, field, replace

from fimlsp.python import lexemes as lx
from fimlsp.python.analysis import Analysis, Lookup, slot_names, stored_attributes
from fimlsp.python.class_facts import binds_receiver, meant_for_subclasses, sets_up_state
from fimlsp.python.folding import fold
from fimlsp.python.member_lists import QUERY_SECONDS, class_lines, member_lists
from fimlsp.python.syntax import parsed

_FREE_LINES = frozenset({"import", "from", "global", "nonlocal", "del"})
_DEFINING = frozenset({"def", "class", "lambda"})
_STORE_NEXT = frozenset({"=", ":", ",", ")", "]", "in"})
# After these a chain starts a target: a statement's start, `for`, `as` (and a comma or, chained, an `=` outside
# brackets: `self.recv = self.recv_bytes = _in.get`).
_TARGET_STARTS = frozenset({lx.NEWLINE, lx.INDENT, lx.DEDENT, ";", "for", "as"})
# What may follow an attribute that is stored: an assignment, an annotation, a target list's comma or bracket, a
# `for` target's `in` (or a line continuation, not read further).
_STORE_AFTER = re.compile(r"[ \t]*(?:=(?!=)|:(?!=)|,|\)|\]|in\b|\\)")
_LIST_NEXT = frozenset({",", ")", "]"})
_STORED_LATER = re.compile(r"[^\n]*(?:=|\bin\b|\\\n)")
_DYNAMIC_ATTRIBUTES = re.compile(r"\bsetattr\s*\(|\b__dict__\b|\b__getattr__\b|\b__setattr__\b")
_QUOTED_NAME = re.compile(r"""['"]([A-Za-z_]\w*)['"]""")
_SELF = frozenset({"self", "cls"})
_CONSTANT = re.compile(r"[A-Z][A-Z0-9_]*\Z")
_TRAILING_CHAIN = re.compile(r"[\w.]*\Z")
# A string the lexer still holds but that is closed (`"path"`, `""`): the text after it is code.
_CLOSED_STRINGS = frozenset(parts[part] for parts in lx.S_STRING.values() for part in ("end", "empty"))


def ends_in_code(token: int) -> bool:
    """Whether a text the lexer has read up to `token` (its state) ends in code, where a receiver may stand: not
    in a comment, a line continuation or a string still open (a closed one, `{"path": self.`, is code)."""
    return token not in lx.SKIPPED and (token not in lx.STRING_STATES or token in _CLOSED_STRINGS)


@dataclass(eq=False)
class MemberSource:
    """What the middle's receivers are asked of: the analysis, the file around the middle, and the answers so far
    (one per receiver: a completion asks the analysis at most once per receiver)."""

    analysis: Analysis
    left: str
    right: str
    path: str | None = None
    seconds: float | None = QUERY_SECONDS
    answers: dict[str, Lookup] = field(default_factory=dict)
    relaxed: list[str] = field(default_factory=list)  # why receivers went unjudged (timeouts, dynamic ones)
    waited: float = 0.0  # seconds spent waiting on the analysis (the judge's added time)
    # The left context ends in code (not in a string or comment), where a receiver may be asked about.
    in_code: bool = True
    # The innermost bracket open at the cursor is a brace: a name quoted just before it is a key or an element of a
    # dict or set display (`{"path"` + `: self.path`), not what an attribute guard tests.
    in_braces: bool = False
    # What the middle may owe (`_possibly_owed`), worked out at the first end asked about.
    owed: frozenset[str] | None = None
    owed_outside: _Owed | frozenset | None = None  # what a middle of one line must store (`attribute_debt`)

    def lookup(self, receiver: str) -> Lookup:
        found = self.answers.get(receiver)
        if found is None and not self.in_code:
            found = self.answers[receiver] = Lookup(None, "the cursor is in a string or comment")
        if found is None:
            clock = time.perf_counter()
            found = member_lists(self.analysis).lookup(self.left, self.right, receiver, self.path, self.seconds,
                                                       trailing_key=self.in_braces)
            if found.names is None and found.reason and found.reason not in self.relaxed:
                self.relaxed.append(found.reason)
            if not found.reason.startswith("the analysis took"):
                self.answers[receiver] = found
            self.waited += time.perf_counter() - clock
        return found

    def prefetch(self) -> None:
        """Ask ahead about the receiver the left context ends with before a dot (`os.path.`), so that jedi works
        while the prompt is read."""
        chain = _TRAILING_CHAIN.search(self.left).group()
        receiver = chain[:-1]
        if self.in_code and chain.endswith(".") and _judgeable(receiver.split(".")):
            member_lists(self.analysis).prefetch(self.left, self.right, receiver, self.path)

    def attribute_debt(self, text: str) -> frozenset[str]:
        """The attributes that the class around the cursor loads on `self`/`cls` outside the middle and that
        nothing in the whole file `text` (which compiles) assigns: what the middle was to assign (see
        `attribute_debt`)."""
        if not (text.startswith(self.left) and text.endswith(self.right)):
            return frozenset()
        if self.owed is None:
            self.owed = _possibly_owed(self.left, self.right)
        middle = text[len(self.left):len(text) - len(self.right)]
        if not self.owed or not self.owed - stored_attributes(middle):
            return frozenset()  # the whole file's parse below only where the middle may leave something unassigned
        if "\n" in middle or _CLASS_WORD.search(middle):
            return attribute_debt(text, len(self.left), len(text) - len(self.right))
        if self.owed_outside is None:  # the same for every middle of one line: a class parsed once a completion
            self.owed_outside = attribute_debt(text, len(self.left), len(text) - len(self.right), outside=True)
        owed = self.owed_outside
        if not owed or not (owed.set_up or owed.init_receiver and re.search(
                r"(?<![\w.])" + owed.init_receiver + r"[ \t]*\.[ \t]*\w+[ \t]*(?::[^=\n]*)?=(?!=)", middle)):
            return frozenset()  # no state set up in __init__ (but by the middle): a base meant to be subclassed
        return owed.names - _stored_in(middle)

    @property
    def reason(self) -> str:
        """Why the member judge let some receivers go, for the completion's reason."""
        return "members not judged for some receivers: " + "; ".join(self.relaxed) if self.relaxed else ""


@dataclass(frozen=True, slots=True)
class Members:
    """The middle's dotted chain so far and what decides its next name."""

    source: MemberSource
    chain: tuple[str, ...] = ()  # the chain of names being written, its first name first
    dotted: bool = False  # the chain ends with a dot: a NAME next is a member
    target: bool = False  # the chain began where a target can: a name that is not a member may be stored
    pending: bool = False  # the last name is not a member: only a store may follow
    unstored: bool = False  # a name that is not a member began a target list: an `=` or `in` must come on the line
    written: frozenset[str] = frozenset()  # names the middle wrote other than as a receiver's first name
    # (receiver, name) the middle may have stored (`self.vbar = Scrollbar()`): members of it from then on
    stored: frozenset[tuple[str, str]] = frozenset()
    defining: bool = False
    line_free: bool = False
    depth: int = 0  # brackets open, the left context's included
    previous: str = lx.NEWLINE
    root_previous: str = lx.NEWLINE  # the terminal before the chain's first name

    @staticmethod
    def start(source: MemberSource, statement: list[str] | None, depth: int) -> Members:
        """The judge after a text whose last statement lexes to `statement` (None: not known, and the rest of the
        line not judged), with `depth` brackets open at its end."""
        source.prefetch()
        members = Members(source, depth=depth)
        if statement is None:
            return replace(members, line_free=True)
        source.in_braces = _innermost_bracket(statement) == "{"
        primed = members.feed(statement)
        if primed is None:
            return replace(members, line_free=True)
        return replace(primed, depth=depth, written=frozenset(), defining=False)

    def feed(self, terminals: list[str]) -> Members | None:
        """The judge after `terminals`; None where one writes a name that is not a member of its receiver."""
        return fold(Members._step, self, terminals)

    def admits(self, begun: str) -> bool:
        """Whether a name in progress, `begun` so far, may go on to one the judge accepts here."""
        if not self.dotted or not begun or begun.startswith("__"):
            return True  # `__` may begin a dunder, which every object has (`__class__`, `__doc__`)
        allowed = self._allowed()
        if allowed is None or self.target or self._private_open(begun):
            return True
        at = bisect.bisect_left(allowed, begun)
        return at < len(allowed) and allowed[at].startswith(begun)

    def ends(self, rest: str) -> bool:
        """Whether the middle may end here, the judge having read the right context's terminals up to where the
        lexer settles, and `rest` the right context from there: a name that is not a member only before a store."""
        if self.unstored:
            return _STORED_LATER.match(rest) is not None
        return not self.pending or _STORE_AFTER.match(rest) is not None

    def first_member(self, begun: str = "", dot: bool = False) -> str | None:
        """The shortest member that `begun` begins, where a member must follow (`dot`: after the dot being
        written), for a finish to write."""
        state = self.feed(["."]) if dot and not self.dotted else self
        if state is None or not state.dotted:
            return None
        allowed = state._allowed()
        if allowed is None:
            return None
        candidates = [name for name in allowed if name.startswith(begun) and name.isidentifier()]
        return min(candidates, key=lambda name: (len(name), name)) if candidates else None

    def _private_open(self, name: str) -> bool:
        """A private name of a receiver whose members come from a stub (stubs leave private names out), or a
        constant of a module that star-imports (a platform's constants)."""
        found = self.source.lookup(".".join(self.chain))
        return (name.startswith("_") and found.from_stub) or (found.open_constants and _CONSTANT.match(name) is not None)

    def _allowed(self) -> list[str] | None:
        """The receiver's members, sorted; None where any name goes."""
        chain = self.chain
        if self.line_free or not chain or not _judgeable(chain):
            return None
        root = chain[0]
        if root in self.written or (root in _SELF and self.defining):
            return None
        if self.root_previous == ".":
            return None
        receiver = ".".join(chain)
        found = self.source.lookup(receiver)
        if found.names is None:
            return None
        if self.depth and root not in _SELF and found.kinds != {"module"}:
            return None
        stored = {name for (on, name) in self.stored if on == receiver}
        return _sorted(found.names | stored if stored - found.names else found.names)

    def _step(self, terminal: str) -> Members | None:
        if self.pending:
            if terminal not in _STORE_NEXT:
                return None
            self = replace(self, pending=False, unstored=terminal in _LIST_NEXT)
        if self.unstored:
            if terminal == lx.NEWLINE or terminal == ";":
                return None
            if terminal in ("=", "in") or (terminal == ":" and not self.depth):
                self = replace(self, unstored=False)
        changes: dict = {"previous": terminal}
        text = getattr(terminal, "text", None)
        if terminal == lx.NEWLINE:
            changes.update(line_free=False, chain=(), dotted=False)
        elif terminal in _FREE_LINES and self.previous in (lx.NEWLINE, lx.INDENT, lx.DEDENT, ";"):
            changes.update(line_free=True, chain=(), dotted=False)
        elif text is not None:
            if self.dotted:
                allowed = self._allowed()
                if (allowed is not None and text not in allowed and not self._private_open(text)
                        and not _is_dunder(text)):
                    if not self.target:
                        return None
                    changes["pending"] = True
                if self.target:
                    changes["stored"] = self.stored | {(".".join(self.chain), text)}
                changes.update(chain=self.chain + (text,), dotted=False)
            else:
                changes.update(chain=(text,), dotted=False, root_previous=self.previous,
                               target=self.previous in _TARGET_STARTS
                               or (self.previous in (",", "=") and not self.depth))
        elif terminal == "." and self.chain and not self.dotted:
            changes["dotted"] = True
        else:
            if self.chain and not self.dotted and len(self.chain) == 1:
                changes["written"] = self.written | {self.chain[0]}
            changes.update(chain=(), dotted=False)
            if terminal in _DEFINING:
                changes["defining"] = True
            elif terminal in lx.OPENING_BRACKETS:
                changes["depth"] = self.depth + 1
            elif terminal in lx.CLOSING_BRACKETS:
                changes["depth"] = max(self.depth - 1, 0)
        return replace(self, **changes)


_LOADED = re.compile(r"\.[ \t]*([A-Za-z_]\w*)(?![ \t]*(?::[^=\n]*)?=(?!=))")
_DEFINED = re.compile(r"\b(?:def|class)[ \t]+([A-Za-z_]\w*)|^[ \t]+([A-Za-z_]\w*)[ \t]*(?::[^=\n]*)?=(?!=)",
                      re.MULTILINE)


@dataclass(frozen=True)
class _Owed:
    """What a middle of one line owes whatever it is, where the class's `__init__` sets up its state outside the
    middle (`set_up`) or the middle is in `__init__`, whose first parameter is `init_receiver`, and stores on it."""

    names: frozenset[str]
    set_up: bool
    init_receiver: str | None


_CLASS_WORD = re.compile(r"\bclass\b")
# What a middle may store or define: an attribute before an assignment (augmented too), a target list's comma or
# bracket or a `for` target's `in`; a name before an assignment; a function or class name; a quoted name.
_MIDDLE_STORES = re.compile(r"\.[ \t]*([A-Za-z_]\w*)[ \t]*(?:[-+*/%&|^@<>]{0,2}=(?!=)|:|,|\)|\]|in\b)"
                            r"|\b([A-Za-z_]\w*)[ \t]*(?::[^=\n]*)?=(?!=)|\b(?:def|class)[ \t]+([A-Za-z_]\w*)"
                            r"|['\"]([A-Za-z_]\w*)['\"]")


def _stored_in(middle: str) -> set[str]:
    """Every name a middle of one line may store as an attribute or bind in a class body (more, never fewer)."""
    return {name for group in _MIDDLE_STORES.findall(middle) for name in group if name}


def _possibly_owed(left: str, right: str) -> frozenset[str]:
    """Every attribute the right context loads that nothing in the file around the middle stores, defines or names:
    a superset of any `attribute_debt` (which then needs the middle to store one of them)."""
    around = left + right
    defined = {name for pair in _DEFINED.findall(around) for name in pair if name}
    return frozenset(set(_LOADED.findall(right)) - stored_attributes(around) - slot_names(around) - defined
                     - set(_QUOTED_NAME.findall(around)) - set(dir(object)))


def _innermost_bracket(terminals: list[str]) -> str | None:
    """The bracket still open at the end of a statement's `terminals`, the innermost; None where none is."""
    opened = []
    for terminal in terminals:
        if terminal in lx.OPENING_BRACKETS:
            opened.append(terminal)
        elif terminal in lx.CLOSING_BRACKETS and opened:
            opened.pop()
    return opened[-1] if opened else None


def _is_dunder(name: str) -> bool:
    return len(name) > 4 and name.startswith("__") and name.endswith("__")


def _judgeable(chain: list[str] | tuple[str, ...]) -> bool:
    """A chain whose members may be judged: names, none a dunder (`self.__class__` is the class, whose members are
    not the instance's; a module's `__spec__` is not a module)."""
    return all(part.isidentifier() and not _is_dunder(part) for part in chain)


def attribute_debt(text: str, start: int, end: int, outside: bool = False):
    """The attributes that the innermost class holding the middle (`text[start:end]`), where its `__init__` sets
    up its state, loads on its methods' first parameter after the middle and not before it, that neither the class
    nor anything in the file assigns (an attribute store on any receiver, the class body's names, `__slots__`) and
    that no string of the file names (`getattr(self, "x")` guards). Classes whose attributes may come from elsewhere
    owe nothing: bases other than `object`, decorators, keywords (a metaclass), and files that set attributes
    dynamically (`setattr`, `__dict__`, `__getattr__`, `__setattr__`). `outside`, for a middle of one line: `_Owed`,
    what the middle's line outside it and the rest of the file leave unassigned, whatever the middle (the middle's
    own stores not counted, nor those of the code beside it on its line, which the file's stores found by pattern
    count)."""
    if _DYNAMIC_ATTRIBUTES.search(text):
        return frozenset()
    first_line, last_line = text.count("\n", 0, start) + 1, text.count("\n", 0, end) + 1
    tree = _class_tree(text, first_line)
    if tree is None:
        return frozenset()
    holder = None
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.lineno <= first_line and (node.end_lineno or 0) >= last_line:
            if holder is None or node.lineno > holder.lineno:
                holder = node
    if holder is None or holder.decorator_list or holder.keywords or meant_for_subclasses(holder) or any(
            not (isinstance(base, ast.Name) and base.id == "object") for base in holder.bases):
        return frozenset()
    around = text[:start] + "\n" + text[end:] if outside else text
    assigned = stored_attributes(around) | slot_names(around) | set(_QUOTED_NAME.findall(around)) | set(dir(object))
    left_out = first_line if outside else 0  # the line whose statements are the middle's
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
    if not any(isinstance(method, ast.FunctionDef) and method.name == "__init__"
               and method.lineno < first_line <= (method.end_lineno or 0) for method in holder.body):
        return frozenset()  # owed only by `__init__`: a method may load what subclasses define (idlelib's
        # SearchDialogBase.open loads self.default_command)
    set_up = sets_up_state(holder, left_out)
    if not set_up and not outside:
        return frozenset()  # a base meant to be subclassed (its attributes are its subclasses')
    loads, excused = set(), set()
    for method in holder.body:
        if not isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef)) or not method.args.args or any(
                not binds_receiver(decorator) for decorator in method.decorator_list):
            continue
        receiver = method.args.args[0].arg
        for node in ast.walk(method):
            if (isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load)
                    and isinstance(node.value, ast.Name) and node.value.id == receiver):
                if node.lineno < first_line:
                    excused.add(node.attr)  # loaded before the middle too: unassigned whatever the middle
                elif node.lineno > last_line:
                    loads.add(node.attr)
            elif isinstance(node, ast.Attribute) and not isinstance(node.ctx, ast.Load) and node.lineno != left_out:
                assigned.add(node.attr)
    if outside:
        init = next((method for method in holder.body if isinstance(method, ast.FunctionDef)
                     and method.name == "__init__" and method.args.args
                     and method.lineno < first_line <= (method.end_lineno or 0)), None)
        return _Owed(frozenset(loads - assigned - excused), set_up, init and init.args.args[0].arg)
    return frozenset(loads - assigned - excused)


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


_SORTED: dict[int, tuple[frozenset[str], list[str]]] = {}


def _sorted(names: frozenset[str]) -> list[str]:
    """`names` sorted, kept per set (a receiver's members are asked at every step of a name)."""
    key = id(names)
    found = _SORTED.get(key)
    if found is None or found[0] is not names:
        if len(_SORTED) > 4096:
            _SORTED.clear()
        found = _SORTED[key] = (names, sorted(names))
    return found[1]
