"""Markers in a right quotient (`RightQuotients.recognizer_of(..., markers)`): a union of right languages, each
begun with its own marker, is one quotient whose recognizer still tells them apart, against the brute-force
oracle on random grammars and NFAs whose parts share their states (as the streams of a right context's boundary
indices share their tails)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from earley import NFA, Grammar, RightQuotients
from tests.oracles import RawNFA, strings
from tests.test_earley_properties import ALPHABET, MAX_LENGTH, build, grammars, in_language, viable

MARKERS = ("<m1>", "<m2>")


@st.composite
def shared_parts(draw):
    """One NFA's transitions and final states, and three sets of initial states: the parts of a union that start
    apart and share the rest (the first unmarked, the others begun with a marker each)."""
    n_states = draw(st.integers(1, 4))
    state = st.integers(0, n_states - 1)
    transitions = set(draw(st.lists(st.tuples(state, st.sampled_from(ALPHABET), state), max_size=6)))
    final = set(draw(st.lists(state, min_size=1, max_size=2)))
    starts = [set(draw(st.lists(state, max_size=2))) for _ in range(3)]
    return n_states, transitions, final, starts


def reversed_marked_union(n_states, transitions, final, starts) -> NFA:
    """The reversed union of the parts: a marked part's reversed words end with its marker, into a state of
    its own."""
    unmarked, *marked = starts
    reversed_transitions = {(t, a, s) for s, a, t in transitions}
    ends = []
    for index, (marker, initial) in enumerate(zip(MARKERS, marked)):
        ends.append(n_states + index)
        reversed_transitions |= {(s, marker, n_states + index) for s in initial}
    return NFA(n_states + len(MARKERS), reversed_transitions, final, [*unmarked, *ends])


@settings(max_examples=200, deadline=None)
@given(grammars(), shared_parts())
def test_a_marker_completes_exactly_its_own_part(rules, parts):
    n_states, transitions, final, starts = parts
    recognizer = RightQuotients(build(rules)).recognizer_of(
        reversed_marked_union(*parts), markers=MARKERS)
    languages = [RawNFA(n_states, transitions, initial, final) for initial in starts]
    initial = recognizer.start()
    for word in strings(ALPHABET, MAX_LENGTH):
        state = initial.feed_all(word) if initial is not None else None
        # every part's prefixes are viable: a prefix may yet end at any part's start
        assert (state is not None) == any(viable(rules, word, language) for language in languages), word
        if state is None:
            continue
        members = [in_language(rules, RawNFA.word(word).then(language)) for language in languages]
        assert state.complete == members[0], word
        for marker, member in zip(MARKERS, members[1:]):
            marked = state.feed(marker)
            assert (marked is not None and marked.complete) == member, (word, marker)


def test_a_marker_that_is_a_symbol_of_the_grammar_is_refused():
    grammar = Grammar.from_rules("S", [("S", ("a",))], ALPHABET)
    nfa = NFA(2, [(0, "b", 1)], [0], [1])
    with pytest.raises(ValueError, match="new symbols"):
        RightQuotients(grammar).recognizer_of(nfa, markers=["b"])


def test_markers_cost_nothing_in_the_distance():
    """`S -> a a`, right contexts `a` and `a a` marked apart: `a` is one terminal from either's end."""
    grammar = Grammar.from_rules("S", [("S", ("a", "a"))], ALPHABET)
    nfa = NFA(4, [(0, "a", 1), (1, "<m1>", 2), (1, "a", 3), (3, "<m2>", 2)], [0], [2])
    state = RightQuotients(grammar).recognizer_of(nfa, markers=MARKERS).start()
    assert state.distance() == 0 and state.feed("<m2>").complete and state.feed("<m1>") is None
    assert state.feed("a").distance() == 0 and state.feed("a").feed("<m1>").complete
