"""Quotient grammars extracted from Earley charts (Sec. IV-B and Fig. 2 of the FIM quotient paper).

`left_quotient(G, R)` is a grammar for `R \\ L(G) = {w | ∃ r ∈ R: r∘w ∈ L(G)}`: every item that is still open
after some string of `R` becomes a rule saying how to finish it. `right_quotient(G, R)` is a grammar for
`L(G) / R = {l | ∃ r ∈ R: l∘r ∈ L(G)}`, the set of left parts that the right context `R` can close.
"""

from __future__ import annotations

from collections.abc import Mapping

from earley.deadline import CLOCK_INTERVAL, check_deadline
from earley.grammar import Grammar, Rule
from earley.nfa import NFA
from earley.nfa_parser import NFAParse
from earley.recognizer import Recognizer
from earley.tables import GrammarTables


def left_quotient(grammar: Grammar, nfa: NFA, deadline: float | None = None) -> Grammar:
    """A trimmed grammar for `L(nfa) \\ L(grammar)`; raises `DeadlineExceeded` past `deadline`.

    A nonterminal `E!q` of the result derives the rest of an `E` that began at NFA state `q`; the new start
    symbol derives the rest of the start symbol begun at an initial state.
    """
    names, rules, start = _open_rules(NFAParse(grammar, nfa, deadline), deadline)
    return Grammar([*grammar.names, *names], grammar.terminals, [*grammar.rules, *rules], start).trim()


def right_quotient(grammar: Grammar, nfa: NFA, deadline: float | None = None) -> Grammar:
    """A trimmed grammar for `L(grammar) / L(nfa)`, as `REVERSE(REVERSE(R) \\ REVERSE(L(G)))`."""
    return left_quotient(grammar.reverse(), nfa.reverse(), deadline).reverse()


class RightQuotients:
    """Recognizers of `L(grammar) / R` for many regular languages `R`, sharing what depends on the grammar alone.

    The quotient grammar is the grammar with rules added for the items left open by `R` (the reversed grammar's
    Earley charts over the reversed `R`), so it is built as an extension (`Grammar.extended`): the reversed
    grammar's tables are built once, only the new rules are reversed and checked for productivity, and the
    recognizer extends the grammar's own recognizer, whose tables and prediction closures are shared.
    """

    def __init__(self, grammar: Grammar, terminal_costs: Mapping[str, float] | None = None):
        """`terminal_costs`: what the recognizers' `distance` adds up (see `Recognizer`)."""
        self.grammar = grammar.trim()
        self.reversed_tables = GrammarTables(self.grammar.reverse())
        self.recognizer = Recognizer(self.grammar, terminal_costs=terminal_costs)

    def recognizer_of(self, reversed_nfa: NFA, deadline: float | None = None) -> Recognizer:
        """The recognizer of `L(grammar) / L(reversed_nfa.reverse())`; raises `DeadlineExceeded` past `deadline`."""
        nfa = reversed_nfa.with_final_ends()
        check_deadline(deadline)
        names, rules, start = _open_rules(NFAParse(self.reversed_tables, nfa, deadline), deadline)
        forward = [(lhs, rhs[::-1]) for lhs, rhs in rules]
        check_deadline(deadline)
        grammar = self.grammar.extended(names, forward, start)
        check_deadline(deadline)
        return Recognizer(grammar, self.recognizer)


def _open_rules(parse: NFAParse, deadline: float | None) -> tuple[list[str], list[Rule], int]:
    """Names of the new nonterminals (numbered after the grammar's symbols), the rules that say how to finish
    every item still open at a final state of the NFA (Fig. 2), and the new start symbol."""
    tables = parse.tables
    grammar = tables.grammar
    n_dotted = tables.n_dotted
    base = len(grammar.names)
    start_name = grammar.names[grammar.start] + "'"
    while start_name in grammar.ids:
        start_name += "'"
    names = [start_name]
    new_start = base
    open_symbols: dict[tuple[int, int], int] = {}
    nfa = parse.nfa
    # At a final state with no way on, the rest of an `E` begun there is all of `E`: `E!q` is `E` itself, and
    # what was predicted there needs no copy of its rules (at the cursor, that is the whole prediction closure).
    ends = frozenset(state for state in nfa.final if not nfa.delta[state])

    def open_symbol(symbol: int, state: int) -> int:
        if state in ends:
            return symbol
        key = (symbol, state)
        found = open_symbols.get(key)
        if found is None:
            name = f"{grammar.names[symbol]}!{state}"
            while name in grammar.ids:
                name += "'"
            names.append(name)
            found = open_symbols[key] = base + len(names) - 1
        return found

    rules: dict[Rule, None] = dict.fromkeys((new_start, (grammar.start,)) for state in nfa.initial if state in ends)
    # Items begun at such an end need no rule (the grammar's own say the rest) and lead only to items there.
    stack = [(final, item) for final in nfa.final for item in parse.items[final] if item // n_dotted not in ends]
    visited = set(stack)
    lhs, dot, remainder = tables.lhs, tables.dot, tables.remainder
    for _, item in stack:
        dotted = item % n_dotted
        rules[(open_symbol(lhs[dotted], item // n_dotted), remainder(dotted))] = None
    # Walk back over the creations of every item (as `NFAParse.creations` recovers them, inlined: this loop is
    # most of the cost of a quotient): a predicted item adds a rule to each item that predicted it.
    previous_symbol, is_terminal = tables.previous_symbol, tables.is_terminal
    waiters, reverse_delta, completed_in, items = parse.waiters, parse.reverse_delta, parse.completed_in, parse.items
    initial, start = nfa.initial, grammar.start
    countdown = CLOCK_INTERVAL
    while stack:
        countdown -= 1
        if countdown <= 0:
            check_deadline(deadline)
            countdown = CLOCK_INTERVAL
        chart, item = stack.pop()
        dotted = item % n_dotted
        if dot[dotted] == 0:
            left = lhs[dotted]
            if left == start and chart in initial:
                rules[(new_start, (open_symbol(start, chart),))] = None
            child = open_symbol(left, chart)
            parents = waiters[chart].get(left, ())
            countdown -= len(parents)
            for parent in parents:
                parent_dotted = parent % n_dotted
                head = open_symbol(lhs[parent_dotted], parent // n_dotted)
                rules[(head, (child, *remainder(parent_dotted + 1)))] = None
                if (chart, parent) not in visited:
                    visited.add((chart, parent))
                    stack.append((chart, parent))
            continue
        previous = previous_symbol[dotted]
        before = item - 1
        for source in (reverse_delta if is_terminal[previous] else completed_in)[chart].get(previous, ()):
            if before in items[source] and (source, before) not in visited:
                visited.add((source, before))
                stack.append((source, before))
    return names, list(rules), new_start
