"""Show the Earley quotient at work on the worked example of Sec. IV-B of the paper.

The left context `foo(a,` lexes to ID LPAR ID COMMA; the command prints the quotient grammar of the paper's
expression grammar with respect to it, and checks some continuations against it. With --right it also quotients
by a right context and checks middles against both.
"""

from __future__ import annotations

import argparse
import textwrap

from earley import NFA, GrammarError, Recognizer, left_quotient, parse_ebnf, right_quotient
from fimlsp.cli import UserError

PAPER_GRAMMAR = """
Expr: ID | Call
Call: Expr LPAR Args RPAR
Args: <empty> | Expr ArgCont
ArgCont: <empty> | COMMA Expr ArgCont
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--left", default="ID LPAR ID COMMA", help="left context as terminals (default: foo(a,)")
    parser.add_argument("--right", default="RPAR", help="right context as terminals (default: ')')")
    parser.add_argument(
        "--try", dest="candidates", action="append", default=None, metavar="TERMINALS",
        help="a middle to check, as space-separated terminals (repeatable)",
    )


def run(args: argparse.Namespace) -> int:
    try:
        grammar = parse_ebnf(PAPER_GRAMMAR)
        left = args.left.split()
        right = args.right.split()
        suffixes = left_quotient(grammar, NFA.sequence(left))
        fim = right_quotient(grammar, NFA.sequence(right))
    except (GrammarError, ValueError) as error:
        raise UserError(str(error)) from error
    print(f"grammar:\n{_indent(str(grammar))}\n")
    print(f"left quotient by {' '.join(left)} (how the text after the left context can complete it):")
    print(_indent(str(suffixes)) if not suffixes.is_empty else "  (empty: no continuation exists)")
    recognizer = Recognizer(fim)
    initial = recognizer.start()
    state = initial.feed_all(left) if initial is not None else None
    print(f"\nmiddles between [{' '.join(left)}] and [{' '.join(right)}]:")
    if state is None:
        print("  none: no middle can connect these contexts")
        return 1
    for candidate in args.candidates or ["", "ID", "ID COMMA", "RPAR", "ID LPAR ID RPAR"]:
        end = state.feed_all(candidate.split())
        verdict = "complete" if end is not None and end.complete else "viable prefix" if end else "rejected"
        print(f"  {candidate or '(empty)':<20} {verdict}")
    return 0


def _indent(text: str) -> str:
    return textwrap.indent(text, "  ")
