"""`RecognizerState.distance` against brute force: the cheapest completion among all continuations.

Membership of each candidate sentence is decided by `intersects`, the Bar-Hillel oracle, so the brute force
shares nothing with the charts under test. With every terminal costing at least 1, a completion longer than
the enumeration bound costs more than the bound, which makes the brute-force minimum exact whenever it is at
most that bound.
"""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from earley import Grammar, Recognizer, parse_ebnf
from tests.oracles import RawNFA, intersects, strings
from tests.test_earley_properties import ALPHABET, grammars

EXTENSION = 5


def viable_states(rules, word, costs):
    """The recognizer's states after each prefix of `word`, up to the first one that is not viable."""
    state = Recognizer(Grammar.from_rules("S", rules, ALPHABET), terminal_costs=costs).start()
    fed = []
    while state is not None:
        yield fed, state
        if len(fed) == len(word):
            return
        fed = word[:len(fed) + 1]
        state = state.feed(fed[-1])


def cheapest_completion(rules, word, costs) -> float:
    best = math.inf
    for suffix in strings(ALPHABET, EXTENSION):
        cost = sum(costs[terminal] for terminal in suffix)
        if cost < best and intersects(rules, "S", set(ALPHABET), RawNFA.word(tuple(word) + tuple(suffix))):
            best = cost
    return best


@settings(max_examples=150, deadline=None)
@given(
    grammars(),
    st.lists(st.sampled_from(ALPHABET), max_size=4),
    st.fixed_dictionaries({terminal: st.integers(1, 3) for terminal in ALPHABET}),
)
def test_distance_is_the_cheapest_completion(rules, word, costs):
    for fed, state in viable_states(rules, word, costs):
        expected = cheapest_completion(rules, fed, costs)
        distance = state.distance()
        if expected <= EXTENSION:
            assert distance == expected
        else:  # no completion within the bound: any completion is longer, and so costs more than the bound
            assert distance > EXTENSION
        assert math.isfinite(distance)  # a viable prefix of a trimmed grammar always has a completion


@settings(max_examples=100, deadline=None)
@given(grammars(), st.lists(st.sampled_from(ALPHABET), max_size=3), st.sampled_from(ALPHABET))
def test_free_terminals_cost_nothing(rules, word, free):
    costs = {terminal: 0 if terminal == free else 1 for terminal in ALPHABET}
    for fed, state in viable_states(rules, word, costs):
        expected = cheapest_completion(rules, fed, costs)
        assert state.distance() <= expected
        if expected == 0:
            assert state.distance() == 0


def test_distance_follows_the_parse():
    grammar = parse_ebnf('''
    Expr: ID | Call
    Call: Expr LPAR Args RPAR
    Args: <empty> | Expr ArgCont
    ArgCont: <empty> | COMMA Expr ArgCont
    ''')
    recognizer = Recognizer(grammar, terminal_costs={"ID": 3, "LPAR": 1, "RPAR": 1, "COMMA": 1})
    state = recognizer.start()
    assert state.distance() == 3  # an ID
    state = state.feed_all(["ID", "LPAR", "ID", "LPAR"])  # f(g(
    assert state.distance() == 2  # ))
    assert state.feed("ID").distance() == 2
    assert state.feed_all(["RPAR", "RPAR"]).distance() == 0
    assert state.feed_all(["RPAR", "COMMA"]).distance() == 4  # an ID and )
