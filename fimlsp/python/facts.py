"""Python's facts that several modules read, as data in one place (as Lark keeps a language's facts on its
indenter class): the words that continue a statement, the terminals that end one, what a decorator may precede,
and which lines can hold or start a statement. The lexical rules themselves are `fimlsp.python.lexemes`'."""

from __future__ import annotations

import re

from fimlsp.python import lexemes as lx

# A statement that starts with one of these words continues the compound statement before it: a clause of it.
CONTINUING_WORDS = ("else", "elif", "except", "finally")
CONTINUING = frozenset(CONTINUING_WORDS)
CONTINUING_CLAUSE = re.compile(rf"(?:{'|'.join(CONTINUING_WORDS)})\b")
# The clauses that only a `try` statement has: a right context that starts with one needs a `try` before it.
TRY_CLAUSE = re.compile(r"(?:except|finally)\b")
# A statement that starts with one of these can be decorated by the line before it.
DECORATABLE = frozenset({"def", "class", "async", "@"})
# The terminals after which the next one starts a statement.
STATEMENT_ENDS = frozenset({lx.NEWLINE, lx.INDENT, lx.DEDENT, ";"})
# What a line's code starts with when the line cannot start a statement: nothing (a blank or empty line), a
# comment, a closing bracket, or a backslash (a continuation at a line's start joins it to the next).
NOT_A_STATEMENT = frozenset(" \t\f#\r\n)]}\\")
# The indentation of a line that can start a statement, in text as the user wrote it (`\r` ends lines too).
STATEMENT_LINE = re.compile(r"(?:^|(?<=\r))[ \t\f]*(?=[^ \t\f#\r\n)\]}\\])", re.MULTILINE)
# The indentation of a line that holds code, not a comment or a closing bracket, in newline-normalized text: a
# line that starts with a backslash counts (the lowest lines of a right context may be any line of code).
CODE_LINE = re.compile(r"^[ \t\f]*(?=[^ \t\f#\n)\]}])", re.MULTILINE)
