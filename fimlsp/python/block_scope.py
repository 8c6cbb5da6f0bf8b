"""Where a middle in block scope must stay (`FimState.in_block`): the editors' scope, in which a suggestion keeps
to its place in the file."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from fimlsp.python import lexemes as lx
from fimlsp.python.lexer import LexerState, indentation_column

if TYPE_CHECKING:
    from fimlsp.python.quotient import FimState


@dataclass(frozen=True)
class BlockScope:
    """Where a middle in block scope must stay, so that a suggestion keeps to its place in the file.

    - `floor`: no logical line of the middle, nor the right context's line that the middle's last line break
      starts, begins at a column below it: the column of the cursor's line (its indentation so far when the
      cursor is in it), so a middle cannot close the enclosing blocks and write past them.
    - `right_limit`: the middle's last token may run on into the right context's first token, as the buffer lexes
      it now (a cursor inside a name, a string, a comment), but not past it: no comment, string or continuation
      that swallows the code after the cursor.
    """

    floor: int
    right_limit: int

    @staticmethod
    def at(state: FimState) -> BlockScope:
        lexer, right = state.lexer, state.context.right
        floor = state.statement_column()
        if lexer.at_line_start and lexer.token != lx.S_COMMENT:  # in a line's indentation (not its comment)
            indentation = state.context.indentation
            if right[len(indentation):len(indentation) + 1] not in ("", "\n"):  # (tab stops depend on the column)
                floor = indentation_column(" " * floor + indentation)
        return BlockScope(floor, state.context.first_token_end(lexer.token))

    def admits_end(self, lexer: LexerState, index: int, terminals: list[str]) -> bool:
        """Whether a middle that leaves `lexer` and settles at `index` of the right context with `terminals` stays
        in the block."""
        if index > self.right_limit:
            return False
        dedents = terminals.count(lx.DEDENT)
        return dedents == 0 or (dedents < len(lexer.indents) and lexer.indents[-1 - dedents][0] >= self.floor)
