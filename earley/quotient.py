"""Quotient grammars extracted from Earley charts (Sec. IV-B and Fig. 2 of the FIM quotient paper).

`left_quotient(G, R)` is a grammar for `R \\ L(G) = {w | ∃ r ∈ R: r∘w ∈ L(G)}`: every item that is still open
after some string of `R` becomes a rule saying how to finish it. `right_quotient(G, R)` is a grammar for
`L(G) / R = {l | ∃ r ∈ R: l∘r ∈ L(G)}`, the set of left parts that the right context `R` can close.
"""

from __future__ import annotations

from earley.deadline import CLOCK_INTERVAL, check_deadline
from earley.grammar import Grammar
from earley.nfa import NFA
from earley.nfa_parser import NFAParse


def left_quotient(grammar: Grammar, nfa: NFA, deadline: float | None = None) -> Grammar:
    """A trimmed grammar for `L(nfa) \\ L(grammar)`; raises `DeadlineExceeded` past `deadline`.

    A nonterminal `E!q` of the result derives the rest of an `E` that began at NFA state `q`; the new start
    symbol derives the rest of the start symbol begun at an initial state.
    """
    parse = NFAParse(grammar, nfa, deadline)
    tables = parse.tables
    n_dotted = tables.n_dotted
    names = list(grammar.names)
    start_name = names[grammar.start] + "'"
    while start_name in grammar.ids:
        start_name += "'"
    names.append(start_name)
    new_start = len(names) - 1
    open_symbols: dict[tuple[int, int], int] = {}

    def open_symbol(symbol: int, state: int) -> int:
        key = (symbol, state)
        found = open_symbols.get(key)
        if found is None:
            name = f"{names[symbol]}!{state}"
            while name in grammar.ids:
                name += "'"
            names.append(name)
            found = open_symbols[key] = len(names) - 1
        return found

    rules: dict[tuple[int, tuple[int, ...]], None] = dict.fromkeys(grammar.rules)
    stack = [(final, item) for final in nfa.final for item in parse.items[final]]
    visited = set(stack)
    for _, item in stack:
        dotted = item % n_dotted
        rules[(open_symbol(tables.lhs[dotted], item // n_dotted), tables.remainder(dotted))] = None
    countdown = CLOCK_INTERVAL
    while stack:
        countdown -= 1
        if not countdown:
            check_deadline(deadline)
            countdown = CLOCK_INTERVAL
        chart, item = stack.pop()
        dotted = item % n_dotted
        for creation in parse.creations(chart, item):
            kind = creation[0]
            if kind == "initial":
                rules[(new_start, (open_symbol(grammar.start, chart),))] = None
                continue
            if kind == "predicted":
                parent = creation[2]
                parent_dotted = parent % n_dotted
                rest = tables.remainder(parent_dotted + 1)
                head = open_symbol(tables.lhs[parent_dotted], parent // n_dotted)
                rules[(head, (open_symbol(tables.lhs[dotted], chart), *rest))] = None
            key = (creation[1], creation[2])
            if key not in visited:
                visited.add(key)
                stack.append(key)
    return Grammar(names, grammar.terminals, rules, new_start).trim()


def right_quotient(grammar: Grammar, nfa: NFA, deadline: float | None = None) -> Grammar:
    """A trimmed grammar for `L(grammar) / L(nfa)`, as `REVERSE(REVERSE(R) \\ REVERSE(L(G)))`."""
    return left_quotient(grammar.reverse(), nfa.reverse(), deadline).reverse()
