"""Property tests of the Earley core against the brute-force oracle, on random small grammars and NFAs.

Random grammars have nullable rules, left and right recursion, unit cycles and ambiguity; random NFAs have
cycles and several initial and final states. Every string up to a small length is checked.
"""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from earley import NFA, Grammar, NFAParse, Recognizer, RightQuotients, left_quotient, right_quotient
from tests.oracles import RawNFA, intersects, strings

ALPHABET = ("a", "b")
NONTERMINALS = ("S", "A", "B")
MAX_LENGTH = 4


@st.composite
def grammars(draw):
    symbols = st.sampled_from(NONTERMINALS + ALPHABET)
    rules = []
    for lhs in NONTERMINALS:
        for _ in range(draw(st.integers(1, 3))):
            rules.append((lhs, tuple(draw(st.lists(symbols, max_size=3)))))
    return rules


@st.composite
def nfas(draw):
    n_states = draw(st.integers(1, 4))
    state = st.integers(0, n_states - 1)
    transitions = set(draw(st.lists(st.tuples(state, st.sampled_from(ALPHABET), state), max_size=6)))
    initial = set(draw(st.lists(state, min_size=1, max_size=2)))
    final = set(draw(st.lists(state, min_size=1, max_size=2)))
    return RawNFA(n_states, transitions, initial, final)


def build(rules) -> Grammar:
    return Grammar.from_rules("S", rules, ALPHABET)


def to_nfa(raw: RawNFA) -> NFA:
    return NFA(raw.n_states, raw.transitions, raw.initial, raw.final)


def in_language(rules, raw: RawNFA) -> bool:
    return intersects(rules, "S", set(ALPHABET), raw)


def viable(rules, word, suffix_language: RawNFA | None = None) -> bool:
    """∃ u: word∘u ∈ L, or with a right context R: ∃ u, r ∈ R: word∘u∘r ∈ L."""
    nfa = RawNFA.word(word).then(RawNFA.everything(ALPHABET))
    if suffix_language is not None:
        nfa = nfa.then(suffix_language)
    return in_language(rules, nfa)


def assert_recognizer_matches(recognizer: Recognizer, member, prefix_viable) -> None:
    """Check a recognizer's viability and membership on every string up to MAX_LENGTH."""
    initial = recognizer.start()
    for word in strings(ALPHABET, MAX_LENGTH):
        state = initial.feed_all(word) if initial is not None else None
        expected_viable = prefix_viable(word)
        assert (state is not None) == expected_viable, (word, expected_viable)
        if state is not None:
            assert state.complete == member(word), word
            assert state.allowed() == {a for a in ALPHABET if prefix_viable(word + (a,))}, word


@settings(max_examples=150, deadline=None)
@given(grammars())
def test_recognizer_agrees_with_oracle(rules):
    assert_recognizer_matches(
        Recognizer(build(rules)),
        member=lambda word: in_language(rules, RawNFA.word(word)),
        prefix_viable=lambda word: viable(rules, word),
    )


@settings(max_examples=150, deadline=None)
@given(grammars(), nfas())
def test_right_quotient_agrees_with_oracle(rules, raw):
    """L/R = {l | ∃ r ∈ R: l∘r ∈ L}, and its recognizer rejects a prefix exactly when no l extends it."""
    quotient = right_quotient(build(rules), to_nfa(raw))
    assert_recognizer_matches(
        Recognizer(quotient),
        member=lambda word: in_language(rules, RawNFA.word(word).then(raw)),
        prefix_viable=lambda word: viable(rules, word, raw),
    )


@settings(max_examples=150, deadline=None)
@given(grammars(), nfas(), nfas())
def test_shared_right_quotients_agree_with_oracle(rules, first, second):
    """One `RightQuotients` for two right contexts in turn: each recognizer extends the grammar's own and
    shares its prediction closures, and still recognizes exactly its quotient."""
    quotients = RightQuotients(build(rules))
    for raw in (first, second, first):
        recognizer = quotients.recognizer_of(to_nfa(raw).reverse())
        extended = recognizer.grammar
        rebuilt = Grammar(extended.names, extended.terminals, extended.rules, extended.start)
        assert (extended.productive, extended.nullable) == (rebuilt.productive, rebuilt.nullable)
        assert_recognizer_matches(
            recognizer,
            member=lambda word: in_language(rules, RawNFA.word(word).then(raw)),
            prefix_viable=lambda word: viable(rules, word, raw),
        )


