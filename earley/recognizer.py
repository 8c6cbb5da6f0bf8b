"""An incremental Earley recognizer whose states are values.

This is the per-keystroke, per-candidate-token hot path, so it is built for speed in pure Python:

- items are ints (`dotted + n_dotted * origin`, see `earley.tables`);
- prediction is precomputed: the closure of predicting a nonterminal (nullable-aware, after Aycock and
  Horspool) is computed once per set of predicted nonterminals and shared by every chart that predicts that set,
  so a chart stores only the items that scanning and completion put there;
- a state is a chart list plus an index. Feeding appends to the list in place when the list ends at the fed
  state (the common, linear case) and copies the prefix only when a state is fed twice, so forking is O(1) and
  a fork that diverges costs one list copy.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping

from earley.distance import DistanceTables
from earley.grammar import Grammar
from earley.tables import COMPLETE, GrammarTables


class _Closure:
    """What predicting a set of nonterminals adds to a chart, with dotted rules relative to the chart."""

    __slots__ = ("waiting", "terminals")

    def __init__(self, waiting: dict[int, tuple[int, ...]], terminals: frozenset[int]):
        self.waiting = waiting
        self.terminals = terminals


class _Chart:
    __slots__ = ("waiting", "closure", "accepting", "finish")

    def __init__(self, waiting: dict[int, list[int]], closure: _Closure, accepting: bool):
        self.waiting = waiting
        self.closure = closure
        self.accepting = accepting
        self.finish = None  # what `DistanceTables` learns of this chart, computed when first asked


class Recognizer:
    """Compiled recognition tables for one grammar; `start()` gives the state before any input."""

    def __init__(self, grammar: Grammar, base: Recognizer | None = None,
                 terminal_costs: Mapping[str, float] | None = None, markers: Iterable[str] = ()):
        """With `base`, a recognizer of the grammar that `grammar` extends (`Grammar.extended`): its tables are
        extended instead of rebuilt, and its prediction closures, which new rules cannot change, are shared.
        `terminal_costs` (the base's, else every terminal 1) is what `RecognizerState.distance` adds up.
        `markers`: terminals that end an input rather than go on with it (see `RightQuotients.recognizer_of`),
        fed like any other but never among those `RecognizerState.allowed` lists."""
        if base is None:
            self.grammar = grammar = grammar.trim()
            self.tables = GrammarTables(grammar)
        else:
            self.grammar = grammar
            self.tables = GrammarTables(grammar, base.tables)
            terminal_costs = terminal_costs if terminal_costs is not None else base._terminal_costs
        self.markers = frozenset(self.terminal(marker) for marker in markers)
        self._base = base
        self._base_symbols = 0 if base is None else len(base.grammar.names)
        self._closures: dict[frozenset[int], _Closure] = {}
        self._symbol_closures: dict[int, frozenset[int]] = {}
        self._new_closures: dict[int, tuple[frozenset[int], frozenset[int]]] = {}
        self._terminal_costs = terminal_costs
        self._distance_tables: DistanceTables | None = None

    @property
    def distance_tables(self) -> DistanceTables:
        """The tables of shortest completions, built when first asked for."""
        if self._distance_tables is None:
            self._distance_tables = DistanceTables(self.tables, self._terminal_costs)
        return self._distance_tables

    def start(self) -> RecognizerState | None:
        """The state before any input, or None if the language is empty."""
        if self.grammar.is_empty:
            return None
        start = self.grammar.start
        chart = _Chart({}, self._closure(frozenset((start,))), start in self.grammar.nullable)
        return RecognizerState(self, [chart], 0)

    def terminal(self, name: str) -> int:
        symbol = self.grammar.ids.get(name)
        if symbol is None or symbol not in self.grammar.terminals:
            raise KeyError(f"{name!r} is not a terminal of the grammar")
        return symbol

    def recognizes(self, terminals: Iterable[str]) -> bool:
        """Membership of a whole terminal sequence."""
        state = self.start()
        for name in terminals:
            if state is None:
                return False
            state = state.feed(name)
        return state is not None and state.complete

    def _symbol_closure(self, symbol: int) -> frozenset[int]:
        """Dotted rules (origin: this chart) that predicting `symbol` adds, nullable prefixes skipped."""
        found = self._symbol_closures.get(symbol)
        if found is None:
            found = self._symbol_closures[symbol] = self._walk_closure(symbol, 0)[0]
        return found

    def _new_symbol_closure(self, symbol: int) -> tuple[frozenset[int], frozenset[int]]:
        """For a symbol new in an extension: the new dotted rules that predicting it adds, and the base symbols it
        predicts, whose own closures are the base recognizer's (base rules never lead to new symbols)."""
        found = self._new_closures.get(symbol)
        if found is None:
            found = self._new_closures[symbol] = self._walk_closure(symbol, self._base_symbols)
        return found

    def _walk_closure(self, symbol: int, base_symbols: int) -> tuple[frozenset[int], frozenset[int]]:
        """The dotted rules that predicting `symbol` adds, walked no further than symbols below `base_symbols`,
        which are returned apart."""
        tables = self.tables
        first_dotted, next_symbol, is_terminal, nullable = (
            tables.first_dotted, tables.next_symbol, tables.is_terminal, tables.nullable)
        dotted_rules: set[int] = set()
        seen = {symbol}
        stack = [symbol]
        inherited: set[int] = set()
        while stack:
            for dotted in first_dotted[stack.pop()]:
                while True:
                    dotted_rules.add(dotted)
                    following = next_symbol[dotted]
                    if following == COMPLETE or is_terminal[following]:
                        break
                    if following < base_symbols:
                        inherited.add(following)
                    elif following not in seen:
                        seen.add(following)
                        stack.append(following)
                    if not nullable[following]:
                        break
                    dotted += 1
        return frozenset(dotted_rules), frozenset(inherited)

    def _closure(self, roots: frozenset[int]) -> _Closure:
        """What predicting `roots` adds to a chart. In an extension, the base recognizer's closure of the base
        symbols they predict (shared by every extension) with the few new rules added to it."""
        found = self._closures.get(roots)
        if found is not None:
            return found
        tables = self.tables
        next_symbol, is_terminal = tables.next_symbol, tables.is_terminal
        if self._base is None:
            dotted_rules: set[int] = set()
            for root in roots:
                dotted_rules |= self._symbol_closure(root)
            inherited = _Closure({}, frozenset())
        else:
            base_roots: set[int] = set()
            dotted_rules = set()
            for root in roots:
                if root < self._base_symbols:
                    base_roots.add(root)
                else:
                    own, predicted = self._new_symbol_closure(root)
                    dotted_rules |= own
                    base_roots |= predicted
            inherited = self._base._closure(frozenset(base_roots))
            if not dotted_rules:
                found = self._closures[roots] = inherited
                return found
        waiting: dict[int, list[int]] = {}
        for dotted in sorted(dotted_rules):
            symbol = next_symbol[dotted]
            if symbol != COMPLETE:
                waiting.setdefault(symbol, []).append(dotted)
        # New dotted rules come after every base one, so appending keeps each tuple sorted.
        merged = dict(inherited.waiting)
        for symbol, rules in waiting.items():
            merged[symbol] = merged.get(symbol, ()) + tuple(rules)
        found = self._closures[roots] = _Closure(
            merged, inherited.terminals.union(
                symbol for symbol in waiting if is_terminal[symbol] and symbol not in self.markers))
        return found


_APPENDING = threading.Lock()  # see RecognizerState


class RecognizerState:
    """The recognizer after a terminal sequence. Immutable: `feed` returns a new state.

    States of one line of feeding share their list of charts: a state owns the charts up to its index, which never
    change, and `feed` appends to the list only when the list ends at the state's chart (else it copies the prefix).
    That check and the append happen under one lock, so states may be fed from several threads at once.
    """

    __slots__ = ("recognizer", "_charts", "_index")

    def __init__(self, recognizer: Recognizer, charts: list[_Chart], index: int):
        self.recognizer = recognizer
        self._charts = charts
        self._index = index

    @property
    def position(self) -> int:
        """How many terminals have been fed."""
        return self._index

    @property
    def complete(self) -> bool:
        """True iff the terminals fed so far form a sentence of the language."""
        return self._charts[self._index].accepting

    def distance(self) -> float:
        """The least total cost of terminals that, fed next, complete a sentence (`math.inf` if none do)."""
        return self.recognizer.distance_tables.distance(self._charts, self._index)

    def allowed_ids(self) -> frozenset[int]:
        chart = self._charts[self._index]
        is_terminal, markers = self.recognizer.tables.is_terminal, self.recognizer.markers
        explicit = [symbol for symbol in chart.waiting if is_terminal[symbol] and symbol not in markers]
        return chart.closure.terminals.union(explicit) if explicit else chart.closure.terminals

    def allowed(self) -> frozenset[str]:
        """The terminals that may come next (every one of them keeps the input a viable prefix), but markers."""
        names = self.recognizer.grammar.names
        return frozenset(names[symbol] for symbol in self.allowed_ids())

    def feed(self, terminal: str | int) -> RecognizerState | None:
        """The state after one more terminal, or None if no sentence starts with the input so far."""
        recognizer = self.recognizer
        symbol = terminal if isinstance(terminal, int) else recognizer.terminal(terminal)
        index = self._index
        charts = self._charts
        chart = charts[index]
        n_dotted = recognizer.tables.n_dotted
        seeds = [item + 1 for item in chart.waiting.get(symbol, ())]
        base = n_dotted * index + 1
        seeds.extend(dotted + base for dotted in chart.closure.waiting.get(symbol, ()))
        if not seeds:
            return None
        following = _complete_chart(recognizer, charts, seeds, index + 1)  # reads charts up to `index` only
        with _APPENDING:
            if len(charts) != index + 1:
                charts = charts[: index + 1]
            charts.append(following)
        return RecognizerState(recognizer, charts, index + 1)

    def feed_all(self, terminals: Iterable[str | int]) -> RecognizerState | None:
        state: RecognizerState | None = self
        for terminal in terminals:
            state = state.feed(terminal)
            if state is None:
                return None
        return state

    def __repr__(self) -> str:
        return f"<RecognizerState position={self._index} complete={self.complete}>"


def _complete_chart(recognizer: Recognizer, charts: list[_Chart], seeds: list[int], index: int) -> _Chart:
    """Run completion and prediction from the scanned `seeds` to build chart `index`."""
    tables = recognizer.tables
    n_dotted = tables.n_dotted
    next_symbol, lhs, is_terminal, nullable = tables.next_symbol, tables.lhs, tables.is_terminal, tables.nullable
    start = recognizer.grammar.start
    waiting: dict[int, list[int]] = {}
    roots: set[int] = set()
    accepting = False
    seen = set(seeds)
    stack = list(seen)
    while stack:
        item = stack.pop()
        dotted = item % n_dotted
        symbol = next_symbol[dotted]
        if symbol == COMPLETE:
            origin = item // n_dotted
            left = lhs[dotted]
            if origin == 0 and left == start:
                accepting = True
            source = charts[origin]
            for parent in source.waiting.get(left, ()):
                parent += 1
                if parent not in seen:
                    seen.add(parent)
                    stack.append(parent)
            base = n_dotted * origin + 1
            for dotted_parent in source.closure.waiting.get(left, ()):
                parent = dotted_parent + base
                if parent not in seen:
                    seen.add(parent)
                    stack.append(parent)
        else:
            items = waiting.get(symbol)
            if items is None:
                waiting[symbol] = [item]
            else:
                items.append(item)
            if not is_terminal[symbol]:
                roots.add(symbol)
                if nullable[symbol]:
                    item += 1
                    if item not in seen:
                        seen.add(item)
                        stack.append(item)
    return _Chart(waiting, recognizer._closure(frozenset(roots)), accepting)
