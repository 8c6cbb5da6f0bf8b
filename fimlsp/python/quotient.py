"""`quotient(left, right)`: the recognizer of middles that make `left + middle + right` a valid Python module.

The right context is compiled once into a quotient grammar `L(Python) / R`, where `R` is the union of the token
streams the right context can lex to (`fimlsp.python.right_context`), and kept per right context in a
`RightContextCache` that its owner (a server, one CLI run) passes down: a user who types keeps the same right
context. The left context and the middle run through the incremental lexer into an Earley recognizer of that
grammar, so `feed` costs time proportional to the text fed, whatever the file's size.

`complete` first settles the middle's last token into the right context with the real lexer state (exact
INDENT/DEDENT for the line the middle ends on), asks the quotient recognizer, and then confirms with CPython's
own parser: the quotient's language over-approximates where indentation is unknown (Sec. VI-B of the paper), and
the confirmation makes `complete` exact without ever making `feed` reject a valid middle.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from earley import RecognizerState
from earley.deadline import check_deadline
from fimlsp.python import finish as finishing
from fimlsp.python import lexemes as lx
from fimlsp.python.block_scope import BlockScope
from fimlsp.python.blocks import Blocks
from fimlsp.python.grammar import python_quotients
from fimlsp.lines import normalize
from fimlsp.python.calls import Calls
from fimlsp.python.collection import no_cycle_collection
from fimlsp.python.signatures import SignatureSource
from fimlsp.python.judge_steps import calls_after, judges_end, likely_members, members_after
from fimlsp.python.members import Members, MemberSource, ends_in_code
from fimlsp.python.names import FileNames
from fimlsp.python.owed_names import likely_bindings
from fimlsp.python.middle_names import Names
from fimlsp.python.lexer import LexerState, advance, block_start, close_token
from fimlsp.python.meaning import is_own_prose, prose_limit, runs_on_as_prose
from fimlsp.python.right_context import boundary_marker, reversed_right_context_nfa
from fimlsp.python.right_tokens import token_end
from fimlsp.python.syntax import compiles, compiles_standing_in, one_parse, parses_statements
from fimlsp.python.waits import timed
from fimlsp.python.whole_file_ends import judges_refuse
from fimlsp.python.window import StatementStarts, left_window

if TYPE_CHECKING:
    from fimlsp.python.context_cache import RightContextCache


class RightContext:
    """Everything about one right context that does not depend on the middle.

    With `block_indent`, the text is a run of statements of a block indented by it, not a module: lexed from that
    indentation, which it may not dedent below, and confirmed as the body of a compound statement. Without
    `window`, both contexts are read whole instead of cut where that provably changes nothing (the reference
    that the windows are tested against). `statement_starts`: see `reversed_right_context_nfa`.
    """

    def __init__(self, right: str, deadline: float | None = None, block_indent: str = "", window: bool = True,
                 statement_starts: Sequence[int] = ()):
        self.right = normalize(right)
        self.block_indent = block_indent
        self.windowed = window and not block_indent
        self.initial = block_start(block_indent)
        # A region's enclosing blocks are not fed: what they allow is not known.
        self.initial_blocks = Blocks(unknown=bool(block_indent))
        quotients = python_quotients()
        with no_cycle_collection():
            language = reversed_right_context_nfa(
                self.right, self.windowed, deadline, self.initial.indents[0][0], statement_starts)
            # At each boundary index, the text that stands for the right context (None: all of it).
            self.windows = windows = language.windows
            self.boundaries = frozenset(windows)
            self.markers = {index: boundary_marker(index) for index in windows}
            # A marker costs the characters the middle writes to end there that no terminal counts (a `#`).
            self.recognizer = quotients.recognizer_of(
                language.nfa, deadline, {self.markers[index]: chars for index, chars in language.chars.items()})
        self._token_ends: dict[tuple[int, int], int | None] = {}
        # The spaces and tabs the right context starts with: a middle that ends a line meets them.
        self.indentation = self.right[:len(self.right) - len(self.right.lstrip(" \t"))]

    def start(
        self, left: str, deadline: float | None = None, statement_starts: Sequence[int] = ()
    ) -> FimState | None:
        """The state after `left`; None if no middle can make `left + middle + right` valid.

        Raises `DeadlineExceeded` past `deadline` (the left is fed in chunks, with a look at the clock between).
        Only the statement around the cursor and the headers of the blocks around it are fed (`left_window`,
        which `statement_starts` may spare parses). Its charts, like the quotient's, are built with the cycle
        collector held off.
        """
        parser = self.recognizer.start()
        if parser is None:
            return None
        with no_cycle_collection():
            headers, cut = left_window(left, statement_starts) if self.windowed else ("", 0)
            state = _feed_in_chunks(FimState(self, self.initial, parser, None, self.initial_blocks), headers, deadline)
            if state is None:
                return None
            # The headers stand for `left[:cut]`, the first chunk of the text.
            state = FimState(self, state.lexer, state.parser, (None, left[:cut]), state.blocks,
                             headers=headers if cut else None)
            state = _feed_in_chunks(state, left[cut:], deadline)
        if state is not None:  # a fresh state, not yet shared: the middles from it keep the right context's meaning
            state.prose_limit = prose_limit(self.right, state.lexer.token, self.boundaries)
        return state

    def valid(self, text: str) -> bool:
        """CPython's verdict on `text` followed by the right context: that it compiles, or for a block (whose
        enclosing statements are not known) that it parses."""
        if self.block_indent:
            return parses_statements(text + self.right, self.block_indent)
        return compiles(text + self.right)

    def valid_in_windows(self, headers: str | None, after_cut: str, boundary: int) -> bool:
        """CPython's verdict on what stands for the file: the headers that stand for the left context up to its
        window (None: no left window), the text after it, and what stands for the right context when the
        middle's last token ends at `boundary`. A few statements instead of the file: the same verdict as
        `valid` (see `left_window` and `Stream.stands_for`), but for compiler errors that depend on a binding
        left out (`compiles_standing_in`), which the whole file's check judges."""
        right = self.windows.get(boundary)
        return compiles_standing_in((headers or "") + after_cut + (self.right if right is None else right))

    def first_token_end(self, token: int) -> int:
        """Where the right context's first token ends as the buffer lexes it: the token in progress at the cursor
        (`token`, a lexer automaton state) run on into it, or else the first token after the cursor (the end of
        the right context if even that cannot end)."""
        right = self.right
        if token != lx.START:
            end = token_end(right, token, 0, self._token_ends)
            if end:
                return end
        # Between tokens, in one that ends at the cursor (`y.|x`: the dot does not run on), or in one that cannot
        # end (a string the deleted middle should close): the first token after the cursor.
        start = len(right) - len(right.lstrip(lx.WHITESPACE))
        if start == len(right) or right[start] == "\n":
            return start
        end = token_end(right, lx.step(lx.START, right[start]), start + 1, self._token_ends)
        return len(right) if end is None else end

    def settle(self, state: LexerState) -> tuple[int, list[str]] | None:
        """Run the lexer into the right context until it is between tokens: the index and terminals on the way."""
        right = self.right
        index = 0
        out: list[str] = []
        if state.pending_cr and right.startswith("\n"):
            index = 1
        while True:
            if state.token != lx.START:
                end = token_end(right, state.token, index, self._token_ends)
                if end is None:
                    return None
                advanced = advance(state, right[index:end])
                if advanced is None:
                    return None
                state, tokens = advanced
                out.extend(tokens)
                closed = close_token(state, right[end] if end < len(right) else None)
                if closed is None:
                    return None
                state, tokens = closed
                out.extend(tokens)
                index = end
                continue
            if not state.at_line_start or index == len(right) or right[index] == "\n":
                return index, out
            advanced = advance(state, right[index])
            if advanced is None:
                return None
            state, tokens = advanced
            out.extend(tokens)
            index += 1


