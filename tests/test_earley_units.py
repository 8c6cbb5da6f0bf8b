"""Unit tests of the Earley core: the paper's worked example, the EBNF format, NFAs and recognizer states."""

from __future__ import annotations

import re

import pytest

from earley import NFA, Grammar, GrammarError, NFAParse, Recognizer, left_quotient, parse_ebnf, right_quotient

PAPER_GRAMMAR = """
Expr: ID | Call
Call: Expr LPAR Args RPAR
Args: <empty> | Expr ArgCont
ArgCont: <empty> | COMMA Expr ArgCont
"""


def rule_set(grammar: Grammar) -> set[tuple[str, tuple[str, ...]]]:
    return {(grammar.names[lhs], tuple(grammar.names[s] for s in rhs)) for lhs, rhs in grammar.rules}


@pytest.fixture(scope="module")
def quotient() -> Grammar:
    """Sec. IV-B: the left quotient of `foo(a,` = ID LPAR ID COMMA."""
    return left_quotient(parse_ebnf(PAPER_GRAMMAR), NFA.sequence(["ID", "LPAR", "ID", "COMMA"]))


class TestPaperExample:
    """Sec. IV-B: the quotient grammar has the paper's rules and accepts exactly the completions."""

    def test_has_the_rules_the_paper_derives(self, quotient):
        rules = rule_set(quotient)
        assert ("ArgCont!3", ("Expr", "ArgCont")) in rules
        assert ("Args!2", ("ArgCont!3",)) in rules
        assert ("Call!0", ("Args!2", "RPAR")) in rules
        assert ("Call!0", ("Expr!0", "LPAR", "Args", "RPAR")) in rules
        assert ("Expr!0", ("Call!0",)) in rules
        assert ("Expr'", ("Expr!0",)) in rules

    @pytest.mark.parametrize(
        "rest, accepted",
        [
            ("ID RPAR", True),  # foo(a, b)
            ("ID COMMA ID RPAR", True),  # foo(a, b, c)
            ("ID RPAR LPAR RPAR", True),  # foo(a, b)()
            ("ID LPAR RPAR RPAR", True),  # foo(a, b())
            ("RPAR", False),  # foo(a,) is not in this simplified grammar
            ("ID", False),
            ("", False),
            ("ID RPAR RPAR", False),
        ],
    )
    def test_accepts_exactly_the_completions(self, quotient, rest, accepted):
        assert Recognizer(quotient).recognizes(rest.split()) is accepted

    def test_right_quotient_by_closing_text(self):
        quotient = right_quotient(parse_ebnf(PAPER_GRAMMAR), NFA.sequence(["COMMA", "ID", "RPAR"]))
        recognizer = Recognizer(quotient)
        assert recognizer.recognizes("ID LPAR ID".split())  # foo(a  +  , b)
        assert recognizer.recognizes("ID LPAR ID COMMA ID".split())
        assert not recognizer.recognizes("ID LPAR".split())
        assert not recognizer.recognizes("ID".split())


