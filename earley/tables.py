"""Flat integer tables over a grammar's dotted rules, shared by both Earley parsers.

A dotted rule `A -> α • β` is one int: rule `r` with the dot at position `k` is `first_dot[r] + k`, so advancing
the dot is `+ 1`. An Earley item is `dotted + n_dotted * origin`, one int that hashes fast and needs no object.
"""

from __future__ import annotations

from earley.grammar import Grammar

COMPLETE = -1


class GrammarTables:
    __slots__ = (
        "grammar",
        "n_dotted",
        "next_symbol",
        "previous_symbol",
        "lhs",
        "dot",
        "rule_of",
        "first_dotted",
        "is_terminal",
        "nullable",
    )

    def __init__(self, grammar: Grammar, base: GrammarTables | None = None):
        """Tables of `grammar`; with `base`, the tables of a grammar that `grammar` extends (`Grammar.extended`):
        they are copied and only the new rules and symbols are added."""
        self.grammar = grammar
        if base is None:
            first_rule = first_symbol = 0
            next_symbol: list[int] = []
            previous_symbol: list[int] = []
            lhs: list[int] = []
            dot: list[int] = []
            rule_of: list[int] = []
            first_dotted: list[list[int]] = []
        else:
            first_rule, first_symbol = len(base.grammar.rules), len(base.grammar.names)
            next_symbol, previous_symbol = base.next_symbol[:], base.previous_symbol[:]
            lhs, dot, rule_of = base.lhs[:], base.dot[:], base.rule_of[:]
            first_dotted = [list(row) for row in base.first_dotted]
        first_dotted += [[] for _ in grammar.names[first_symbol:]]
        for index in range(first_rule, len(grammar.rules)):
            left, rhs = grammar.rules[index]
            first_dotted[left].append(len(next_symbol))
            size = len(rhs) + 1
            next_symbol += rhs
            next_symbol.append(COMPLETE)
            previous_symbol.append(COMPLETE)
            previous_symbol += rhs
            lhs += [left] * size
            dot += range(size)
            rule_of += [index] * size
        self.n_dotted = len(next_symbol)
        self.next_symbol = next_symbol
        self.previous_symbol = previous_symbol
        self.lhs = lhs
        self.dot = dot
        self.rule_of = rule_of
        self.first_dotted = tuple(tuple(row) for row in first_dotted)
        self.is_terminal = [symbol in grammar.terminals for symbol in range(len(grammar.names))]
        self.nullable = [symbol in grammar.nullable for symbol in range(len(grammar.names))]

    def remainder(self, dotted: int) -> tuple[int, ...]:
        """The symbols after the dot."""
        rhs = self.grammar.rules[self.rule_of[dotted]][1]
        return rhs[self.dot[dotted]:]

    def item_text(self, item: int) -> str:
        dotted, origin = item % self.n_dotted, item // self.n_dotted
        names = self.grammar.names
        rhs = self.grammar.rules[self.rule_of[dotted]][1]
        position = self.dot[dotted]
        body = [names[s] for s in rhs[:position]] + ["•"] + [names[s] for s in rhs[position:]]
        return f"[{names[self.lhs[dotted]]} -> {' '.join(body)} ({origin})]"