_FEED_CHUNK = 1024


def _feed_in_chunks(state: FimState, text: str, deadline: float | None) -> FimState | None:
    """`state.feed(text)`, with a look at the clock between chunks."""
    for index in range(0, len(text), _FEED_CHUNK):
        check_deadline(deadline)
        state = state.feed(text[index:index + _FEED_CHUNK])
        if state is None:
            return None
    return state


# The most text lexed again for the name judge to know where the cursor's statement stands (more: not judged
# until the line ends).
_NAMES_PRIMED_CHARS = 50_000


class FimState:
    """The recognizer after `left` and the middle fed so far. Immutable: `feed` returns a new state.

    A state `in_block()` admits only middles that stay in the block that holds the cursor (see `BlockScope`)."""

    __slots__ = ("context", "lexer", "parser", "_chunks", "blocks", "_complete", "scope", "headers", "names",
                 "_unbound", "prose_limit", "members", "calls")

    def __init__(self, context: RightContext, lexer: LexerState, parser: RecognizerState, chunks: tuple,
                 blocks: Blocks, scope: BlockScope | None = None, headers: str | None = None,
                 names: Names | None = None, prose_limit: int | None = None, members: Members | None = None,
                 calls: Calls | None = None):
        self.context = context
        self.lexer = lexer
        self.parser = parser
        self.blocks = blocks  # the open blocks' kinds, for what the compiler refuses after parsing
        self._chunks = chunks
        self._complete: bool | None = None
        self._unbound: frozenset[str] = frozenset()
        self.scope = scope
        self.headers = headers  # what stands for the text's first chunk (`RightContext.start`), if anything
        self.names = names  # the name judge of the middle written from here, if it is on
        # How far the middle's last comment or string may run into the right context (`fimlsp.python.meaning`).
        self.prose_limit = prose_limit
        self.members = members  # the member judge of the middle written from here, if it is on
        self.calls = calls  # the call judge of the middle written from here, if it is on

    def statement_column(self) -> int:
        """The column of the statement the text ends in: the indentation of its line, as far as it is written."""
        lexer = self.lexer
        return lexer.column if lexer.at_line_start else lexer.indents[-1][0]

    def at_statement_start(self) -> bool:
        """The text ends a logical line (outside brackets, strings and comments) and the next has no token yet."""
        lexer = self.lexer
        return lexer.at_line_start and lexer.depth == 0 and lexer.token == lx.START

    def in_block(self) -> FimState:
        """This state, with what may follow restricted to the block that holds the cursor here."""
        return FimState(self.context, self.lexer, self.parser, self._chunks, self.blocks, BlockScope.at(self),
                        self.headers, self.names, self.prose_limit, self.members, self.calls)

    def judging_names(self, file: FileNames) -> FimState:
        """This state, with the middle written from here refused where it loads a name that nothing in the file
        (`file`) nor the middle binds (see `fimlsp.python.names`)."""
        possible = self.lexer.possible_terminals()
        names = Names.start(file, self._last_statement(), possible is not None and lx.NAME in possible)
        return FimState(self.context, self.lexer, self.parser, self._chunks, self.blocks, self.scope,
                        self.headers, names, self.prose_limit, self.members, self.calls)

    def judging_members(self, source: MemberSource) -> FimState:
        """This state, with the middle written from here refused where it writes after a dot a name that is not a
        member of the receiver (see `fimlsp.python.members`)."""
        source.in_code = ends_in_code(self.lexer.token)
        members = timed(source, Members.start, source, self._last_statement(), self.lexer.depth)
        return FimState(self.context, self.lexer, self.parser, self._chunks, self.blocks, self.scope,
                        self.headers, self.names, self.prose_limit, members, self.calls)

    def judging_calls(self, source: SignatureSource) -> FimState:
        """This state, with the middle written from here refused where a call cannot fit its callable's signature
        (see `fimlsp.python.calls`)."""
        token = self.lexer.token
        calls = timed(source, Calls.start, source, self._last_statement(),
                       token not in lx.SKIPPED and token not in lx.STRING_STATES)
        return FimState(self.context, self.lexer, self.parser, self._chunks, self.blocks, self.scope,
                        self.headers, self.names, self.prose_limit, self.members, calls)

    def feed(self, text: str) -> FimState | None:
        """The state after `text`, or None when no valid middle starts with everything fed so far."""
        if not text:
            return self
        advanced = advance(self.lexer, text)
        if advanced is None:
            return None
        lexer, terminals = advanced
        if self.scope is not None and lx.DEDENT in terminals and lexer.indents[-1][0] < self.scope.floor:
            return None  # (a comment line's column is no block's: only a dedent leaves the block)
        parser = self.parser.feed_all(terminals) if terminals else self.parser
        if parser is None:
            return None
        pending = lexer.possible_terminals()
        if pending is not None and not pending & parser.allowed():
            return None
        blocks = self.blocks.feed(terminals) if terminals else self.blocks
        if blocks is None:
            return None
        names = self.names
        if names is not None and terminals:
            names = names.feed(terminals, self.blocks, blocks)
            if names is None:
                return None
        if names is not None and pending is not None and lx.NAME in pending and not names.admits(lexer.text, blocks):
            return None
        members = self.members
        if members is not None:
            members = members_after(members, terminals, pending, lexer.text, parser.allowed)
            if members is None:
                return None
        calls = self.calls
        if calls is not None:
            calls = calls_after(calls, terminals, pending, lexer.text)
            if calls is None:
                return None
        return FimState(self.context, lexer, parser, (self._chunks, text), blocks, self.scope, self.headers, names,
                        self.prose_limit, members, calls)

    def likely_names(self) -> tuple[str, dict[str, float]] | None:
        """The member being written after a dot and the names the file writes there (`members.likely_names`), or
        a name the middle may bind (an import's, a parameter's) and the owed names it may be (`likely_bindings`)."""
        found = likely_members(self.members, self.lexer)
        return found or (None if self.names is None else likely_bindings(self.names, self.lexer))

    def expected(self) -> tuple[str, ...]:
        """The terminals that may come next: after the token being written when it can only be one terminal,
        else those it can still become."""
        allowed = self.parser.allowed()
        becoming = self.lexer.possible_terminals()
        if becoming is not None and len(becoming) == 1:
            after = self.parser.feed(next(iter(becoming)))
            return tuple(sorted(after.allowed())) if after is not None else ()
        return tuple(sorted(allowed if becoming is None else allowed & becoming))

    @property
    def text(self) -> str:
        """The left context and everything fed since."""
        return self._text(whole=True)

    def _last_statement(self) -> list[str] | None:
        """The terminals a judge starts from: the text's from the latest line known to start a statement, lexed
        after a window's headers (their indents explain its dedents: it may begin deep in a block the cursor left)."""
        text = self._text(whole=self.headers is None)
        if len(text) > _NAMES_PRIMED_CHARS:
            return None
        lexed = (self.context.initial, [])
        for piece in (text,) if self.headers is None else (self.headers, text):
            lexed = advance(lexed[0], piece)
            if lexed is None:
                return None
        return lexed[1]

    def _text(self, whole: bool) -> str:
        """The text, or without its first chunk (what the headers stand for)."""
        pieces = []
        chunks = self._chunks
        while chunks:
            chunks, piece = chunks
            if chunks is not None or whole:
                pieces.append(piece)
        return "".join(reversed(pieces))

    @property
    def complete(self) -> bool:
        """True iff the text so far followed by the right context is a valid Python module: one that CPython
        compiles, and in which the middle has not turned the right context's code into a comment or string
        (`fimlsp.python.meaning`).

        Where the quotient accepts (exact but for indentation), CPython judges the few statements that stand for
        the file in the windows, which give its parser's verdict on the whole file (`RightContext.valid_in_windows`):
        a refusal costs the statement around the cursor, not the file. Its compiler's verdict can hang on what
        the windows leave out (a `return` further down, in the body of a header the middle rewrote; a `nonlocal`
        and its binding), so an acceptance is confirmed by compiling the whole text: once a state, and only where
        the file is complete, which a decoder asks of its end and a finish search of the one text it returns."""
        if self._complete is None:
            boundary = self._accepted_boundary()
            if boundary is None:
                self._complete = False
            elif self.headers is None and self.context.windows.get(boundary) is None:
                self._complete = self.context.valid(self.text)
            else:
                after_cut = self._text(whole=self.headers is None)
                self._complete = (self.context.valid_in_windows(self.headers, after_cut, boundary)
                                  and self.context.valid(self.text))
            if self._complete and (self.names, self.members, self.calls) != (None, None, None):
                text = self.text  # the judges read the whole file: its text and syntax tree built once for all
                with one_parse():
                    self._complete = self._judged_end(text, text + self.context.right)
        return self._complete

    def _judged_end(self, text: str, whole: str) -> bool:
        """Whether the judges let the middle end here, the file being `text` and the right context (`whole`)."""
        if self.names is not None:
            file = self.names.file  # a judge the middle turned off still judges the modules it imports
            self._unbound = file.missing_imports(whole) if self.names.off else file.unbound(whole)
            # a function, class or annotated variable the file declares again in the same scope (issue 49)
            if self._unbound or file.redeclared(whole):
                return False
        return not judges_refuse(self.members, self.calls, text, whole)  # (`fimlsp.python.whole_file_ends`)

    def unbound_names(self) -> frozenset[str]:
        """The names that kept the file from being `complete`, which the middle was to bind: known once `complete`
        has been asked (see `fimlsp.python.names.FileNames.unbound`); none where that was not the reason."""
        return self._unbound

    def distance_bound(self) -> float:
        """No text of fewer characters finishes the file (`math.inf`: none can)."""
        return finishing.distance_bound(self)

    def finish(self, limit: float = math.inf, deadline: float | None = None, work: int | None = None) -> str | None:
        """A shortest text after which the file is complete (see `fimlsp.python.finish`), of at most `limit`
        characters; None if none is found (before `deadline`, within `work` nodes expanded)."""
        return finishing.shortest_finish(self, limit, deadline, finishing.EXPANSIONS if work is None else work)

    def quotient_accepts(self) -> bool:
        """Membership in the quotient language alone: necessary for `complete`, and exact but for indentation."""
        return self._accepted_boundary() is not None

    def _accepted_boundary(self) -> int | None:
        """Where the middle's last token ends in the right context when the quotient accepts, else None."""
        settled = self.context.settle(self.lexer)
        if settled is None:
            return None
        index, terminals = settled
        if index not in self.context.boundaries:
            return None
        if (self.prose_limit is not None and index > self.prose_limit
                and runs_on_as_prose(self.lexer.token, self.context.right)
                and not is_own_prose(self.lexer.token, self.lexer.text, self._chunks, self.context.right)):
            return None  # the middle's last comment or string would swallow code of the right context
        if self.scope is not None and not self.scope.admits_end(self.lexer, index, terminals):
            return None
        # The boundary's marker: the stream of this boundary, not any other's, must complete the file.
        parser = self.parser.feed_all([*terminals, self.context.markers[index]])
        if parser is None or not parser.complete or self.blocks.feed(terminals) is None:
            return None
        if self.names is not None and not self.names.ends(terminals):
            return None
        if not judges_end(self.members, self.calls, terminals, self.lexer, self.context.right, index):
            return None
        return index

    def __repr__(self) -> str:
        return f"<FimState fed={len(self.text)} chars, terminals={self.parser.position}>"