def predicted_rules(grammar: Grammar, roots) -> set[tuple[int, int]]:
    """The dotted rules `(rule index, dot)` that predicting `roots` adds, by the textbook definition: the rules
    of every nonterminal predicted, transitively, with the dot moved over nullable symbols too."""
    found: set[tuple[int, int]] = set()
    stack, seen = list(roots), set(roots)
    while stack:
        symbol = stack.pop()
        for index, (lhs, rhs) in enumerate(grammar.rules):
            dot = 0
            while lhs == symbol:
                found.add((index, dot))
                if dot == len(rhs) or rhs[dot] in grammar.terminals:
                    break
                if rhs[dot] not in seen:
                    seen.add(rhs[dot])
                    stack.append(rhs[dot])
                if rhs[dot] not in grammar.nullable:
                    break
                dot += 1
    return found


@settings(max_examples=150, deadline=None)
@given(grammars(), nfas(), nfas(), st.data())
def test_shared_prediction_closures_are_the_extended_grammars(rules, first, second, data):
    """An extension's prediction closure, its base's closure of the base symbols predicted (shared by every
    extension) with the new rules added, holds what predicting the same symbols adds in the extended grammar."""
    quotients = RightQuotients(build(rules))
    for raw in (first, second):
        recognizer = quotients.recognizer_of(to_nfa(raw).reverse())
        grammar, tables = recognizer.grammar, recognizer.tables
        nonterminals = sorted(set(range(len(grammar.names))) - grammar.terminals)
        roots = frozenset(data.draw(st.lists(st.sampled_from(nonterminals), max_size=3)))
        expected: dict[int, set[tuple[int, int]]] = {}
        for index, dot in predicted_rules(grammar, roots):
            rhs = grammar.rules[index][1]
            if dot < len(rhs):
                expected.setdefault(rhs[dot], set()).add((index, dot))
        closure = recognizer._closure(roots)
        assert {symbol: {(tables.rule_of[dotted], tables.dot[dotted]) for dotted in rules}
                for symbol, rules in closure.waiting.items()} == expected
        assert all(list(rules) == sorted(rules) for rules in closure.waiting.values())
        assert closure.terminals == expected.keys() & grammar.terminals


@settings(max_examples=150, deadline=None)
@given(nfas())
def test_final_ends_keep_the_language(raw):
    nfa = to_nfa(raw)
    ended = nfa.with_final_ends()
    assert not any(ended.delta[state] for state in ended.final)
    for word in strings(ALPHABET, MAX_LENGTH):
        assert ended.accepts(word) == nfa.accepts(word), word


@settings(max_examples=150, deadline=None)
@given(grammars(), nfas())
def test_left_quotient_agrees_with_oracle(rules, raw):
    """R\\L = {w | ∃ r ∈ R: r∘w ∈ L}."""
    quotient = left_quotient(build(rules), to_nfa(raw))
    assert_recognizer_matches(
        Recognizer(quotient),
        member=lambda word: in_language(rules, raw.then(RawNFA.word(word))),
        prefix_viable=lambda word: in_language(
            rules, raw.then(RawNFA.word(word)).then(RawNFA.everything(ALPHABET))
        ),
    )


@settings(max_examples=150, deadline=None)
@given(grammars(), nfas())
def test_quotients_are_trimmed(rules, raw):
    anything = RawNFA.everything(ALPHABET)
    for quotient, nonempty in (
        (left_quotient(build(rules), to_nfa(raw)), in_language(rules, raw.then(anything))),
        (right_quotient(build(rules), to_nfa(raw)), in_language(rules, anything.then(raw))),
    ):
        assert quotient.is_empty == (not nonempty)
        nonterminals = set(range(len(quotient.names))) - quotient.terminals
        if nonempty:
            assert quotient.reachable >= nonterminals
            assert quotient.productive >= nonterminals
        else:
            assert not quotient.rules


@settings(max_examples=150, deadline=None)
@given(grammars(), nfas())
def test_nfa_parse_detects_intersection(rules, raw):
    assert NFAParse(build(rules), to_nfa(raw)).accepts_some() == in_language(rules, raw)


def plain_earley_items(grammar: Grammar, nfa: NFA) -> set[tuple[int, int, int, int]]:
    """(chart, rule, dot, origin) of every Earley item over `nfa`, by the four deduction rules applied until
    nothing changes (prediction explicit, as in the textbook)."""
    items = {(state, index, 0, state) for state in nfa.initial
             for index, (lhs, _) in enumerate(grammar.rules) if lhs == grammar.start}
    while True:
        found = set(items)
        for chart, index, dot, origin in items:
            rhs = grammar.rules[index][1]
            if dot == len(rhs):
                completed = grammar.rules[index][0]
                found |= {(chart, waiting, waiting_dot + 1, waiting_origin)
                          for at, waiting, waiting_dot, waiting_origin in items
                          if at == origin and grammar.rules[waiting][1][waiting_dot:waiting_dot + 1] == (completed,)}
            elif rhs[dot] in grammar.terminals:
                label = grammar.names[rhs[dot]]
                found |= {(target, index, dot + 1, origin) for target in nfa.delta[chart].get(label, ())}
            else:
                found |= {(chart, predicted, 0, chart)
                          for predicted, (lhs, _) in enumerate(grammar.rules) if lhs == rhs[dot]}
        if found == items:
            return items
        items = found