class TestEbnf:
    def test_operators_compile_to_the_right_language(self):
        grammar = parse_ebnf('list: "[" [item ("," item)* [","]] "]"\nitem: NAME | list')
        recognizer = Recognizer(grammar)
        for text, accepted in [
            ("[ ]", True),
            ("[ NAME ]", True),
            ("[ NAME , ]", True),
            ("[ NAME , [ NAME , NAME ] ]", True),
            ("[ , ]", False),
            ("[ NAME NAME ]", False),
            ("[ NAME , , ]", False),
        ]:
            assert recognizer.recognizes(text.split()) is accepted, text

    def test_plus_and_question_mark(self):
        recognizer = Recognizer(parse_ebnf("s: A+ B? C*"))
        assert recognizer.recognizes("A A B C C".split())
        assert recognizer.recognizes(["A"])
        assert not recognizer.recognizes(["B"])
        assert not recognizer.recognizes("A B B".split())

    def test_literals_name_terminals_by_their_text(self):
        grammar = parse_ebnf('call: NAME "(" ")"  // a comment\n# another comment\n')
        assert {grammar.names[t] for t in grammar.terminals} == {"NAME", "(", ")"}
        assert Recognizer(grammar).recognizes(["NAME", "(", ")"])

    def test_escaped_quote_in_literal(self):
        grammar = parse_ebnf(r's: "\"" NAME')
        assert Recognizer(grammar).recognizes(['"', "NAME"])

    def test_continuation_lines_and_empty(self):
        grammar = parse_ebnf("s: A\n  | <empty>\n  | B s")
        recognizer = Recognizer(grammar)
        assert recognizer.recognizes([])
        assert recognizer.recognizes("B B A".split())

    def test_start_symbol_can_be_chosen(self):
        grammar = parse_ebnf("a: b B\nb: A", start="b")
        assert Recognizer(grammar).recognizes(["A"])

    @pytest.mark.parametrize(
        "text, message",
        [
            ("s: a", "rule 'a' is used but never defined"),
            ("s: A\ns: B", "already defined"),
            ("s: A |", "empty alternative"),
            ("s: (A", "expected ')'"),
            ("s: A $", "unexpected character"),
            ("A: B", "upper case"),
            ("", "no rules"),
            ("s A", "expected a rule"),
        ],
    )
    def test_errors_are_clear(self, text, message):
        with pytest.raises(GrammarError, match=re.escape(message)):
            parse_ebnf(text)

    def test_unknown_start_symbol(self):
        with pytest.raises(GrammarError, match="start symbol 'x'"):
            parse_ebnf("s: A", start="x")


class TestGrammar:
    def test_trim_drops_useless_symbols(self):
        grammar = Grammar.from_rules(
            "s", [("s", ["A"]), ("s", ["loop"]), ("loop", ["loop", "A"]), ("orphan", ["B"])], ["A", "B"]
        )
        trimmed = grammar.trim()
        assert {trimmed.names[s] for s in range(len(trimmed.names))} == {"s", "A", "B"}
        assert rule_set(trimmed) == {("s", ("A",))}

    def test_trim_of_empty_language_keeps_the_terminals(self):
        trimmed = Grammar.from_rules("s", [("s", ["s", "A"])], ["A"]).trim()
        assert trimmed.is_empty and not trimmed.rules
        assert Recognizer(trimmed).start() is None

    def test_undeclared_symbols_are_an_error(self):
        with pytest.raises(GrammarError, match="no production"):
            Grammar.from_rules("s", [("s", ["x"])], ["A"])

    def test_terminal_start_is_an_error(self):
        with pytest.raises(GrammarError, match="is a terminal"):
            Grammar.from_rules("A", [("s", ["A"])], ["A"])


class TestNFA:
    def test_paper_indentation_language(self):
        nfa = NFA.from_regex("NL (INDENT | DEDENT*) PASS NL DEDENT{1,4}")
        assert nfa.accepts("NL INDENT PASS NL DEDENT".split())
        assert nfa.accepts("NL PASS NL DEDENT DEDENT DEDENT DEDENT".split())
        assert nfa.accepts("NL DEDENT DEDENT PASS NL DEDENT".split())
        assert not nfa.accepts("NL INDENT DEDENT PASS NL DEDENT".split())
        assert not nfa.accepts("NL PASS NL".split())
        assert not nfa.accepts("NL PASS NL DEDENT DEDENT DEDENT DEDENT DEDENT".split())

    def test_literals_and_empty_group(self):
        nfa = NFA.from_regex('"(" () ")"')
        assert nfa.accepts(["(", ")"])

    @pytest.mark.parametrize("text", ["(A", "A |* B", "A {1,2", ")"])
    def test_bad_regex(self, text):
        with pytest.raises(ValueError):
            NFA.from_regex(text)

    def test_unknown_label_is_rejected_by_the_parser(self):
        with pytest.raises(ValueError, match="not a terminal"):
            NFAParse(parse_ebnf("s: A"), NFA.sequence(["B"]))


