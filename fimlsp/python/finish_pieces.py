"""The texts a finish search (`fimlsp.python.finish`) may write next from a state: its steps, apart from its search."""

from __future__ import annotations

import builtins
from functools import lru_cache
from typing import TYPE_CHECKING

from fimlsp.python import lexemes as lx
from fimlsp.python.blocks import CLASS
from fimlsp.python.lexer import indentation_column
from fimlsp.python.judge_steps import judging
from fimlsp.python.openings import compound_openings, header, indentations, written_indentation
from fimlsp.python.waits import timed

if TYPE_CHECKING:
    from earley import RecognizerState
    from fimlsp.python.quotient import FimState

# Tokens that can run on into the right context: a comment to the end of its line, a string to a closing quote.
RUNNING_ON = ("#", '"', "'", '"""', "'''")
# The name a finish writes: the shortest, and where the name judge is on (`fimlsp.python.names`) one that every
# scope binds, a builtin, since a name it loads must be bound (the judge accepts any name where it binds one).
NAME = lx.SHORTEST_TEXT[lx.NAME]
BOUND_NAME = "id"
# The most names the file binds that a name in progress is completed to (`e` to `env`, `environment`), the shortest
# first: with the name judge on, a name the cursor is inside must end as one that is bound.
NAME_COMPLETIONS = 6
# Characters of the right context that a token of the middle can run on into (the longest keyword is 8 long).
MERGE_LOOKAHEAD = 8
# The right context's lines of code whose least indentation is the block its next statements stand in
RIGHT_LINES = 8
_BUILTINS = frozenset(dir(builtins))


def _pieces(state: FimState, wanted: list[str] = ()) -> tuple[list[str], set[str], set[str]]:
    """The texts the search may write next: those it may go on from, those that can only end a finish, and the
    starts of a compound statement that the right context goes on with (`compound_openings`).

    Going on: what closes the token in progress, or else what extends it into a longer terminal (`im` to
    `import`), a shortest lexeme of each terminal that may follow (after a space where it would merge with the
    token before), where a name may follow the `wanted` names too (those the right context needs bound), and a
    line break with the indentation of each open block or of a new one. Ending: a comment or a string that runs on
    into the right context, the start of a terminal whose rest begins the right context, and a space before the
    right context's first token (anywhere else each is a longer way to a shorter finish). Openings: those of
    `compound_openings`, and `class x:` where the finish leaves a class whose methods the right context goes on
    with (`_class_reopening`)."""
    lexer = state.lexer
    closing = lx.closing_text(lexer.token)
    if closing:
        escape = lx.unfinished_escape(lexer.text) if lexer.token in lx.STRING_STATES else ""
        return [escape or closing], set(), set()
    parser = state.parser
    pending = lexer.possible_terminals()
    name = _name(state)
    pieces = []
    if pending is None:
        following = set(_after_indentation(parser))
    else:
        following = set()
        for terminal in sorted(pending & parser.allowed()):  # sorted: a tie between finishes never hangs on
            # the hash order of strings, which changes from one process to the next
            text = lx.SHORTEST_TEXT[terminal]
            if len(text) > len(lexer.text) and text.startswith(lexer.text):
                pieces.append(text[len(lexer.text):])
            elif terminal == lx.NAME and lexer.text in lx.KEYWORDS:
                pieces.append("_")  # a keyword so far (`in`) is a name only once it goes on (`in_`, `int`)
            fed = parser.feed(terminal)
            if fed is not None:
                following |= fed.allowed()
        if lx.NAME in pending and lexer.text:
            pieces.extend(_completions(state))
    for terminal in sorted(following):
        text = name if terminal == lx.NAME else lx.SHORTEST_TEXT[terminal]
        if text:
            pieces.append(_separated(lexer.token, text))
    if lx.NAME in following:
        pieces.extend(_separated(lexer.token, wanted_name) for wanted_name in wanted)
    right, right_indentation = state.context.right, state.context.indentation
    final = {_separated(lexer.token, text) for text in RUNNING_ON}
    openings = set()
    fresh_lines = indentations(lexer.indents, "")
    at_statement_line = lexer.at_line_start and lexer.depth == 0 and lexer.token == lx.START
    if lx.NEWLINE in following:
        pieces.extend("\n" + indentation for indentation in fresh_lines)
        final.update("\n" + indentation for indentation in indentations(lexer.indents, "", right_indentation))
        if right.startswith(":", len(right_indentation)):  # the right context ends a block's header: write its start
            openings.update("\n" + indentation + header(name) for indentation in fresh_lines)
    if (lx.NEWLINE in following and lexer.depth == 0) or at_statement_line:
        # after a line's end, or on a line blank so far (a statement left of its indentation starts on the next)
        openings.update("\n" + indentation + opening for indentation in fresh_lines
                        for opening in compound_openings(right, lexer.indents, indentation, name))
        openings.update("\n" + indentation + opening for indentation in fresh_lines
                        for opening in _class_reopening(state, indentation))
    if at_statement_line:
        written = written_indentation(lexer.column, lexer.alt_column)
        if written is not None:
            pieces.extend(indentations(lexer.indents, written))
            final.update(indentations(lexer.indents, written, right_indentation))
            openings.update(indentation + opening for indentation in indentations(lexer.indents, written)
                            for opening in compound_openings(right, lexer.indents, written + indentation, name))
    if lexer.token == lx.START:
        final.update(_merging(right[:MERGE_LOOKAHEAD]))
    else:
        final.add(" ")
    continuing = list(dict.fromkeys(piece for piece in pieces if piece))
    openings -= set(continuing)
    return continuing, final - set(continuing) - openings - {""}, openings