def quotient(left: str, right: str, deadline: float | None = None, block_indent: str = "",
             cache: RightContextCache | None = None) -> FimState | None:
    """The state after `left`, given `right`; None if no middle can make `left + middle + right` valid.

    Raises `earley.DeadlineExceeded` if building it runs past `deadline`, a `time.perf_counter()` value. With
    `block_indent`, valid means a run of statements of a block indented by it (see `RightContext`). The right
    context comes from `cache` when given; without one it is compiled for this call alone.

    When `left + right` is itself a valid module (a cursor that jumped, before anything is typed), one parse of
    it, remembered for the document by `cache`, proves what the windows need at both ends of the cursor's top-level
    statement (`StatementStarts`); after an edit of it, what the edit left on each side still does.
    """
    if block_indent:
        starts = StatementStarts()
    else:
        starts = (StatementStarts.of if cache is None else cache.statement_starts)(left + right)
    right_starts = [start - len(left) for start in starts.after[bisect.bisect_right(starts.after, len(left)):]]
    if cache is None:
        context = RightContext(right, deadline, block_indent, statement_starts=right_starts)
    else:
        context = cache.right_context(right, deadline, block_indent, right_starts)
    return context.start(left, deadline, starts.before[:bisect.bisect_right(starts.before, len(left))])
