"""Flat integer tables over a grammar's dotted rules, shared by both Earley parsers.

A dotted rule `A -> α • β` is one int: rule `r` with the dot at position `k` is `first_dot[r] + k`, so advancing
the dot is `+ 1`. An Earley item is `dotted + n_dotted * origin`, one int that hashes fast and needs no object.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

from earley.grammar import Grammar

COMPLETE = -1


class Rules(NamedTuple):
    """Dotted rules with the dot at 0 (their origin the chart that predicts them), sorted by what follows the
    dot: a terminal (as the dotted rule past it, by terminal), a nonterminal (by it), or nothing (empty rules)."""

    scanned: dict[int, tuple[int, ...]]
    waiting: dict[int, tuple[int, ...]]
    empty: tuple[int, ...]


class Predicted:
    """A set of nonterminals predicted in a chart, closed under prediction, with the rules it puts there.

    Charts that predict the same set share one, and the step from a set to the set with one more nonterminal
    predicted is remembered, so a parse that predicts sets seen before (in any parse of the same tables) only
    follows those steps: what prediction adds to a chart is implicit in its set (after Earley parsers that
    precompute prediction, as LR(0) item sets do)."""

    __slots__ = ("nonterminals", "rules", "_steps")

    def __init__(self, nonterminals: frozenset[int], rules: Rules):
        self.nonterminals = nonterminals
        self.rules = rules
        self._steps: dict[int, tuple[Predicted, Rules | None]] = {}

    def predicting(self, symbol: int, tables: GrammarTables) -> tuple[Predicted, Rules | None]:
        """The set after predicting `symbol` too, and the rules that adds (None if nothing is new)."""
        found = self._steps.get(symbol)
        if found is None:
            new = tables.left_corners(symbol) - self.nonterminals
            found = (tables.predicted(self.nonterminals | new), tables.rules_of(new)) if new else (self, None)
            self._steps[symbol] = found
        return found


class GrammarTables:
    __slots__ = (
        "grammar",
        "n_dotted",
        "next_symbol",
        "lhs",
        "first_dotted",
        "is_terminal",
        "nullable",
        "_left_corners",
        "_predicted",
        "_positions",
        "_remainders",
    )

    def __init__(self, grammar: Grammar, base: GrammarTables | None = None):
        """Tables of `grammar`; with `base`, the tables of a grammar that `grammar` extends (`Grammar.extended`):
        they are copied and only the new rules and symbols are added. Only what a recognizer reads is built here
        (an extension is built per right context); the rest is built when first asked for."""
        self.grammar = grammar
        if base is None:
            first_rule = first_symbol = 0
            next_symbol: list[int] = []
            lhs: list[int] = []
            first_dotted: list[tuple[int, ...]] = []
            is_terminal: list[bool] = []
            nullable: list[bool] = []
        else:
            first_rule, first_symbol = len(base.grammar.rules), len(base.grammar.names)
            next_symbol, lhs = base.next_symbol[:], base.lhs[:]
            first_dotted = list(base.first_dotted)
            is_terminal, nullable = base.is_terminal[:], base.nullable[:]
        new_symbols = range(first_symbol, len(grammar.names))
        first_dotted += [()] * len(new_symbols)
        is_terminal += [symbol in grammar.terminals for symbol in new_symbols]
        nullable += [symbol in grammar.nullable for symbol in new_symbols]
        for index in range(first_rule, len(grammar.rules)):
            left, rhs = grammar.rules[index]
            first_dotted[left] += (len(next_symbol),)
            next_symbol += rhs
            next_symbol.append(COMPLETE)
            lhs += [left] * (len(rhs) + 1)
        self.n_dotted = len(next_symbol)
        self.next_symbol = next_symbol
        self.lhs = lhs
        self.first_dotted = tuple(first_dotted)
        self.is_terminal = is_terminal
        self.nullable = nullable
        self._left_corners: dict[int, frozenset[int]] = {}
        self._predicted: dict[frozenset[int], Predicted] = {}
        self._positions: tuple[list[int], list[int], list[int]] | None = None
        self._remainders: list[tuple[int, ...]] | None = None

    @property
    def previous_symbol(self) -> list[int]:
        """For each dotted rule, the symbol before the dot (`COMPLETE` with the dot at 0)."""
        return self._by_position()[0]

    @property
    def dot(self) -> list[int]:
        """For each dotted rule, the position of the dot."""
        return self._by_position()[1]

    @property
    def rule_of(self) -> list[int]:
        """For each dotted rule, the index of its rule."""
        return self._by_position()[2]

    def _by_position(self) -> tuple[list[int], list[int], list[int]]:
        """The tables that quotient extraction reads (of the reversed grammar, once) and a recognizer never does."""
        if self._positions is None:
            rules = self.grammar.rules
            self._positions = (
                [symbol for _, rhs in rules for symbol in (COMPLETE, *rhs)],
                [position for _, rhs in rules for position in range(len(rhs) + 1)],
                [index for index, (_, rhs) in enumerate(rules) for _ in range(len(rhs) + 1)],
            )
        return self._positions

    def left_corners(self, symbol: int) -> frozenset[int]:
        """The nonterminals that predicting `symbol` predicts, itself included (memoized)."""
        found = self._left_corners.get(symbol)
        if found is None:
            corners = {symbol}
            stack = [symbol]
            while stack:
                for dotted in self.first_dotted[stack.pop()]:
                    following = self.next_symbol[dotted]
                    if following != COMPLETE and not self.is_terminal[following] and following not in corners:
                        corners.add(following)
                        stack.append(following)
            found = self._left_corners[symbol] = frozenset(corners)
        return found

    def predicted(self, nonterminals: frozenset[int] = frozenset()) -> Predicted:
        """The shared `Predicted` of a set of nonterminals closed under prediction (the empty set by default)."""
        found = self._predicted.get(nonterminals)
        if found is None:
            found = self._predicted[nonterminals] = Predicted(nonterminals, self.rules_of(nonterminals))
        return found

    def rules_of(self, nonterminals: Iterable[int]) -> Rules:
        """The rules of `nonterminals` with the dot at 0."""
        scanned: dict[int, list[int]] = {}
        waiting: dict[int, list[int]] = {}
        empty: list[int] = []
        for nonterminal in nonterminals:
            for dotted in self.first_dotted[nonterminal]:
                following = self.next_symbol[dotted]
                if following == COMPLETE:
                    empty.append(dotted)
                elif self.is_terminal[following]:
                    scanned.setdefault(following, []).append(dotted + 1)
                else:
                    waiting.setdefault(following, []).append(dotted)
        return Rules(
            {terminal: tuple(rules) for terminal, rules in scanned.items()},
            {symbol: tuple(rules) for symbol, rules in waiting.items()},
            tuple(empty),
        )

    @property
    def remainders(self) -> list[tuple[int, ...]]:
        """For each dotted rule, the symbols after the dot (built when first asked: quotient extraction asks for
        them by the thousand)."""
        if self._remainders is None:
            self._remainders = [rhs[position:] for _, rhs in self.grammar.rules for position in range(len(rhs) + 1)]
        return self._remainders

    def item_text(self, item: int) -> str:
        dotted, origin = item % self.n_dotted, item // self.n_dotted
        names = self.grammar.names
        rhs = self.grammar.rules[self.rule_of[dotted]][1]
        position = self.dot[dotted]
        body = [names[s] for s in rhs[:position]] + ["•"] + [names[s] for s in rhs[position:]]
        return f"[{names[self.lhs[dotted]]} -> {' '.join(body)} ({origin})]"
