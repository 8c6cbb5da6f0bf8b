"""Earley parsing over an NFA (Sec. IV-A of the FIM quotient paper).

There is one chart per NFA state instead of one per input position, and the scanner follows the NFA's
transitions, so the charts describe every string of the regular language at once. The parser runs to a fixpoint,
which makes it correct on NFAs with cycles.

Creation methods (Sec. IV-B, Fig. 2) are recovered from the finished charts rather than stored per item: an item
`[A -> α X • β (o)]` in chart `q` was created from `[A -> α • X β (o)]` in every chart `p` that holds it and from
which `X` leads to `q` (by a transition, or by an `X` completed between the two charts). That is exactly the set
of creations an item-by-item log would hold, duplicates included, without the memory of the log.
"""

from __future__ import annotations

from collections.abc import Iterator

from earley.deadline import CLOCK_INTERVAL, check_deadline
from earley.grammar import Grammar
from earley.nfa import NFA
from earley.tables import COMPLETE, GrammarTables

Creation = tuple


class NFAParse:
    """The Earley charts of a grammar over every string of an NFA."""

    def __init__(self, grammar: Grammar | GrammarTables, nfa: NFA, deadline: float | None = None):
        """Run the charts to their fixpoint; raises `DeadlineExceeded` past `deadline` (right recursion over a
        long input is quadratic in Earley without Leo's optimization, so callers bound it in time)."""
        tables = grammar if isinstance(grammar, GrammarTables) else GrammarTables(grammar)
        self.tables = tables
        self.nfa = nfa
        ids = tables.grammar.ids
        terminals = tables.grammar.terminals
        self.delta: list[dict[int, tuple[int, ...]]] = []
        self.reverse_delta: list[dict[int, list[int]]] = [{} for _ in range(nfa.n_states)]
        for state, row in enumerate(nfa.delta):
            if state % CLOCK_INTERVAL == 0:
                check_deadline(deadline)
            coded = {}
            for label, targets in row.items():
                symbol = ids.get(label)
                if symbol is None or symbol not in terminals:
                    raise ValueError(f"NFA label {label!r} is not a terminal of the grammar")
                coded[symbol] = targets
                for target in targets:
                    self.reverse_delta[target].setdefault(symbol, []).append(state)
            self.delta.append(coded)
        self.items: list[set[int]] = [set() for _ in range(nfa.n_states)]
        self.waiters: list[dict[int, list[int]]] = [{} for _ in range(nfa.n_states)]
        self.completed: dict[int, set[int]] = {}
        self.completed_in: list[dict[int, set[int]]] = [{} for _ in range(nfa.n_states)]
        self._run(deadline)

    def _run(self, deadline: float | None) -> None:
        tables = self.tables
        n_dotted = tables.n_dotted
        n_symbols = len(tables.grammar.names)
        next_symbol, lhs, is_terminal = tables.next_symbol, tables.lhs, tables.is_terminal
        first_dotted = tables.first_dotted
        items, waiters, completed, completed_in, delta = (
            self.items, self.waiters, self.completed, self.completed_in, self.delta
        )
        agenda: list[tuple[int, int]] = []
        push = agenda.append
        for state in self.nfa.initial:
            for dotted in first_dotted[tables.grammar.start]:
                item = dotted + n_dotted * state
                if item not in items[state]:
                    items[state].add(item)
                    push((state, item))
        countdown = CLOCK_INTERVAL
        while agenda:
            countdown -= 1
            if countdown <= 0:
                check_deadline(deadline)
                countdown = CLOCK_INTERVAL
            chart, item = agenda.pop()
            dotted = item % n_dotted
            symbol = next_symbol[dotted]
            if symbol == COMPLETE:
                origin = item // n_dotted
                left = lhs[dotted]
                charts = completed.get(origin * n_symbols + left)
                if charts is None:
                    charts = completed[origin * n_symbols + left] = set()
                elif chart in charts:
                    continue
                charts.add(chart)
                origins = completed_in[chart].get(left)
                if origins is None:
                    completed_in[chart][left] = {origin}
                else:
                    origins.add(origin)
                chart_items = items[chart]
                parents = waiters[origin].get(left, ())
                countdown -= len(parents) >> 4  # without Leo's optimization, right recursion makes long steps
                for waiting in parents:
                    waiting += 1
                    if waiting not in chart_items:
                        chart_items.add(waiting)
                        push((chart, waiting))
            elif is_terminal[symbol]:
                item += 1
                for target in delta[chart].get(symbol, ()):
                    if item not in items[target]:
                        items[target].add(item)
                        push((target, item))
            else:
                chart_items = items[chart]
                waiting = waiters[chart].get(symbol)
                if waiting is None:
                    waiters[chart][symbol] = [item]
                    base = n_dotted * chart
                    for first in first_dotted[symbol]:
                        first += base
                        if first not in chart_items:
                            chart_items.add(first)
                            push((chart, first))
                else:
                    waiting.append(item)
                item += 1
                targets = completed.get(chart * n_symbols + symbol, ())
                countdown -= len(targets) >> 4
                for target in targets:
                    if item not in items[target]:
                        items[target].add(item)
                        push((target, item))

    def creations(self, chart: int, item: int) -> Iterator[Creation]:
        """Every way `item` in `chart` was created (Fig. 2's creation methods).

        Yields `("initial",)`, `("predicted", chart, item')`, `("scanned", chart', item')` or
        `("completed", chart', item')`, where `item'` in `chart'` is the item it came from.
        """
        tables = self.tables
        dotted = item % tables.n_dotted
        if tables.dot[dotted] == 0:
            left = tables.lhs[dotted]
            if left == tables.grammar.start and chart in self.nfa.initial:
                yield ("initial",)
            for waiting in self.waiters[chart].get(left, ()):
                yield ("predicted", chart, waiting)
            return
        previous = tables.previous_symbol[dotted]
        before = item - 1
        if tables.is_terminal[previous]:
            sources = self.reverse_delta[chart].get(previous, ())
            kind = "scanned"
        else:
            sources = self.completed_in[chart].get(previous, ())
            kind = "completed"
        for source in sources:
            if before in self.items[source]:
                yield (kind, source, before)

    def accepts_some(self) -> bool:
        """True iff some string of the NFA is in the grammar's language."""
        start = self.tables.grammar.start
        n_symbols = len(self.tables.grammar.names)
        return any(
            final in self.completed.get(initial * n_symbols + start, ())
            for initial in self.nfa.initial
            for final in self.nfa.final
        )
