"""The distance of an Earley prefix to a sentence: the least cost of input that turns a viable prefix into one.

A constrained decoder asks this after every candidate token: can the text still be finished within the budget,
and which continuations bring the end closer. Each terminal has a non-negative cost (a language gives, say, the
length of its shortest lexeme); the cost of a string is the sum. For a recognizer state after input `w`,
`distance` is `min { cost(u) | w u ∈ L }`, computed from the charts without enumerating strings:

- `yield_cost[X]`: the least cost of a terminal string `X` derives (Knuth's generalisation of Dijkstra's
  algorithm), and `rest_cost[d]` of the symbols after the dot of dotted rule `d`.
- `after(j, A)`: the least cost of finishing the sentence once nonterminal `A` is complete from chart `j`.
  `A`'s parents in chart `j` are its explicit items (origin before `j`) and the items that prediction added
  (origin `j`). The predicted ones lead, through a chain of left corners, to one of the chart's *roots* (the
  nonterminals its explicit items wait for), at a cost that depends on the grammar alone
  (`left_corner_costs(A)[R]`). So `after(j, A) = min over roots R of left_corner_costs(A)[R] + exit(j, R)`,
  where `exit(j, R)` is the least `rest + after(origin, lhs)` over the explicit items waiting for `R`, and at
  chart 0 the start symbol exits at cost 0 (acceptance).
- `distance(state)`: 0 if accepting, else the least `rest_cost + after(origin, lhs)` over the explicit items of
  the state's chart (a predicted item never beats the explicit item that predicted it); before any input, the
  start symbol's yield.

Charts never change once built, so each chart's exits are computed once and kept on the chart: asking after
every candidate token costs one pass over the new chart's items.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Mapping

from earley.tables import COMPLETE, GrammarTables

INFINITE = math.inf


class DistanceTables:
    """The grammar-dependent tables behind `RecognizerState.distance`, for one cost per terminal."""

    def __init__(self, tables: GrammarTables, terminal_costs: Mapping[str, float] | None = None):
        grammar = tables.grammar
        self.tables = tables
        self.start = grammar.start
        symbol_costs = [0.0] * len(grammar.names)
        for symbol in grammar.terminals:
            cost = 1 if terminal_costs is None else terminal_costs.get(grammar.names[symbol], INFINITE)
            if cost < 0:
                raise ValueError(f"terminal {grammar.names[symbol]!r} has a negative cost")
            symbol_costs[symbol] = cost
        self.yield_cost = _yield_costs(grammar, symbol_costs)
        self.rest_cost = _rest_costs(tables, self.yield_cost)
        self._parents = _left_corner_parents(tables, self.rest_cost)
        self._left_corners: dict[int, dict[int, float]] = {}

    def left_corner_costs(self, symbol: int) -> dict[int, float]:
        """For every nonterminal `R` that `symbol` is a left corner of (after nullable symbols), the least cost
        of completing `R` once `symbol` is complete: a shortest path up the left-corner parents."""
        found = self._left_corners.get(symbol)
        if found is not None:
            return found
        costs = {symbol: 0.0}
        heap = [(0.0, symbol)]
        while heap:
            cost, current = heapq.heappop(heap)
            if cost > costs[current]:
                continue
            for parent, step in self._parents.get(current, ()):
                total = cost + step
                if total < costs.get(parent, INFINITE):
                    costs[parent] = total
                    heapq.heappush(heap, (total, parent))
        self._left_corners[symbol] = costs
        return costs

    def distance(self, charts: list, index: int) -> float:
        """The least cost of input that completes a sentence after chart `index` (INFINITE if none does)."""
        chart = charts[index]
        if chart.accepting:
            return 0.0
        if index == 0:  # nothing fed: the start symbol, predicted, is the only way on
            return self.yield_cost[self.start]
        self._ensure_exits(charts, index)
        n_dotted = self.tables.n_dotted
        rest_cost, lhs = self.rest_cost, self.tables.lhs
        best = INFINITE
        for items in chart.waiting.values():
            for item in items:
                dotted = item % n_dotted
                cost = rest_cost[dotted]
                if cost >= best:
                    continue
                cost += self._after(charts[item // n_dotted], lhs[dotted])
                if cost < best:
                    best = cost
        return best

    def _after(self, chart, symbol: int) -> float:
        """The least cost of finishing once `symbol` is complete from `chart` (whose exits are known)."""
        memo = chart.finish[1]
        found = memo.get(symbol)
        if found is None:
            found = INFINITE
            corners = self.left_corner_costs(symbol)
            for root, exit_cost in chart.finish[0].items():
                climb = corners.get(root)
                if climb is not None and climb + exit_cost < found:
                    found = climb + exit_cost
            memo[symbol] = found
        return found

    def _ensure_exits(self, charts: list, index: int) -> None:
        """Compute the exits of every chart that chart `index`'s items lead back to, oldest first."""
        n_dotted = self.tables.n_dotted
        pending = []
        seen = set()
        stack = [index]
        while stack:
            position = stack.pop()
            if position in seen or charts[position].finish is not None:
                continue
            seen.add(position)
            pending.append(position)
            for items in charts[position].waiting.values():
                for item in items:
                    origin = item // n_dotted
                    if origin not in seen and charts[origin].finish is None:
                        stack.append(origin)
        pending.sort()
        for position in pending:
            self._set_exits(charts, position)

    def _set_exits(self, charts: list, index: int) -> None:
        chart = charts[index]
        tables = self.tables
        n_dotted, rest_cost, lhs, is_terminal = tables.n_dotted, self.rest_cost, tables.lhs, tables.is_terminal
        exits: dict[int, float] = {self.start: 0.0} if index == 0 else {}
        for symbol, items in chart.waiting.items():
            if is_terminal[symbol]:
                continue
            best = exits.get(symbol, INFINITE)
            for item in items:
                dotted = item % n_dotted
                cost = rest_cost[dotted + 1]
                if cost < best:
                    cost += self._after(charts[item // n_dotted], lhs[dotted])
                    if cost < best:
                        best = cost
            exits[symbol] = best
        chart.finish = (exits, {})


def _yield_costs(grammar, symbol_costs: list[float]) -> list[float]:
    """Least cost of a terminal string each symbol derives: Knuth's generalisation of Dijkstra's algorithm."""
    costs = [INFINITE] * len(grammar.names)
    missing = []
    partial = []
    uses: dict[int, list[int]] = {}
    heap = []
    for symbol in grammar.terminals:
        costs[symbol] = symbol_costs[symbol]
        heap.append((symbol_costs[symbol], symbol))
    for index, (left, rhs) in enumerate(grammar.rules):
        missing.append(len(rhs))
        partial.append(0.0)
        for symbol in rhs:
            uses.setdefault(symbol, []).append(index)
        if not rhs:
            heap.append((0.0, left))
    heapq.heapify(heap)
    done = set()
    while heap:
        cost, symbol = heapq.heappop(heap)
        if symbol in done:
            continue
        done.add(symbol)
        costs[symbol] = cost
        for index in uses.get(symbol, ()):
            missing[index] -= 1
            partial[index] += cost
            if missing[index] == 0:
                left = grammar.rules[index][0]
                if left not in done:
                    heapq.heappush(heap, (partial[index], left))
    return costs


def _rest_costs(tables: GrammarTables, yield_cost: list[float]) -> list[float]:
    """For each dotted rule, the least cost of the symbols after its dot."""
    rest = [0.0] * tables.n_dotted
    for dotted in range(tables.n_dotted - 1, -1, -1):
        symbol = tables.next_symbol[dotted]
        rest[dotted] = 0.0 if symbol == COMPLETE else yield_cost[symbol] + rest[dotted + 1]
    return rest


def _left_corner_parents(tables: GrammarTables, rest_cost: list[float]) -> dict[int, list[tuple[int, float]]]:
    """For each symbol, the rules it is a left corner of (after nullable symbols): (lhs, cost of what follows)."""
    parents: dict[int, list[tuple[int, float]]] = {}
    next_symbol, nullable, lhs = tables.next_symbol, tables.nullable, tables.lhs
    for first in tables.first_dotted:
        for dotted in first:
            while True:
                symbol = next_symbol[dotted]
                if symbol == COMPLETE:
                    break
                parents.setdefault(symbol, []).append((lhs[dotted], rest_cost[dotted + 1]))
                if tables.is_terminal[symbol] or not nullable[symbol]:
                    break
                dotted += 1
    return parents
