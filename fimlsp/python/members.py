"""Members after a dot, judged as the middle is written: `receiver.name` where `name` is not a member of the
receiver is refused, where the receiver's members are known statically (`fimlsp.python.analysis`).

`Members` follows the middle's terminals beside the parser, like the name judge (`fimlsp.python.names`). It keeps
the dotted chain being written (`os.path`, `self._lock`); when a NAME follows its dot, the name must be one of the
receiver's members, and while the name is being written (a token may end mid-name) its text so far must begin one
(`admits`, a prefix search in the sorted members). What it never refuses, so that no middle Python accepts is
refused:
- a receiver whose members are unknown (`Lookup.names` None: no type, `Any`, `__getattr__`, `setattr`, mocks, a
  query past its time bound) or that is not a plain chain of names (`f().x`; a string literal's members are a
  str's or a bytes': `"-".join`);
- a receiver whose first name the middle wrote other than as a receiver (a new binding: `x = Foo()`, a
  parameter, a `for` target), and `self`/`cls` once the middle writes `def`, `class` or `lambda`;
- inside brackets, a receiver that is not a module, `self` or `cls` (a comprehension may bind it after use);
- a store (`self.x = ...`, `obj.y: int = 0`, tuple and `for`/`with` targets): where the chain begins a target, a
  name that is not a member is decided by the next terminal (`=`, `:`, `,`, `)`, `]`, `in` make it a store), and
  is a member of that receiver for the rest of the middle (`self.vbar = Scrollbar()` then `self.vbar.pack()`);
  but not on an instance of a built-in type without an instance dict (a set, a str: `Lookup.fixed`), which takes
  no new attribute;
- `import`, `from`, `global`, `nonlocal` and `del` lines.
- the rest of the middle, once the judges' work at a keystroke is spent (`WaitBudget.work`, 35 ms: the judges
  relax rather than delay the suggestion, and the reason says so).
Receivers are asked of `fimlsp.python.member_lists` once per document and receiver (the cursor's line cut back, so
the keystrokes on a line share one jedi query), the one before the cursor ahead of the prompt's reading, the ones
the file writes after it in the background once a completion is written (`MemberSource.ask_ahead`), and each
answer is kept per completion (`MemberSource`), so a finish search reads a cached answer; where the cursor is in a
string or a comment, the receiver could not stand there, and is not judged. Dunders (`self.__class__`) and chains
through them are never judged.

What the file itself writes after a receiver makes its members likely (`Members.likely`): the names written after
the same chain elsewhere in the file where it follows the tokens that the chain follows here, by how often and how
near the cursor (`fimlsp.python.member_uses`), for decoding to weigh against the model's choice. They only rank:
what the judge admits is the same.

Attribute debt (`fimlsp.python.attribute_debt`): a middle ends only where the attributes that the class around it
loads on `self`/`cls` outside the middle are assigned somewhere, as the name judge's ends need the right context's
names bound.
"""

from __future__ import annotations

import bisect
import re
import time
from dataclasses import dataclass, field, replace