@settings(max_examples=150, deadline=None)
@given(grammars(), nfas())
def test_nfa_parse_holds_the_textbook_items(rules, raw):
    """What the parse holds, put there or implied by its prediction sets, is every item of plain Earley, and
    `held` lists exactly that."""
    grammar, nfa = build(rules), to_nfa(raw)
    parse = NFAParse(grammar, nfa)
    tables = parse.tables
    held = {
        (chart, tables.rule_of[dotted], tables.dot[dotted], origin)
        for chart in range(nfa.n_states) for origin in range(nfa.n_states) for dotted in range(tables.n_dotted)
        if parse.holds(chart, dotted + tables.n_dotted * origin)
    }
    assert held == plain_earley_items(tables.grammar, nfa)
    listed = {
        (chart, tables.rule_of[item % tables.n_dotted], tables.dot[item % tables.n_dotted], item // tables.n_dotted)
        for chart in range(nfa.n_states) for item in parse.held(chart)
    }
    assert listed == held


@settings(max_examples=100, deadline=None)
@given(grammars())
def test_adjacent_terminals_hold_every_pair_of_every_language(rules):
    """Each pair side by side in a string of any nonterminal's language is among `adjacent_terminals`."""
    grammar = build(rules)
    found = {(grammar.names[a], grammar.names[b]) for a, b in grammar.adjacent_terminals}
    for nonterminal in NONTERMINALS:
        recognizer = Recognizer(Grammar.from_rules(nonterminal, rules, ALPHABET))
        for word in strings(ALPHABET, MAX_LENGTH):
            if recognizer.recognizes(word):
                assert set(zip(word, word[1:])) <= found, (nonterminal, word)


@settings(max_examples=150, deadline=None)
@given(grammars())
def test_grammar_analyses_agree_with_oracle(rules):
    grammar = build(rules)
    for name in NONTERMINALS:
        symbol = grammar.ids[name]
        as_start = [(lhs, rhs) for lhs, rhs in rules] + [("S'", (name,))]
        assert (symbol in grammar.nullable) == intersects(as_start, "S'", set(ALPHABET), RawNFA.word(()))
        assert (symbol in grammar.productive) == intersects(
            as_start, "S'", set(ALPHABET), RawNFA.everything(ALPHABET)
        )


@settings(max_examples=150, deadline=None)
@given(grammars())
def test_reverse_reverses_the_language(rules):
    reversed_recognizer = Recognizer(build(rules).reverse())
    for word in strings(ALPHABET, MAX_LENGTH):
        assert reversed_recognizer.recognizes(word) == in_language(rules, RawNFA.word(word[::-1]))


@st.composite
def regexes(draw, depth=0):
    """A random regex over ALPHABET as (earley regex text, Python `re` pattern)."""
    if depth >= 3 or draw(st.booleans()):
        letter = draw(st.sampled_from(ALPHABET))
        return letter, letter
    kind = draw(st.sampled_from(["seq", "alt", "star", "plus", "opt", "bounds"]))
    left = draw(regexes(depth + 1))
    if kind in ("seq", "alt"):
        right = draw(regexes(depth + 1))
        joiner = " " if kind == "seq" else " | "
        return f"({left[0]}{joiner}{right[0]})", f"(?:{left[1]}{'' if kind == 'seq' else '|'}{right[1]})"
    if kind == "bounds":
        low = draw(st.integers(0, 2))
        high = draw(st.one_of(st.none(), st.integers(low, 3)))
        bounds = f"{{{low},{'' if high is None else high}}}"
        return f"({left[0]}){bounds}", f"(?:{left[1]}){bounds}"
    operator = {"star": "*", "plus": "+", "opt": "?"}[kind]
    return f"({left[0]}){operator}", f"(?:{left[1]}){operator}"


@settings(max_examples=200, deadline=None)
@given(regexes())
def test_regex_nfa_agrees_with_python_re(regex):
    text, pattern = regex
    nfa = NFA.from_regex(text)
    for word in strings(ALPHABET, 5):
        assert nfa.accepts(word) == bool(re.fullmatch(pattern, "".join(word))), (text, word)
        assert nfa.reverse().accepts(word[::-1]) == nfa.accepts(word)