def _class_reopening(state: FimState, indentation: str) -> list[str]:
    """`class x:` and a line of its body, on a line at the column of a class the left context has open whose body
    stands where the right context's next lines do: a finish that must leave the class (where the right context
    defines its methods again) keeps them methods of a class, as `if x:` there would not."""
    blocks, levels = state.blocks, [level for level, _ in state.lexer.indents]
    if blocks is None or blocks.unknown or indentation.strip(" "):
        return []
    column, body = len(indentation), right_block_column(state.context.right)
    if any(kind == CLASS and (header, inside) == (column, body)
           for kind, header, inside in zip(blocks.kinds, levels, levels[1:])):
        return ["class " + NAME + ":\n" + " " * body]
    return []


@lru_cache(maxsize=8)
def right_block_column(right: str) -> int:
    """The column of the least indented of the right context's first `RIGHT_LINES` lines of code after its first:
    the block its next statements stand in."""
    columns = []
    for line in right.split("\n")[1:]:
        code = line.lstrip(" \t\f")
        if code and not code.startswith("#"):
            columns.append(indentation_column(line[:len(line) - len(code)]))
            if len(columns) == RIGHT_LINES:
                break
    return min(columns, default=0)


def _name(state: FimState) -> str:
    """The name the finish writes after `state`: one the name judge accepts as a load where it is on, and after a
    dot a member of the receiver where the member judge knows them."""
    members = state.members
    member = timed(members.source, members.first_member, "", state.lexer.text == ".") if judging(members) else None
    if member is not None:
        return member
    names = state.names
    return NAME if names is None or names.off else BOUND_NAME


def _completions(state: FimState) -> list[str]:
    """The rests of the names the file or the middle binds that the name in progress begins, the shortest first;
    builtins only where the file binds none (with the name judge on: `return proxy_env + e` ends as
    `environment`, where `e` is unbound, rather than as `eval`)."""
    names, begun = state.names, state.lexer.text
    members = state.members
    member = timed(members.source, members.first_member, begun) if judging(members) else None
    if member is not None:
        return [member[len(begun):]]
    if names is None or names.off:
        return []
    longer = sorted((name for name in names.file.known | names.written
                     if len(name) > len(begun) and name.startswith(begun)), key=lambda name: (len(name), name))
    own = [name for name in longer if name not in _BUILTINS]
    return [name[len(begun):] for name in (own or longer)[:NAME_COMPLETIONS]]


def _after_indentation(parser: RecognizerState) -> frozenset[str]:
    """What may come next, through the INDENT or DEDENTs that the next token's column will bring."""
    allowed = parser.allowed()
    for change in (lx.INDENT, lx.DEDENT):
        changed = parser
        while change in changed.allowed():
            changed = changed.feed(change)
            allowed |= changed.allowed()
            if change == lx.INDENT:
                break
    return allowed


def _separated(token: int, text: str) -> str:
    """`text` after a space where it would otherwise merge with the token in progress."""
    return " " + text if token != lx.START and _would_merge(token, text[0]) else text


@lru_cache(maxsize=256)
def _merging(right: str) -> tuple[str, ...]:
    """Starts of terminals whose rest begins the right context (`im` before `port x`): the middle's last token
    runs on into the right context's first."""
    found = {lx.SHORTEST_TEXT[lx.NAME]} if right and lx.is_identifier_char(right[0]) else set()
    for text in lx.SHORTEST_TEXT.values():
        for split in range(1, len(text)):
            if right.startswith(text[split:]):
                found.add(text[:split])
    return tuple(sorted(found))


def _would_merge(token: int, char: str) -> bool:
    return lx.step(token, char) != lx.DEAD or (lx.KIND[token] == lx.KIND_NUMBER and lx.is_identifier_start(char))