class TestCreations:
    def test_duplicate_creations_are_all_reported(self):
        """In an ambiguous grammar, an item reached two ways reports both creations."""
        grammar = parse_ebnf("s: x A\nx: A | A A | <empty>")
        parse = NFAParse(grammar, NFA.sequence(["A", "A"]))
        n_dotted = parse.tables.n_dotted
        (s_rule,) = [d for d in parse.tables.first_dotted[grammar.start]]
        item = s_rule + 1  # [s -> x • A (0)]
        assert parse.holds(1, item) and parse.holds(2, item)
        kinds = sorted(c[0] for c in parse.creations(0, item))
        assert kinds == ["completed"]  # x derived the empty string at state 0
        creations_at_2 = list(parse.creations(2, item))
        assert [c[:2] for c in creations_at_2] == [("completed", 0)]
        assert creations_at_2[0][2] // n_dotted == 0

    def test_cyclic_nfa(self):
        """A center-recursive grammar over a cyclic NFA: a^n b^n / (A B)* is a^n b^n plus the empty string."""
        grammar = parse_ebnf("s: A s B | A B")
        nfa = NFA.from_regex("(A B)*")
        assert NFAParse(grammar, nfa).accepts_some()
        quotient = right_quotient(grammar, nfa)
        recognizer = Recognizer(quotient)
        assert recognizer.recognizes([])  # "" + "A B"
        assert recognizer.recognizes("A A B B".split())  # + ""
        assert not recognizer.recognizes(["A"])
        assert not recognizer.recognizes("A A B".split())
        assert recognizer.start().feed("B") is None


class TestRecognizerStates:
    def test_feeding_never_mutates_the_state_fed(self):
        recognizer = Recognizer(parse_ebnf(PAPER_GRAMMAR))
        state = recognizer.start().feed_all("ID LPAR".split())
        allowed_before = state.allowed()
        branch_a = state.feed("ID")
        branch_b = state.feed("RPAR")
        assert state.allowed() == allowed_before and not state.complete and state.position == 2
        assert branch_a.allowed() == {"COMMA", "LPAR", "RPAR"}
        assert branch_b.complete and branch_b.allowed() == {"LPAR"}
        # Extending a fork must not disturb its sibling, nor the sibling's later extensions.
        deeper_a = branch_a.feed("COMMA")
        deeper_b = branch_b.feed("LPAR")
        assert deeper_a.allowed() == {"ID"}
        assert deeper_b.allowed() == {"ID", "RPAR"}
        assert branch_b.feed("LPAR").feed("RPAR").complete
        assert state.feed("ID").feed("RPAR").complete

    def test_unknown_terminal(self):
        with pytest.raises(KeyError, match="not a terminal"):
            Recognizer(parse_ebnf(PAPER_GRAMMAR)).start().feed("NOPE")

    def test_long_left_and_right_recursion(self):
        left = Recognizer(parse_ebnf("s: s A | A"))
        right = Recognizer(parse_ebnf("s: A s | A"))
        word = ["A"] * 2000
        assert left.recognizes(word) and right.recognizes(word)

    def test_nullable_chain(self):
        recognizer = Recognizer(parse_ebnf("s: a b c A\na: <empty>\nb: a a\nc: b | B"))
        assert recognizer.recognizes(["A"])
        assert recognizer.recognizes(["B", "A"])
        assert recognizer.start().allowed() == {"A", "B"}


def test_right_recursion_is_bounded_by_a_deadline():
    """Earley without Leo's optimization is quadratic on right recursion: callers bound it in time."""
    import time

    from earley import DeadlineExceeded

    grammar = parse_ebnf('start: items\nitems: "x" items | "x"\n')
    long_input = NFA.sequence(["x"] * 3000)
    with pytest.raises(DeadlineExceeded):
        left_quotient(grammar, long_input, deadline=time.perf_counter() + 0.05)
    short_input = NFA.sequence(["x"] * 5)
    bounded = left_quotient(grammar, short_input, deadline=time.perf_counter() + 60)
    assert Recognizer(bounded).start().feed_all(["x"]).complete
    assert Recognizer(bounded).start().complete


def test_building_a_big_nfa_looks_at_the_clock():
    """Tens of milliseconds for a big right context's NFA: a deadline (or a stop) must be able to end it."""
    import time

    from earley import DeadlineExceeded

    transitions = [(state, "x", state + 1) for state in range(20_000)]
    with pytest.raises(DeadlineExceeded):
        NFA(20_001, transitions, [0], [20_000], deadline=time.perf_counter() - 1)
    nfa = NFA(20_001, transitions, [0], [20_000], deadline=time.perf_counter() + 60)
    with pytest.raises(DeadlineExceeded):
        nfa.trim(deadline=time.perf_counter() - 1)
    with pytest.raises(DeadlineExceeded):
        nfa.reverse(deadline=time.perf_counter() - 1)
    assert nfa.reverse().accepts(["x"] * 20_000)


