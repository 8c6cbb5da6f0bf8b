"""Earley parsing over an NFA (Sec. IV-A of the FIM quotient paper).

There is one chart per NFA state instead of one per input position, and the scanner follows the NFA's
transitions, so the charts describe every string of the regular language at once. The parser runs to a fixpoint,
which makes it correct on NFAs with cycles.

Creation methods (Sec. IV-B, Fig. 2) are recovered from the finished charts rather than stored per item: an item
`[A -> α X • β (o)]` in chart `q` was created from `[A -> α • X β (o)]` in every chart `p` that holds it and from
which `X` leads to `q` (by a transition, or by an `X` completed between the two charts). That is exactly the set
of creations an item-by-item log would hold, duplicates included, without the memory of the log.

Predicted items are not stored one by one: a chart keeps the set of nonterminals it predicted (`Predicted`, shared
by every chart and every parse that predicts the same set), which implies them all. Two thirds of a quotient's
items are predicted ones, so this is most of the charts' size; prediction itself only scans over the chart's
transitions and completes empty rules, and a completion finds its predicted parents in the set.
"""

from __future__ import annotations

from collections.abc import Iterator

from earley.deadline import CLOCK_INTERVAL, DeadlineExceeded, check_deadline
from earley.grammar import Grammar
from earley.nfa import NFA
from earley.reaper import discard
from earley.tables import COMPLETE, GrammarTables, Predicted

Creation = tuple
# NFA states from which a parse's charts are freed in the background: about 100,000 items, 10 ms to free.
_FREED_IN_THE_BACKGROUND = 1000


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
        # Items that scanning and completion put in each chart, and those waiting for a nonterminal; what
        # prediction puts there is implicit in the chart's `Predicted` set: every rule of its nonterminals, with
        # the dot at 0 and the chart as its origin.
        self.items: list[set[int]] = [set() for _ in range(nfa.n_states)]
        self.predicted: list[Predicted] = [tables.predicted()] * nfa.n_states
        self.waiters: list[dict[int, list[int]]] = [{} for _ in range(nfa.n_states)]
        self.completed: list[dict[int, set[int]]] = [{} for _ in range(nfa.n_states)]  # origin: symbol: charts
        self.completed_in: list[dict[int, set[int]]] = [{} for _ in range(nfa.n_states)]
        try:
            self._run(deadline)
        except DeadlineExceeded:
            self.release()
            raise

    def release(self) -> None:
        """Done with the parse: big charts are freed in the background (`earley.reaper`), and the parse is empty
        afterwards; small ones are left to be freed with it (in less time than the handing over takes)."""
        if self.nfa.n_states >= _FREED_IN_THE_BACKGROUND:
            discard(self.items, self.waiters, self.completed, self.completed_in, self.reverse_delta, self.delta)

    def holds(self, chart: int, item: int) -> bool:
        """True iff `item` is in the chart, put there by any creation method."""
        if item in self.items[chart]:
            return True
        tables = self.tables
        dotted = item % tables.n_dotted
        return (tables.dot[dotted] == 0 and item // tables.n_dotted == chart
                and tables.lhs[dotted] in self.predicted[chart].nonterminals)

    def held(self, chart: int) -> list[int]:
        """Every item in `chart`: those put there and those its predictions imply."""
        base = self.tables.n_dotted * chart
        first_dotted = self.tables.first_dotted
        implied = [dotted + base for symbol in self.predicted[chart].nonterminals for dotted in first_dotted[symbol]]
        return [*self.items[chart], *implied]

    def waiting(self, chart: int, symbol: int) -> list[int]:
        """The items in `chart` whose dot is before the nonterminal `symbol`."""
        base = self.tables.n_dotted * chart
        predicted = self.predicted[chart].rules.waiting.get(symbol, ())
        return [*self.waiters[chart].get(symbol, ()), *(dotted + base for dotted in predicted)]

    def _run(self, deadline: float | None) -> None:
        """Fill the charts from the initial states' predictions, one agenda item at a time; raises
        `DeadlineExceeded` past `deadline`. One piece on purpose: this loop is most of the cost of a quotient, and
        it keeps the tables in locals; split into helpers, it would pay a call per item."""
        tables = self.tables
        n_dotted = tables.n_dotted
        next_symbol, lhs, is_terminal = tables.next_symbol, tables.lhs, tables.is_terminal
        items, predicted, waiters, completed, completed_in, delta = (
            self.items, self.predicted, self.waiters, self.completed, self.completed_in, self.delta
        )
        agenda: list[tuple[int, int]] = []
        push = agenda.append

        def predict(chart: int, symbol: int) -> None:
            """Predict `symbol` in `chart`: scan what the rules it adds can scan over the chart's transitions,
            advance their waits over what already completed here, and complete their empty rules."""
            predicted[chart], added = predicted[chart].predicting(symbol, tables)
            if added is None:
                return
            base = n_dotted * chart
            for terminal, targets in delta[chart].items():
                for item in added.scanned.get(terminal, ()):
                    item += base
                    for target in targets:
                        if item not in items[target]:
                            items[target].add(item)
                            push((target, item))
            completed_here = completed[chart]
            if completed_here:
                for waited, rules in added.waiting.items():
                    for target in completed_here.get(waited, ()):
                        for item in rules:
                            item += base + 1
                            if item not in items[target]:
                                items[target].add(item)
                                push((target, item))
            for item in added.empty:
                item += base
                if item not in items[chart]:
                    items[chart].add(item)
                    push((chart, item))

        for state in self.nfa.initial:
            predict(state, tables.grammar.start)
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
                charts = completed[origin].get(left)
                if charts is None:
                    charts = completed[origin][left] = set()
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
                implied = predicted[origin].rules.waiting.get(left, ())
                # Without Leo's optimization, right recursion makes long steps.
                countdown -= (len(parents) + len(implied)) >> 4
                for waiting in parents:
                    waiting += 1
                    if waiting not in chart_items:
                        chart_items.add(waiting)
                        push((chart, waiting))
                base = n_dotted * origin + 1
                for waiting in implied:
                    waiting += base
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
                waiting = waiters[chart].get(symbol)
                if waiting is None:
                    waiters[chart][symbol] = [item]
                else:
                    waiting.append(item)
                if symbol not in predicted[chart].nonterminals:
                    predict(chart, symbol)
                item += 1
                targets = completed[chart].get(symbol, ())
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
            for waiting in self.waiting(chart, left):
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
            if self.holds(source, before):
                yield (kind, source, before)

    def accepts_some(self) -> bool:
        """True iff some string of the NFA is in the grammar's language."""
        start = self.tables.grammar.start
        return any(
            final in self.completed[initial].get(start, ())
            for initial in self.nfa.initial
            for final in self.nfa.final
        )
