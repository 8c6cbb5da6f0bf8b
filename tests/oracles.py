"""Brute-force oracles for grammars and regular languages, independent of the Earley code under test.

Everything reduces to one question, "does the CFG intersected with this NFA derive anything?", answered by the
Bar-Hillel construction and a productivity fixpoint over (state, symbol, state) triples. Membership, prefix
viability and both quotients are that question asked of a suitably built NFA.
"""

from __future__ import annotations

from itertools import product

Rules = list[tuple[str, tuple[str, ...]]]
Transitions = set[tuple[int, str, int]]


class RawNFA:
    """A plain NFA with epsilon-free transitions, built here so the oracle shares no code with `earley.nfa`."""

    def __init__(self, n_states: int, transitions: Transitions, initial: set[int], final: set[int]):
        self.n_states, self.transitions, self.initial, self.final = n_states, set(transitions), initial, final

    def __repr__(self) -> str:
        return f"RawNFA({self.n_states}, {sorted(self.transitions)}, {self.initial}, {self.final})"

    @staticmethod
    def word(word: tuple[str, ...]) -> RawNFA:
        return RawNFA(len(word) + 1, {(i, a, i + 1) for i, a in enumerate(word)}, {0}, {len(word)})

    @staticmethod
    def everything(alphabet: tuple[str, ...]) -> RawNFA:
        return RawNFA(1, {(0, a, 0) for a in alphabet}, {0}, {0})

    def then(self, other: RawNFA) -> RawNFA:
        """Concatenation: final states of self get the outgoing transitions of other's initial states."""
        shift = self.n_states
        transitions = set(self.transitions) | {(s + shift, a, t + shift) for s, a, t in other.transitions}
        for s, a, t in other.transitions:
            if s in other.initial:
                transitions |= {(f, a, t + shift) for f in self.final}
        final = {f + shift for f in other.final}
        if other.initial & other.final:
            final |= self.final
        return RawNFA(self.n_states + other.n_states, transitions, set(self.initial), final)


def intersects(rules: Rules, start: str, terminals: set[str], nfa: RawNFA) -> bool:
    """True iff L(grammar) ∩ L(nfa) ≠ ∅."""
    states = range(nfa.n_states)
    derives: dict[str, set[tuple[int, int]]] = {t: set() for t in terminals}
    for s, a, t in nfa.transitions:
        if a in derives:
            derives[a].add((s, t))
    for lhs, _ in rules:
        derives.setdefault(lhs, set())
    changed = True
    while changed:
        changed = False
        for lhs, rhs in rules:
            for p in states:
                reached = {p}
                for symbol in rhs:
                    pairs = derives.get(symbol, set())
                    reached = {t for s, t in pairs if s in reached}
                    if not reached:
                        break
                for q in reached:
                    if (p, q) not in derives[lhs]:
                        derives[lhs].add((p, q))
                        changed = True
    return any((p, q) in derives.get(start, ()) for p in nfa.initial for q in nfa.final)


def strings(alphabet: tuple[str, ...], max_length: int):
    for length in range(max_length + 1):
        yield from product(alphabet, repeat=length)


def compilable(statement: list[tuple[int, str]]) -> list[tuple[int, str]]:
    """A generated statement, as (depth, line) pairs, with what CPython's compiler refuses after parsing written as
    what it allows: `return` and `yield` outside a function as `pass`, a value returned from an async generator as a
    bare `return`."""
    enclosing: list[str] = []
    lines = []
    for depth, text in statement:
        del enclosing[depth:]
        scope = next((header for header in reversed(enclosing) if "def " in header or "class " in header), "")
        if text in ("return x", "yield") and "def " not in scope:
            text = "pass"
        elif text == "return x" and scope.startswith("async def"):
            text = "return"
        lines.append((depth, text))
        enclosing.append(text)
    return lines