def test_discarded_charts_are_freed_in_the_background():
    from earley.reaper import discard, wait_until_freed

    items = [{index, index + 1} for index in range(50_000)]
    waiters = [{index: [index]} for index in range(50_000)]
    still_used = items[7]
    discard(items, waiters)
    wait_until_freed()
    assert items == [] and waiters == []
    assert still_used == {7, 8}  # what is held elsewhere is left as it was


class _Built:
    """An object whose attributes hold what a build made."""

    def __init__(self, rows: dict):
        self.rows = rows


def test_what_nothing_else_holds_is_taken_apart_and_what_something_else_holds_is_left_as_it_was():
    from earley.reaper import discard, wait_until_freed

    shared_rows = {index: [index] for index in range(5000)}
    shared_object = _Built({index: index for index in range(5000)})
    alone = _Built({index: [index] for index in range(5000)})
    alone_rows = alone.rows
    holder = {"lists": [list(range(3000)) for _ in range(3)], "shared": shared_rows, "object": shared_object,
              "alone": alone}
    del alone
    discard(holder)
    wait_until_freed()
    assert holder == {}
    assert shared_rows == {index: [index] for index in range(5000)}
    assert shared_object.rows == {index: index for index in range(5000)}
    assert alone_rows == {index: [index] for index in range(5000)}  # held here too: left as it was


@pytest.mark.parametrize("rows", [5_000, 60_000])  # freed at once, and in the background
def test_the_frames_of_a_stopped_build_are_cleared_and_what_they_held_elsewhere_is_left_as_it_was(rows):
    import time

    from earley import DeadlineExceeded
    from earley.deadline import check_deadline
    from earley.reaper import discard_frames, wait_until_freed

    kept = {index: index for index in range(2000)}

    def build():
        built = {index: [index] * 3 for index in range(rows)}
        outside = kept
        check_deadline(time.perf_counter() - 1)
        return built, outside

    with pytest.raises(DeadlineExceeded) as raised:
        build()
    inner = raised.value.__traceback__.tb_next.tb_frame
    assert len(inner.f_locals["built"]) == rows
    discard_frames(raised.value.__traceback__)
    wait_until_freed()
    assert inner.f_locals == {}
    assert kept == {index: index for index in range(2000)}


def test_a_stopped_parse_of_a_long_nfa_hands_its_charts_over(monkeypatch):
    """Freeing the charts of a long parse takes a quarter of a second: a stopped one must not make its caller
    wait for that."""
    import time

    import earley.nfa_parser as module
    from earley import DeadlineExceeded

    discarded = []
    monkeypatch.setattr(module, "discard", lambda *charts: discarded.extend(charts))
    grammar = parse_ebnf('start: items\nitems: "x" items | "x"\n')
    with pytest.raises(DeadlineExceeded):
        NFAParse(grammar, NFA.sequence(["x"] * 3000), deadline=time.perf_counter() + 0.05)
    assert len(discarded) == 6 and any(len(chart) == 3001 for chart in discarded)


def test_a_feed_interleaved_with_another_from_the_same_state_keeps_its_own_chart(monkeypatch):
    """What two server threads may do: while one feed of a fresh state builds its chart, another feed of the same
    state appends to the charts they share. Each new state must still see the chart of its own terminal."""
    import earley.recognizer as module

    grammar = parse_ebnf('list: "[" [item ("," item)* [","]] "]"\nitem: NAME | list')
    recognizer = Recognizer(grammar)
    expected = {terminal: recognizer.start().feed_all(["[", "NAME", terminal]).allowed() for terminal in ",]"}
    base = recognizer.start().feed_all(["[", "NAME"])
    complete_chart = module._complete_chart
    interleaved = []

    def with_another_feed(*args):
        if not interleaved:
            interleaved.append(None)
            interleaved[0] = base.feed("]")
        return complete_chart(*args)

    monkeypatch.setattr(module, "_complete_chart", with_another_feed)
    assert base.feed(",").allowed() == expected[","]
    assert interleaved[0].allowed() == expected["]"]
