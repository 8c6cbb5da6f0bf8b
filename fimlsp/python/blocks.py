"""What CPython's compiler refuses after parsing, refused as the terminals are written: the blocks around them.

`ast.parse` accepts `return` at class level, `break` after a loop's `else:`, `await` in a plain `def`; `compile`
refuses them ("'return' outside function"). A recognizer that only parses lets a decoder write them, and then no
finish makes the file compile. `Blocks` follows the terminal stream beside the parser (the window's headers of
every enclosing block, then the middle's own headers) and knows, at each terminal, the kind of each open block:
a function (`def`, `async def`), a `class`, a loop body (`for`, `while`), or another (`if`, `with`, a loop's
`else`, …). From that it refuses:

- `return` outside a function, and `yield` outside one on a line without a `lambda`;
- `await`, outside brackets and on a line without a `lambda`, where the innermost scope is not an `async def`
  (inside brackets it may be a generator expression's, which a plain `def` allows), and the statements
  `async for` / `async with` there;
- `break` and `continue` where no loop body encloses them within their function or class;
- `nonlocal` where no function encloses it.

It refuses only what CPython always refuses, whatever else the file holds; the rest of what the compiler checks
(a `nonlocal` name with no binding, a late `from __future__` import, duplicate parameters) is the final
`compile`'s. A region whose enclosing blocks are not fed (`unknown`) refuses nothing outside what it opens itself.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from fimlsp.python import lexemes as lx
from fimlsp.python.facts import STATEMENT_ENDS
from fimlsp.python.folding import fold

FUNCTION, ASYNC_FUNCTION, CLASS, LOOP, OTHER = "def", "async def", "class", "loop", "other"
_SCOPES = (FUNCTION, ASYNC_FUNCTION, CLASS)
_HEADERS = {"def": FUNCTION, "class": CLASS, "for": LOOP, "while": LOOP}
_WATCHED = frozenset({"return", "yield", "await", "break", "continue", "nonlocal", "for", "with"})


@dataclass(frozen=True, slots=True)
class Blocks:
    """The open blocks' kinds, innermost last, and what the current logical line has opened so far."""

    kinds: tuple[str, ...] = ()
    unknown: bool = False  # the blocks outside the first one fed are not known (a region): refuse nothing there
    header: str | None = None  # the kind of the compound statement whose header the line is writing
    opened: str | None = None  # a header's colon was just written: the kind of the block it opens
    inline: str | None = None  # the kind of the block whose body is the rest of this line (`for x in y: break`)
    header_lambdas: int = 0  # `lambda`s outside brackets in the header, whose colons come before the header's
    lambda_line: bool = False  # the logical line holds a `lambda`: a function scope the terminals cannot delimit
    depth: int = 0
    previous: str = lx.NEWLINE

    def feed(self, terminals: list[str]) -> Blocks | None:
        """The blocks after `terminals`; None where one of them is one that CPython's compiler refuses here."""
        return fold(Blocks._step, self, terminals)

    def _step(self, terminal: str) -> Blocks | None:
        if terminal in _WATCHED and not self._allows(terminal):
            return None
        opened, inline, kinds = self.opened, self.inline, self.kinds
        if opened is not None and terminal != lx.NEWLINE:
            inline, opened = (opened if terminal != lx.INDENT else inline), (opened if terminal == lx.INDENT else None)
        if terminal == lx.INDENT:
            return replace(self, kinds=kinds + (opened or OTHER,), opened=None, inline=None, header=None,
                           previous=terminal)
        if terminal == lx.DEDENT:
            return replace(self, kinds=kinds[:-1], opened=None, inline=None, header=None, previous=terminal)
        if terminal == lx.NEWLINE:
            return replace(self, inline=None, header=None, header_lambdas=0, lambda_line=False, depth=0,
                           previous=terminal)
        header, lambdas, depth = self.header, self.header_lambdas, self.depth
        if self._statement_start():
            header, lambdas = _HEADERS.get(terminal), 0
            if terminal == "async":
                header = ASYNC_FUNCTION
        elif self.previous == "async" and header == ASYNC_FUNCTION and terminal in ("for", "with"):
            header = LOOP if terminal == "for" else OTHER
        if terminal in lx.OPENING_BRACKETS:
            depth += 1
        elif terminal in lx.CLOSING_BRACKETS:
            depth = max(0, depth - 1)
        elif terminal == "lambda" and depth == 0:
            lambdas += 1
        elif terminal == ":" and depth == 0:
            if lambdas:
                lambdas -= 1
            else:
                opened, header = header or OTHER, None
        return replace(self, header=header, opened=opened, inline=inline, header_lambdas=lambdas, depth=depth,
                       lambda_line=self.lambda_line or terminal == "lambda", previous=terminal)

    def _statement_start(self) -> bool:
        return self.previous in STATEMENT_ENDS or self.opened is not None

    def _scope(self) -> str | None:
        """The innermost function or class around the next terminal: its kind, None for the module, `OTHER`
        when it is not known."""
        for kind in self._inner_first():
            if kind in _SCOPES:
                return kind
        return OTHER if self.unknown else None

    def _inner_first(self):
        if self.opened is not None:
            yield self.opened
        if self.inline is not None:
            yield self.inline
        yield from reversed(self.kinds)

    def _allows(self, terminal: str) -> bool:
        scope = self._scope()
        if terminal == "return":
            return scope not in (CLASS, None)
        if terminal == "yield":
            return self.lambda_line or scope not in (CLASS, None)
        if terminal == "await":
            return self.depth > 0 or self.lambda_line or scope in (ASYNC_FUNCTION, OTHER)
        if terminal in ("for", "with"):  # `async for` and `async with` as statements
            statement = self.previous == "async" and self.header == ASYNC_FUNCTION and self.depth == 0
            return not statement or scope in (ASYNC_FUNCTION, OTHER)
        if terminal in ("break", "continue"):
            for kind in self._inner_first():
                if kind == LOOP:
                    return True
                if kind in _SCOPES:
                    return False
            return self.unknown
        if terminal == "nonlocal":
            return self.unknown or any(kind in (FUNCTION, ASYNC_FUNCTION) for kind in self._inner_first())
        return True
