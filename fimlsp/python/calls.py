"""Calls that fit, judged as the middle is written: a call of a callable whose signature is known statically must
fit it (issue 49, item 3): no positional argument beyond what the signature takes, no keyword it does not name
(a keyword being written must begin one), none given twice or after its position was filled, and no `)` while a
required parameter is missing.

`Calls` follows the middle's terminals beside the parser, like the name judge (`fimlsp.python.names`): a frame
per open bracket, and for a call's `(` the arguments at its depth as they are written (a call whose `(` is in
the left context is primed from its statement's start, the cursor inside an argument list being the editor's most
common case). Signatures come from jedi (`SignatureSource`), asked once per completion and callable; a call is let
go (any arguments) where the callable is not a plain chain of names, the middle rebinds a name of the chain, jedi
knows no signature or not in time (nor once the judges' work at a keystroke is spent), the definition is not jedi's
own reading of a `def`/`class` (compiled code, lambdas, aliases, callable instances), a function is decorated by
anything but the decorators known to keep its signature, a class is decorated, has class keywords (`metaclass=`),
defines `__new__`, or has a base that is not a plain class of its own module (a metaclass may change how it is
called), or the call unpacks `*x`/`**x` (counts and requirements then not judged). Overloads (several signatures)
are judged by their union: a call fits where it fits one of them.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from fimlsp.python import lexemes as lx
from fimlsp.python.facts import STATEMENT_ENDS
from fimlsp.python.folding import fold
from fimlsp.python.lexer import LexerState, advance
from fimlsp.python.signatures import Signature, SignatureSource
# The most of the right context read on to see the calls the middle left open closed.
RIGHT_CHARS = 4_000
_RIGHT_CHUNK = 256


@dataclass(frozen=True, slots=True)
class Frame:
    """An open bracket; for a call of a plain chain of names, the arguments written at its depth so far."""

    chain: tuple[str, ...] = ()  # the callee (empty: not a judged call)
    positional: int = 0
    keywords: frozenset[str] = frozenset()
    star: bool = False  # a `*x` was passed: positional counts not known
    double_star: bool = False  # a `**x` was passed: keywords not known
    at_argument: bool = True  # the next terminal starts an argument
    pending: str | None = None  # a NAME began the argument: `=` next makes it a keyword
    generator: bool = False  # `f(x for x in y)`: one argument, whatever follows
    lambdas: int = 0  # `lambda`s waiting for their `:` (their commas are not the call's)


_NOT_A_CALL = Frame()


@dataclass(frozen=True, slots=True)
class Calls:
    """The middle's open brackets and the chain of names being written (a callee if `(` follows)."""

    source: SignatureSource
    frames: tuple[Frame, ...] = ()
    chain: tuple[str, ...] = ()
    dotted: bool = False
    plain_chain: bool = False  # the chain starts where a callee can (not after a dot, `def` or `class`)
    written: frozenset[str] = frozenset()  # names the middle may have bound: calls through them are let go
    judging: bool = True  # off while the left context's statement is read again (priming)
    pattern: bool = False  # on a `case` line: `Point(x=0)` is a class pattern, not a call
    opens_calls: bool = True  # off while the right context is read on: its own calls are not the middle's
    # Calls are asked of jedi where the left context ends: once the middle leaves the cursor's scope (a dedent
    # below it, a bracket of the left context's that is not a call closed: a `def`'s parameters), no longer.
    blocks: int = 0  # indents less dedents since the middle's first token
    begun: bool = False  # the middle wrote a token (the dedents before it are the cursor's own line)
    primed: int = 0  # the brackets open at the cursor
    previous: str = lx.NEWLINE

    @staticmethod
    def start(source: SignatureSource, statement: list[str] | None, in_code: bool = True) -> Calls:
        """The judge after a text whose last statement lexes to `statement` (None: not known; then the brackets
        open in the left context are not judged). `in_code`: the text ends where code can go on (not inside a
        string or comment, where jedi would read the callee), else nothing is judged."""
        calls = Calls(source, judging=False)
        if not in_code:
            source.relaxed.append("the cursor is inside a string or comment")
            return replace(calls, opens_calls=False)
        primed = None if statement is None else calls.feed(statement)
        if primed is None:
            primed = calls
        return replace(primed, judging=True, written=frozenset(), blocks=0, primed=len(primed.frames))

    def feed(self, terminals: list[str]) -> Calls | None:
        """The judge after `terminals`; None where one makes a call that cannot fit its callable's signature."""
        return fold(Calls._step, self, terminals)

    def ends(self, lexer: LexerState, right: str) -> bool:
        """Whether the middle may end where `lexer` stands before `right`: the calls it left open fit as the right
        context closes them (read on until they close, the line ends, or `RIGHT_CHARS` characters)."""
        if not any(frame.chain for frame in self.frames):
            return True
        state = replace(self, opens_calls=False)
        for start in range(0, min(len(right), RIGHT_CHARS), _RIGHT_CHUNK):
            advanced = advance(lexer, right[start:start + _RIGHT_CHUNK])
            if advanced is None:
                return True
            lexer = advanced[0]
            for terminal in advanced[1]:
                state = state._step(terminal)
                if state is None:
                    return False
                if terminal == lx.NEWLINE or not any(frame.chain for frame in state.frames):
                    return True
        return True

    def admits(self, begun: str) -> bool:
        """Whether a name in progress, `begun` so far, may go on to one the judge accepts here: where no further
        positional argument fits, a name that starts an argument must begin a keyword the callee takes."""
        if not self.frames or not begun:
            return True
        frame = self.frames[-1]
        if not frame.chain or not frame.at_argument or frame.lambdas or frame.generator:
            return True
        signatures = self._signatures(frame)
        if signatures is None:
            return True
        return any(each.takes_positional(frame.positional + 1) or frame.star
                   or each.keyword_prefix(begun, frame.positional, frame.keywords, frame.star)
                   for each in signatures)

    def _signatures(self, frame: Frame) -> tuple[Signature, ...] | None:
        if not self.judging or not frame.chain:
            return None
        return self.source.lookup(frame.chain).signatures

    def _step(self, terminal: str) -> Calls | None:
        frames = self.frames
        if frames and frames[-1].chain:
            frame = self._argument(frames[-1], terminal)
            if frame is None:
                return None
            frames = frames[:-1] + (frame,)
        text = getattr(terminal, "text", None)
        changes: dict = {"previous": terminal}
        if self.judging and not self.begun and terminal not in (lx.INDENT, lx.DEDENT, lx.NEWLINE):
            changes["begun"] = True
        if self.judging and self.chain and not self.dotted and terminal not in (".", "(") and len(self.chain) == 1:
            changes["written"] = self.written | {self.chain[0]}
        if text is not None:
            if self.dotted:
                changes.update(chain=self.chain + (text,), dotted=False)
            else:
                changes.update(chain=(text,), dotted=False, plain_chain=self.previous not in (".", "def", "class"))
                if self.judging and self.previous in ("def", "class"):
                    changes["written"] = changes.get("written", self.written) | {text}
        elif terminal == "." and self.chain and not self.dotted:
            changes["dotted"] = True
        else:
            changes.update(chain=(), dotted=False)
            if terminal in lx.OPENING_BRACKETS:
                called = (terminal == "(" and self.previous == lx.NAME and self.plain_chain and self.chain
                          and self.opens_calls and not self.pattern and not (set(self.chain) & self.written))
                frames = frames + (Frame(self.chain) if called else _NOT_A_CALL,)
            elif terminal in lx.CLOSING_BRACKETS:
                if frames:
                    if not self._closes(frames[-1]):
                        return None
                    if len(frames) <= self.primed:
                        changes["primed"] = len(frames) - 1
                        if not frames[-1].chain and self.judging:
                            changes["opens_calls"] = False
                    frames = frames[:-1]
            elif terminal == lx.NEWLINE:
                frames, changes["pattern"], changes["primed"] = (), False, 0
            elif terminal in (lx.INDENT, lx.DEDENT):
                if self.begun:
                    changes["blocks"] = self.blocks + (1 if terminal == lx.INDENT else -1)
                    if changes["blocks"] < 0:
                        changes["opens_calls"] = False
            elif terminal == "case" and self.previous in STATEMENT_ENDS:
                changes["pattern"] = True
        changes["frames"] = frames
        return replace(self, **changes)

    def _closes(self, frame: Frame) -> bool:
        """Whether the call may end here: every required parameter given (where nothing was unpacked)."""
        if not frame.chain or frame.star or frame.double_star:
            return True
        signatures = self._signatures(frame)
        if signatures is None:
            return True
        positional = max(frame.positional, 1) if frame.generator else frame.positional
        return any(each.satisfied(positional, frame.keywords) for each in signatures)

    def _argument(self, frame: Frame, terminal: str) -> Frame | None:
        """The call's frame after `terminal`, written at its depth (before the bracket it may open or close)."""
        if frame.generator:
            return frame
        if frame.pending is not None:
            name, frame = frame.pending, replace(frame, pending=None)
            if terminal == "=":
                return self._keyword(frame, name)
            frame = self._positional(frame)
            if frame is None:
                return None
        if terminal == "lambda":
            frame = replace(frame, lambdas=frame.lambdas + 1)
        elif terminal == ":" and frame.lambdas:
            return replace(frame, lambdas=frame.lambdas - 1)
        if frame.lambdas and not frame.at_argument:
            return frame
        if terminal in ("for", "async") and not frame.at_argument:
            return replace(frame, generator=True)
        if terminal == ",":
            return replace(frame, at_argument=True)
        if not frame.at_argument or terminal in lx.CLOSING_BRACKETS:
            return frame
        frame = replace(frame, at_argument=False)
        if terminal == "*":
            return replace(frame, star=True)
        if terminal == "**":
            return replace(frame, double_star=True)
        if terminal == lx.NAME:
            name = terminal.text
            signatures = self._signatures(frame)
            if signatures is not None and not frame.star and not any(
                    each.takes_positional(frame.positional + 1)
                    or (name not in frame.keywords and each.takes_keyword(name, frame.positional, frame.star))
                    for each in signatures):
                return None
            return replace(frame, pending=name)
        return self._positional(frame)

    def _positional(self, frame: Frame) -> Frame | None:
        frame = replace(frame, positional=frame.positional + 1)
        if frame.star:
            return frame
        signatures = self._signatures(frame)
        if signatures is not None and not any(each.takes_positional(frame.positional) for each in signatures):
            return None
        return frame

    def _keyword(self, frame: Frame, name: str) -> Frame | None:
        if name in frame.keywords:
            return None
        frame = replace(frame, keywords=frame.keywords | {name})
        signatures = self._signatures(frame)
        if signatures is not None and not any(each.takes_keyword(name, frame.positional, frame.star)
                                              for each in signatures):
            return None
        return frame
