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
            first_dotted: list[tuple[int, ...]] = []
            is_terminal: list[bool] = []
            nullable: list[bool] = []
        else:
            first_rule, first_symbol = len(base.grammar.rules), len(base.grammar.names)
            next_symbol, previous_symbol = base.next_symbol[:], base.previous_symbol[:]
            lhs, dot, rule_of = base.lhs[:], base.dot[:], base.rule_of[:]
            first_dotted = list(base.first_dotted)
            is_terminal, nullable = base.is_terminal[:], base.nullable[:]
        new_symbols = range(first_symbol, len(grammar.names))
        first_dotted += [()] * len(new_symbols)
        is_terminal += [symbol in grammar.terminals for symbol in new_symbols]
        nullable += [symbol in grammar.nullable for symbol in new_symbols]
        for index in range(first_rule, len(grammar.rules)):
            left, rhs = grammar.rules[index]
            first_dotted[left] += (len(next_symbol),)
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
        self.first_dotted = tuple(first_dotted)
        self.is_terminal = is_terminal
        self.nullable = nullable

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
