"""Quotient grammars extracted from Earley charts (Sec. IV-B and Fig. 2 of the FIM quotient paper).

`left_quotient(G, R)` is a grammar for `R \\ L(G) = {w | ∃ r ∈ R: r∘w ∈ L(G)}`: every item that is still open
after some string of `R` becomes a rule saying how to finish it. `right_quotient(G, R)` is a grammar for
`L(G) / R = {l | ∃ r ∈ R: l∘r ∈ L(G)}`, the set of left parts that the right context `R` can close.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence

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
    names, rules, start = _quotient_rules(NFAParse(grammar, nfa, deadline), deadline)
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

    def recognizer_of(self, reversed_nfa: NFA, deadline: float | None = None,
                      markers: Iterable[str] | Mapping[str, float] = ()) -> Recognizer:
        """The recognizer of `L(grammar) / L(reversed_nfa.reverse())`; raises `DeadlineExceeded` past `deadline`.

        A word of the right language `R` may begin with one of `markers`, new terminals (each the last label of a
        word of `reversed_nfa`): the quotient's words then end with it, `l m` for every `l` and `m r` in `R` with
        `l r` in `L(grammar)`. A union of right languages, each begun with its own marker, is then one quotient
        whose recognizer still tells them apart: fed the marker of one of them last, it completes exactly the
        words of that one's quotient. A marker costs what `markers` maps it to in `RecognizerState.distance`
        (nothing, given as a plain collection).
        """
        marker_costs = markers if isinstance(markers, Mapping) else dict.fromkeys(markers, 0.0)
        markers = tuple(sorted(marker_costs))
        clash = [marker for marker in markers if marker in self.grammar.ids]
        if clash:
            raise ValueError(f"markers must be new symbols, not {clash}")
        unmarked, tags = reversed_nfa.without_markers(frozenset(markers))
        nfa, origins = unmarked.final_ends(deadline)
        marker_ids = {marker: len(self.grammar.names) + 1 + index for index, marker in enumerate(markers)}
        ends = {end: tuple(() if tag is None else (marker_ids[tag],) for tag in sorted(tags[origin], key=str))
                for end, origin in origins.items() if origin in tags}
        check_deadline(deadline)
        names, rules, start = _quotient_rules(NFAParse(self.reversed_tables, nfa, deadline), deadline, markers, ends)
        forward = [(lhs, rhs[::-1]) for lhs, rhs in rules]
        check_deadline(deadline)
        grammar = self.grammar.extended(names, forward, start, marker_ids.values())
        check_deadline(deadline)
        if not markers:
            return Recognizer(grammar, self.recognizer)
        costs = dict(marker_costs)
        base_costs = self.recognizer._terminal_costs
        costs.update(base_costs if base_costs is not None else dict.fromkeys(
            (self.grammar.names[terminal] for terminal in self.grammar.terminals), 1))
        return Recognizer(grammar, self.recognizer, terminal_costs=costs, markers=markers)


def _quotient_rules(
    parse: NFAParse, deadline: float | None, markers: Sequence[str] = (),
    marked: Mapping[int, tuple[tuple[int, ...], ...]] | None = None,
) -> tuple[list[str], list[Rule], int]:
    """`_open_rules`, after which the parse is freed in the background (it is as big as the charts)."""
    try:
        return _open_rules(parse, deadline, markers, marked or {})
    finally:
        parse.release()


def _open_rules(
    parse: NFAParse, deadline: float | None, markers: Sequence[str],
    marked: Mapping[int, tuple[tuple[int, ...], ...]],
) -> tuple[list[str], list[Rule], int]:
    """Names of the new symbols (numbered after the grammar's: the new start symbol, then `markers`, then the
    new nonterminals), the rules that say how to finish every item still open at a final state of the NFA
    (Fig. 2), and the new start symbol. The walk back over the charts is one piece on purpose: it is most of the
    cost of a quotient after the parse, and keeps the tables in locals; only its start, the items open at the
    final states (`_open_at_finals`), is a step of its own.

    `marked` gives a final state's markers, as the symbols a word of the left quotient begins with there
    (`()`: none): the rule of an item open at a final state is the one rule of a derivation made there (every
    other rule's first symbol is the one new nonterminal in it), so a word begins with the marker of the final
    state its derivation reached, and never with another."""
    tables = parse.tables
    grammar = tables.grammar
    n_dotted = tables.n_dotted
    base = len(grammar.names)
    names = [_unused_name(grammar, grammar.names[grammar.start] + "'"), *markers]
    new_start = base
    open_symbols: dict[int, int] = {}  # E!q by q * base + E (E itself at an end)
    nfa = parse.nfa
    n_states = nfa.n_states
    # At a final state with no way on, the rest of an `E` begun there is all of `E`: `E!q` is `E` itself, and
    # what was predicted there needs no copy of its rules (at the cursor, that is the whole prediction closure).
    ends = frozenset(state for state in nfa.final if not nfa.delta[state])

    def open_symbol(symbol: int, state: int) -> int:
        key = state * base + symbol
        found = open_symbols.get(key)
        if found is None:
            if state in ends:
                found = open_symbols[key] = symbol
                return found
            names.append(_unused_name(grammar, f"{grammar.names[symbol]}!{state}"))
            found = open_symbols[key] = base + len(names) - 1
        return found

    # The walk's items in charts are single ints: `item * n_states + chart`.
    rules, stack = _open_at_finals(parse, ends, marked, new_start, open_symbol)
    visited = set(stack)
    lhs, dot, remainders = tables.lhs, tables.dot, tables.remainders
    # Walk back over the creations of every item (as `NFAParse.creations` recovers them, inlined: this loop is
    # most of the cost of a quotient): a predicted item adds a rule to each item that predicted it.
    previous_symbol, is_terminal = tables.previous_symbol, tables.is_terminal
    waiters, reverse_delta, completed_in = parse.waiters, parse.reverse_delta, parse.completed_in
    items, predicted = parse.items, parse.predicted
    predictions_walked: set[int] = set()
    initial, start = nfa.initial, grammar.start
    countdown = CLOCK_INTERVAL
    while stack:
        countdown -= 1
        if countdown <= 0:
            check_deadline(deadline)
            countdown = CLOCK_INTERVAL
        item, chart = divmod(stack.pop(), n_states)
        dotted = item % n_dotted
        if dot[dotted] == 0:
            # What predicted the item predicted every rule of its nonterminal here: walked once for them all.
            left = lhs[dotted]
            walked = chart * base + left
            if walked in predictions_walked:
                continue
            predictions_walked.add(walked)
            if left == start and chart in initial:
                rules[(new_start, (open_symbol(start, chart),))] = None
            child = open_symbol(left, chart)
            # The items waiting for `left` here: those put there, then those its predictions imply (`waiting`).
            parents = waiters[chart].get(left, ())
            implied = predicted[chart].rules.waiting.get(left, ())
            countdown -= len(parents) + len(implied)
            for parent in parents:
                parent_dotted = parent % n_dotted
                head = open_symbols.get(parent // n_dotted * base + lhs[parent_dotted])
                if head is None:
                    head = open_symbol(lhs[parent_dotted], parent // n_dotted)
                rules[(head, (child, *remainders[parent_dotted + 1]))] = None
                key = parent * n_states + chart
                if key not in visited:
                    visited.add(key)
                    stack.append(key)
            origin = chart * base
            chart_item = n_dotted * chart * n_states + chart
            for parent_dotted in implied:
                head = open_symbols.get(origin + lhs[parent_dotted])
                if head is None:
                    head = open_symbol(lhs[parent_dotted], chart)
                rules[(head, (child, *remainders[parent_dotted + 1]))] = None
                key = parent_dotted * n_states + chart_item
                if key not in visited:
                    visited.add(key)
                    stack.append(key)
            continue
        previous = previous_symbol[dotted]
        before = item - 1
        # `before` is in `source` as an item put there, or, with the dot at 0, as a prediction of `source`'s own.
        predicted_at = item // n_dotted if dot[dotted] == 1 else None
        for source in (reverse_delta if is_terminal[previous] else completed_in)[chart].get(previous, ()):
            key = before * n_states + source
            if key not in visited and (
                before in items[source] or (source == predicted_at and lhs[dotted] in predicted[source].nonterminals)
            ):
                visited.add(key)
                stack.append(key)
    return names, list(rules), new_start


def _open_at_finals(
    parse: NFAParse, ends: frozenset[int], marked: Mapping[int, tuple[tuple[int, ...], ...]], new_start: int,
    open_symbol: Callable[[int, int], int],
) -> tuple[dict[Rule, None], list[int]]:
    """The start of `_open_rules`'s walk: the rules that finish what is open at a final state of the NFA (the new
    start symbol's at an initial state among the `ends`, and each item's held there, begun with the state's
    markers), and those items, as the walk's ints (`item * n_states + chart`), in the order they were found."""
    tables, nfa = parse.tables, parse.nfa
    n_dotted, n_states = tables.n_dotted, nfa.n_states
    lhs, remainders = tables.lhs, tables.remainders
    unmarked = ((),)
    rules: dict[Rule, None] = dict.fromkeys(
        (new_start, (*marker, tables.grammar.start))
        for state in nfa.initial if state in ends for marker in marked.get(state, unmarked))
    # Items begun at such an end need no rule (the grammar's own say the rest) and lead only to items there.
    stack = [
        item * n_states + final
        for final in nfa.final for item in (parse.items[final] if final in ends else parse.held(final))
        if item // n_dotted not in ends
    ]
    for key in stack:
        item, chart = divmod(key, n_states)
        dotted = item % n_dotted
        head = open_symbol(lhs[dotted], item // n_dotted)
        for marker in marked.get(chart, unmarked):
            rules[(head, (*marker, *remainders[dotted]))] = None
    return rules, stack


def _unused_name(grammar: Grammar, name: str) -> str:
    """`name`, primed until no symbol of `grammar` has it."""
    while name in grammar.ids:
        name += "'"
    return name