from fimlsp.python import lexemes as lx
from fimlsp.python.analysis import Analysis, Lookup, after_receiver, trailing_chain
from fimlsp.python.attribute_debt import AttributeDebt
from fimlsp.python.folding import fold
from fimlsp.python.inherited import BaseReader
from fimlsp.python.lexer import LexerState
from fimlsp.python.member_lists import QUERY_SECONDS, member_lists
from fimlsp.python.member_uses import CONTEXT_TOKENS, FileUses
from fimlsp.python.waits import WaitBudget

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
# A string literal as a receiver (its chain), and its members: a str's or a bytes' (the lexer does not say which).
_LITERAL = '"'
_STRING_MEMBERS = sorted(set(dir(str)) | set(dir(bytes)))
# The right context's member after the middle's chain: after its dot, or after the chain.
_NAME_NEXT = re.compile(r"[ \t]*([A-Za-z_]\w*)")
_MEMBER_NEXT = re.compile(r"[ \t]*\.[ \t]*([A-Za-z_]\w*)")
_STORED_LATER = re.compile(r"[^\n]*(?:=|\bin\b|\\\n)")
_SELF = frozenset({"self", "cls"})
_RECEIVERS_AHEAD = 4  # the chains the file writes after the cursor's receiver asked ahead (`next_receivers`)
_CONSTANT = re.compile(r"[A-Z][A-Z0-9_]*\Z")
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
    budget: WaitBudget | None = None  # the judges' waits (`seconds` at most) and work in this completion
    spent: float = 0.0  # this completion's time in the judge: its checks and its waits (issue 49's added time)
    # The left context ends in code (not in a string or comment), where a receiver may be asked about.
    in_code: bool = True
    # The innermost bracket open at the cursor is a brace: a name quoted just before it is a key or an element of a
    # dict or set display (`{"path"` + `: self.path`), not what an attribute guard tests.
    in_braces: bool = False
    debt: AttributeDebt | None = None  # what the middle may owe, worked out at the first end asked about
    _uses: FileUses | None = None  # the file's names after receivers

    def __post_init__(self):
        if self.budget is None:
            self.budget = WaitBudget(self.seconds)

    @property
    def waited(self) -> float:
        """Seconds spent waiting on the analysis in this completion (the judge's added time)."""
        return self.budget.waited

    def lookup(self, receiver: str) -> Lookup:
        found = self.answers.get(receiver)
        if found is None and not self.in_code:
            found = self.answers[receiver] = Lookup(None, "the cursor is in a string or comment")
        if found is None:
            clock = time.perf_counter()
            found = member_lists(self.analysis).lookup(self.left, self.right, receiver, self.path,
                                                       self.budget.left(), trailing_key=self.in_braces)
            if found.names is None and found.reason and found.reason not in self.relaxed:
                self.relaxed.append(found.reason)
            if not found.reason.startswith("the analysis took"):
                self.answers[receiver] = found
            self.budget.waited += time.perf_counter() - clock
        return found

    @property
    def uses(self) -> FileUses:
        """The names the file writes after receivers, but at the cursor."""
        if self._uses is None:
            self._uses = FileUses(self.left, self.right)
        return self._uses

    def prefetch(self) -> None:
        """Ask ahead about the receiver the left context ends with before a dot and a member begun or not
        (`os.path.`, `os.path.jo`), and about the bases of the class around the cursor (its attribute debt), so
        that jedi works while the prompt is read."""
        found = self._cursor_receiver()
        if found is not None:
            member_lists(self.analysis).prefetch(self.left, self.right, found[0], self.path)
        if self.in_code:
            self._attribute_debt().prefetch()

    def ask_ahead(self) -> None:
        """Ask in the background about the receivers the next keystrokes' middles may write (`next_receivers`), once
        this completion is written: jedi is Python, and run beside the model's decoding it slowed the decoding
        (the GIL) more than its answers saved."""
        found = self._cursor_receiver()
        if found is not None:
            receiver, begun = found
            member_lists(self.analysis).ask_ahead(
                self.left, self.right, [f"{receiver}.{name}" for name in self.next_receivers(receiver, begun)],
                self.path)

    def _cursor_receiver(self) -> tuple[str, str] | None:
        """The judgeable chain that the left context ends with before a dot, and the member begun after it."""
        receiver, dot, begun = trailing_chain(self.left).rpartition(".")
        if self.in_code and dot and _judgeable(receiver.split(".")) and (not begun or begun.isidentifier()):
            return receiver, begun
        return None

    def next_receivers(self, receiver: str, begun: str = "") -> list[str]:
        """The members after `receiver`, begun with `begun`, that the file itself writes a dot after (`client`
        for `self.`, where it writes `self.client.send`), the likeliest first (`FileUses.weights`), at most
        `_RECEIVERS_AHEAD`: the receivers the middle is likeliest to write next, asked in the background so that
        a keystroke later finds them answered."""
        after = re.compile(after_receiver(receiver).pattern + r"\s*\.\s*[A-Za-z_]")
        dotted = {name for text in (self.left, self.right) for name in after.findall(text)
                  if name.startswith(begun) and not _is_dunder(name)}
        uses = self.uses.weights(receiver)
        return sorted(dotted, key=lambda name: (-uses.get(name, 0.0), name))[:_RECEIVERS_AHEAD]

    def attribute_debt(self, text: str) -> frozenset[str]:
        """The attributes that the class around the cursor loads on `self`/`cls` outside the middle and that
        nothing in the whole file `text` (which compiles) assigns: what the middle was to assign
        (`fimlsp.python.attribute_debt`)."""
        return self._attribute_debt().owed(text)

    def _attribute_debt(self) -> AttributeDebt:
        if self.debt is None:
            self.debt = AttributeDebt(self.left, self.right, BaseReader(self.analysis, self.path, self.budget))
        return self.debt

    @property
    def reason(self) -> str:
        """Why the member judge let some receivers go, for the completion's reason."""
        relaxed = self.relaxed + [self.budget.reason] if self.budget.spent_out else self.relaxed
        return "members not judged for some receivers: " + "; ".join(relaxed) if relaxed else ""


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
    assigned: frozenset[tuple[str, ...]] = frozenset()  # chains the middle assigned (`self.x = ...`, `self.x: T =`)
    defining: bool = False
    line_free: bool = False
    depth: int = 0  # brackets open, the left context's included
    previous: str = lx.NEWLINE
    root_previous: str = lx.NEWLINE  # the terminal before the chain's first name
    line_tokens: tuple[str, ...] = ()  # the logical line's last tokens (`fimlsp.python.member_uses`)
    chain_context: tuple[str, ...] = ()  # those before the chain's first name

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
        if allowed is None or (self.target and not self._fixed()) or self._private_open(begun):
            return True
        at = bisect.bisect_left(allowed, begun)
        return at < len(allowed) and allowed[at].startswith(begun)

    def continued(self, terminals: frozenset[str]) -> bool:
        """Whether one of `terminals`, those the token in progress may become, may come next. Where none may, no
        text goes on from here: a decoder that took such a token (`(` after a name that is not a member, which only
        a store may follow) would try the whole vocabulary at the next step, each token refused."""
        return any(self._step(terminal) is not None for terminal in terminals)

    def ends(self, rest: str) -> bool:
        """Whether the middle may end here, the judge having read the right context's terminals up to where the
        lexer settles, and `rest` the right context from there: a name that is not a member only before a store."""
        if self.unstored:
            return _STORED_LATER.match(rest) is not None
        if self.pending:
            return _STORE_AFTER.match(rest) is not None
        return self._right_member_fits(rest)

    def _right_member_fits(self, rest: str) -> bool:
        """The name the right context writes after the dot that follows the middle's chain is a member of it
        (`operation_id` + `.sub(...)`, where `operation_id` is a str, is refused), or stored."""
        if not self.chain and self.previous != lx.STRING:
            return True
        after = (_NAME_NEXT if self.dotted else _MEMBER_NEXT).match(rest)
        if after is None:
            return True
        dotted = self if self.dotted else replace(self, chain=self.chain or (_LITERAL,), dotted=True)
        allowed, name = dotted._allowed(), after.group(1)
        if allowed is None or name in allowed or dotted._private_open(name) or _is_dunder(name):
            return True
        return self.target and not dotted._fixed() and _STORE_AFTER.match(rest, after.end()) is not None

    def likely(self, begun: str) -> dict[str, float] | None:
        """Where a member is being written (`begun` so far), the names the file writes after the same receiver
        that begin with `begun` (or are it) and that the judge admits, those whose uses follow the most of the
        tokens the chain follows here, weighed by how often and how near the cursor (`FileUses.in_context`); None
        elsewhere."""
        if not self.dotted or self.line_free or not self.chain or not _judgeable(self.chain):
            return None
        uses = self.source.uses.in_context(".".join(self.chain), self.chain_context)
        found = {name: use for name, use in uses.items() if name.startswith(begun) and self.admits(name)}
        if not found:
            return None
        best = max(shared for shared, _weight in found.values())
        return {name: weight for name, (shared, weight) in found.items() if shared == best}

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
        if self.chain == (_LITERAL,):
            return False
        found = self.source.lookup(".".join(self.chain))
        return (name.startswith("_") and found.from_stub) or (found.open_constants and _CONSTANT.match(name) is not None)

    def _fixed(self) -> bool:
        """The receiver takes no new attribute (an instance of a built-in type without an instance dict): a store
        cannot make a name one of its members."""
        return self.chain != (_LITERAL,) and self.source.lookup(".".join(self.chain)).fixed

    def _allowed(self) -> list[str] | None:
        """The receiver's members, sorted; None where any name goes."""
        chain = self.chain
        if chain == (_LITERAL,) and not self.line_free:
            return _STRING_MEMBERS
        if self.line_free or not chain or not _judgeable(chain):
            return None
        root = chain[0]
        if root in self.written or (root in _SELF and self.defining):
            return None
        if self.root_previous == ".":
            return None
        receiver = ".".join(chain)
        if chain in self.assigned:
            return None  # the middle assigned it (`self.x = open(p)`): it holds what the middle stored
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
        if terminal != lx.INDENT and terminal != lx.DEDENT:
            changes["line_tokens"] = (self.line_tokens + (text or terminal,))[-CONTEXT_TOKENS:]
        if terminal == lx.NEWLINE:
            changes.update(line_free=False, chain=(), dotted=False, line_tokens=())
        elif terminal in _FREE_LINES and self.previous in (lx.NEWLINE, lx.INDENT, lx.DEDENT, ";"):
            changes.update(line_free=True, chain=(), dotted=False)
        elif text is not None:
            if self.dotted:
                allowed = self._allowed()
                if (allowed is not None and text not in allowed and not self._private_open(text)
                        and not _is_dunder(text)):
                    if not self.target or self._fixed():
                        return None
                    changes["pending"] = True
                if self.target:
                    changes["stored"] = self.stored | {(".".join(self.chain), text)}
                changes.update(chain=self.chain + (text,), dotted=False)
            else:
                changes.update(chain=(text,), dotted=False, root_previous=self.previous,
                               chain_context=self.line_tokens, target=self.previous in _TARGET_STARTS
                               or (self.previous in (",", "=") and not self.depth))
        elif terminal == "." and self.chain and not self.dotted:
            changes["dotted"] = True
        elif terminal == "." and self.previous == lx.STRING:  # `"-".join`: a str's (or a bytes') member
            changes.update(chain=(_LITERAL,), dotted=True, target=False)
        else:
            if self.chain and not self.dotted and len(self.chain) == 1:
                changes["written"] = self.written | {self.chain[0]}
            if self.target and len(self.chain) > 1 and not self.dotted and terminal in ("=", ":"):
                changes["assigned"] = self.assigned | {self.chain}
            changes.update(chain=(), dotted=False)
            if terminal in _DEFINING:
                changes["defining"] = True
            elif terminal in lx.OPENING_BRACKETS:
                changes["depth"] = self.depth + 1
            elif terminal in lx.CLOSING_BRACKETS:
                changes["depth"] = max(self.depth - 1, 0)
        return replace(self, **changes)


def likely_names(members: Members, lexer: LexerState) -> tuple[str, dict[str, float]] | None:
    """Where `lexer` has read up to a member being written after a dot, what of it is written and the names the
    file writes after the same receiver (`Members.likely`); None elsewhere."""
    begun = ""
    pending = lexer.possible_terminals()
    if pending is not None and lx.NAME in pending:
        begun = lexer.text
    elif pending is not None and lexer.text == ".":  # the dot, until what follows says it is no `...`
        members = members.feed(["."])
    elif pending is not None:
        return None  # a token other than a name is begun
    likely = None if members is None else members.likely(begun)
    return None if likely is None else (begun, likely)


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
