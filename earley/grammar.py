"""Context-free grammars with symbols interned to small integers.

Symbols are ints indexing `Grammar.names`; terminals are a subset of them. Keeping every symbol an int lets the
Earley tables be flat lists, and keeping the whole terminal alphabet through `reverse()` and `trim()` keeps terminal
names stable between a grammar and its quotients.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from functools import cached_property

Rule = tuple[int, tuple[int, ...]]


class GrammarError(ValueError):
    """A grammar that cannot be built: an undefined symbol, a bad start symbol, a syntax error in its text."""


def _grown(known: frozenset[int], rules: Sequence[Rule]) -> frozenset[int]:
    """`known` grown by every lhs of `rules` whose rhs lies entirely in it, until nothing changes."""
    return _grow(known, rules)[0]


def _grow(known: frozenset[int], rules: Sequence[Rule]) -> tuple[frozenset[int], list[Rule]]:
    """`_grown`, and the rules whose rhs lies entirely in the result (a worklist, linear in the size of
    `rules`)."""
    grown = set(known)
    missing = []
    rules_using: dict[int, list[int]] = {}
    stack = []
    for index, (lhs, rhs) in enumerate(rules):
        unknown = [symbol for symbol in rhs if symbol not in grown]
        missing.append(len(unknown))
        for symbol in unknown:
            rules_using.setdefault(symbol, []).append(index)
        if not unknown and lhs not in grown:
            grown.add(lhs)
            stack.append(lhs)
    while stack:
        for index in rules_using.pop(stack.pop(), ()):
            missing[index] -= 1
            lhs = rules[index][0]
            if missing[index] == 0 and lhs not in grown:
                grown.add(lhs)
                stack.append(lhs)
    return frozenset(grown), [rule for rule, left in zip(rules, missing) if not left]


class Grammar:
    """An immutable context-free grammar `(V, Σ, R, S)` over interned symbols."""

    def __init__(self, names: Sequence[str], terminals: Iterable[int], rules: Iterable[Rule], start: int):
        self.names: tuple[str, ...] = tuple(names)
        self.terminals: frozenset[int] = frozenset(terminals)
        self.rules: tuple[Rule, ...] = tuple((lhs, tuple(rhs)) for lhs, rhs in rules)
        self.start = start
        self.ids: dict[str, int] = {name: index for index, name in enumerate(self.names)}
        if len(self.ids) != len(self.names):
            raise GrammarError("symbol names must be unique")
        if start in self.terminals:
            raise GrammarError(f"the start symbol {self.names[start]!r} is a terminal")
        for lhs, _ in self.rules:
            if lhs in self.terminals:
                raise GrammarError(f"terminal {self.names[lhs]!r} has a production")

    @classmethod
    def from_rules(
        cls, start: str, rules: Iterable[tuple[str, Sequence[str]]], terminals: Iterable[str] | None = None
    ) -> Grammar:
        """Build from named rules. Without `terminals`, every symbol that has no production is a terminal."""
        rules = [(lhs, tuple(rhs)) for lhs, rhs in rules]
        defined = {lhs for lhs, _ in rules}
        names: dict[str, int] = {}

        def intern(name: str) -> int:
            return names.setdefault(name, len(names))

        intern(start)
        for lhs, rhs in rules:
            intern(lhs)
            for symbol in rhs:
                intern(symbol)
        if terminals is None:
            terminal_names = set(names) - defined
        else:
            terminal_names = set(terminals)
            for name in terminal_names:
                intern(name)
            undefined = set(names) - defined - terminal_names
            if undefined:
                raise GrammarError(f"symbols with no production that are not terminals: {sorted(undefined)}")
        if start in terminal_names:
            raise GrammarError(f"the start symbol {start!r} is a terminal")
        ordered = sorted(names, key=names.__getitem__)
        return cls(
            ordered,
            (names[name] for name in terminal_names),
            ((names[lhs], tuple(names[s] for s in rhs)) for lhs, rhs in rules),
            names[start],
        )

    def is_terminal(self, symbol: int) -> bool:
        return symbol in self.terminals

    @cached_property
    def rules_by_lhs(self) -> tuple[tuple[int, ...], ...]:
        """For each symbol, the indices of its rules."""
        by_lhs: list[list[int]] = [[] for _ in self.names]
        for index, (lhs, _) in enumerate(self.rules):
            by_lhs[lhs].append(index)
        return tuple(tuple(indices) for indices in by_lhs)

    @cached_property
    def nullable(self) -> frozenset[int]:
        """Nonterminals that derive the empty string."""
        return _grown(frozenset(), self.rules)

    @cached_property
    def productive(self) -> frozenset[int]:
        """Symbols that derive at least one terminal string (every terminal does)."""
        return _grown(self.terminals, self.rules)

    @cached_property
    def adjacent_terminals(self) -> frozenset[tuple[int, int]]:
        """The pairs of terminals `(a, b)` that occur side by side in some string of some symbol's language: a
        terminal string with any other pair side by side is in none (a check far cheaper than a parse)."""
        first, last = self._end_terminals(forward=True), self._end_terminals(forward=False)
        nullable = self.nullable
        pairs: set[tuple[int, int]] = set()
        for _, rhs in self.rules:
            for index, before in enumerate(rhs):
                for after in rhs[index + 1:]:
                    pairs.update((a, b) for a in last[before] for b in first[after])
                    if after not in nullable:
                        break
        return frozenset(pairs)

    def _end_terminals(self, forward: bool) -> list[set[int]]:
        """For each symbol, the terminals that begin (`forward`) or end some string of its language."""
        ends = [{symbol} if symbol in self.terminals else set() for symbol in range(len(self.names))]
        nullable = self.nullable
        changed = True
        while changed:
            changed = False
            for lhs, rhs in self.rules:
                for symbol in rhs if forward else reversed(rhs):
                    if not ends[symbol] <= ends[lhs]:
                        ends[lhs] |= ends[symbol]
                        changed = True
                    if symbol not in nullable:
                        break
        return ends

    @cached_property
    def reachable(self) -> frozenset[int]:
        """Symbols that occur in some sentential form derived from the start symbol."""
        seen = {self.start}
        stack = [self.start]
        by_lhs = self.rules_by_lhs
        while stack:
            for index in by_lhs[stack.pop()]:
                for symbol in self.rules[index][1]:
                    if symbol not in seen:
                        seen.add(symbol)
                        stack.append(symbol)
        return frozenset(seen)

    @property
    def is_empty(self) -> bool:
        """True iff the language is empty."""
        return self.start not in self.productive

    def reverse(self) -> Grammar:
        """The grammar of the reversed language: every right-hand side reversed."""
        return Grammar(self.names, self.terminals, ((lhs, rhs[::-1]) for lhs, rhs in self.rules), self.start)

    def trim(self) -> Grammar:
        """Drop unproductive symbols, then unreachable ones; terminals are all kept, nonterminals renumbered.

        A recognizer relies on this: in a trimmed grammar every Earley item can still complete, so a chart with
        any item in it proves that the input so far is a viable prefix.
        """
        productive = self.productive
        useful_rules = [(lhs, rhs) for lhs, rhs in self.rules if all(s in productive for s in (lhs, *rhs))]
        pruned = Grammar(self.names, self.terminals, useful_rules, self.start)
        reachable = pruned.reachable if self.start in productive else frozenset({self.start})
        keep = sorted(self.terminals | {s for s in reachable if s not in self.terminals})
        renumber = {old: new for new, old in enumerate(keep)}
        return Grammar(
            [self.names[old] for old in keep],
            (renumber[t] for t in self.terminals),
            (
                (renumber[lhs], tuple(renumber[s] for s in rhs))
                for lhs, rhs in useful_rules
                if lhs in reachable
            ),
            renumber[self.start],
        )

    def extended(self, names: Sequence[str], rules: Iterable[Rule], start: int,
                 terminals: Iterable[int] = ()) -> Grammar:
        """This trimmed grammar with the symbols `names` and `rules` added after its own, started at `start`; the
        new symbols are nonterminals but for `terminals`.

        Its symbols and rules keep their numbers, so what was computed for it (tables, prediction closures) can
        be extended instead of rebuilt; the cost is that of the new rules alone. The new rules must be productive
        when this grammar's symbols are (a quotient's are: each new symbol has a rule made before any rule that
        uses it, from symbols that have), which in a trimmed grammar all are but the start symbol of an empty
        one: only then are the rules checked, and the unproductive ones dropped. Unreachable symbols stay.
        """
        extended = object.__new__(Grammar)
        extended.names = self.names + tuple(names)
        new_terminals = frozenset(terminals)
        extended.terminals = self.terminals | new_terminals
        extended.start = start
        extended.ids = dict(self.ids)
        for index, name in enumerate(names, len(self.names)):
            if extended.ids.setdefault(name, index) != index:
                raise GrammarError("symbol names must be unique")
        new_rules = tuple(rules)
        if self.is_empty:
            extended.productive, kept = _grow(self.productive | new_terminals, new_rules)
            new_rules = tuple(kept)
        else:
            extended.productive = self.productive.union(new_terminals, (lhs for lhs, _ in new_rules))
        extended.rules = self.rules + new_rules
        # A rule with one of this grammar's symbols that derive no empty string derives none itself.
        never_empty = frozenset(range(len(self.names))) - self.nullable
        extended.nullable = _grown(self.nullable, [rule for rule in new_rules if never_empty.isdisjoint(rule[1])])
        return extended

    def rule_text(self, index: int) -> str:
        lhs, rhs = self.rules[index]
        return f"{self.names[lhs]} -> {' '.join(self.names[s] for s in rhs) or '<empty>'}"

    def __str__(self) -> str:
        return "\n".join(self.rule_text(index) for index in range(len(self.rules)))

    def __repr__(self) -> str:
        nonterminals = len(self.names) - len(self.terminals)
        return (
            f"<Grammar start={self.names[self.start]!r} rules={len(self.rules)} "
            f"nonterminals={nonterminals} terminals={len(self.terminals)}>"
        )
