"""Nondeterministic finite automata over grammar terminals, and regular expressions that build them.

The right context of a cursor is not one terminal string but a regular language of them (Python's first
newline may be an INDENT or any number of DEDENTs), so the Earley parser runs over an NFA. NFAs here have no
epsilon transitions: the regular-expression builders eliminate them, which keeps the parser's scanner a plain
table lookup.
"""

from __future__ import annotations

import re
from collections.abc import Hashable, Iterable, Iterator, Sequence

from earley.deadline import CLOCK_INTERVAL, check_deadline

Label = Hashable


class NFA:
    """An epsilon-free NFA `(Q, Σ, I, δ, F)` with states `0 … n-1` and a set of initial states."""

    __slots__ = ("n_states", "transitions", "initial", "final", "delta")

    def __init__(
        self,
        n_states: int,
        transitions: Iterable[tuple[int, Label, int]],
        initial: Iterable[int],
        final: Iterable[int],
        deadline: float | None = None,
    ):
        """Raises `DeadlineExceeded` past `deadline` (an NFA of a big right context takes tens of milliseconds)."""
        self.n_states = n_states
        self.transitions: frozenset[tuple[int, Label, int]] = frozenset(_checked(transitions, deadline))
        self.initial: frozenset[int] = frozenset(initial)
        self.final: frozenset[int] = frozenset(final)
        rows: list[dict[Label, list[int]]] = [{} for _ in range(n_states)]
        for source, label, target in _checked(self.transitions, deadline):
            rows[source].setdefault(label, []).append(target)
        # Sorted, so that everything built from an NFA is the same from run to run whatever the hash seed.
        self.delta: tuple[dict[Label, tuple[int, ...]], ...] = tuple(
            {label: tuple(sorted(row[label])) for label in (sorted(row, key=repr) if len(row) > 1 else row)}
            for row in _checked(rows, deadline)
        )
        for state in (*self.initial, *self.final):
            if not 0 <= state < n_states:
                raise ValueError(f"state {state} is outside 0..{n_states - 1}")

    @classmethod
    def sequence(cls, labels: Sequence[Label]) -> NFA:
        """The NFA accepting exactly one string."""
        return cls(len(labels) + 1, ((i, label, i + 1) for i, label in enumerate(labels)), [0], [len(labels)])

    @classmethod
    def from_regex(cls, text: str) -> NFA:
        """Compile a regular expression over terminal names, e.g. `NL (INDENT | DEDENT*) PASS NL DEDENT{1,4}`.

        Terminal names are words or double-quoted literals; operators are `|`, `*`, `+`, `?`, `{m}`, `{m,n}`,
        `{m,}` and parentheses; `()` is the empty string.
        """
        return _RegexParser(text).parse().to_nfa()

    @property
    def labels(self) -> frozenset[Label]:
        return frozenset(label for _, label, _ in self.transitions)

    def reverse(self, deadline: float | None = None) -> NFA:
        """The NFA of the reversed language: transitions inverted, initial and final states swapped."""
        reversed_transitions = ((t, label, s) for s, label, t in self.transitions)
        return NFA(self.n_states, reversed_transitions, self.final, self.initial, deadline)

    def with_final_ends(self, deadline: float | None = None) -> NFA:
        """The same language with no transition out of a final state: a final state that has some becomes
        non-final and gets a final twin with none, reached by every transition into it (initial if it is).
        A quotient by such an NFA need not copy what was predicted at its ends (`earley.quotient`)."""
        return self.final_ends(deadline)[0]

    def final_ends(self, deadline: float | None = None) -> tuple[NFA, dict[int, int]]:
        """`with_final_ends`, and for each final state of the result the final state of this NFA it stands for."""
        busy = sorted(state for state in self.final if self.delta[state])
        if not busy:
            return self, {state: state for state in self.final}
        twin = {state: self.n_states + index for index, state in enumerate(busy)}
        ends = NFA(
            self.n_states + len(busy),
            [*self.transitions, *((source, label, twin[target]) for source, label, target in self.transitions
                                  if target in twin)],
            [*self.initial, *(twin[state] for state in self.initial if state in twin)],
            [*(self.final - twin.keys()), *twin.values()],
            deadline,
        )
        origins = {state: state for state in self.final - twin.keys()}
        origins.update((end, state) for state, end in twin.items())
        return ends, origins

    def without_markers(self, markers: frozenset[Label]) -> tuple[NFA, dict[int, frozenset[Label]]]:
        """This NFA with its `markers` transitions taken out, each of which must lead to a final state with no
        way on: their sources become final instead. Returns it and the markers of each such final state; a
        final state without any ends an unmarked word. The language is this one with the markers dropped from
        the words' ends, and the markers say which words a final state ends."""
        marked: dict[int, set[Label]] = {}
        kept = []
        for source, label, target in self.transitions:
            if label not in markers:
                kept.append((source, label, target))
                continue
            if target not in self.final or self.delta[target]:
                raise ValueError(f"the marker {label!r} does not end a word")
            marked.setdefault(source, set()).add(label)
        if not marked:
            return self, {}
        entered = {target for _, label, target in self.transitions if label in markers}
        reached = {target for _, label, target in kept}
        unmarked_final = {state for state in self.final
                          if state not in entered or state in self.initial or state in reached}
        nfa = NFA(self.n_states, kept, self.initial, unmarked_final | marked.keys())
        tags = {state: frozenset(labels) | (frozenset({None}) if state in unmarked_final else frozenset())
                for state, labels in marked.items()}
        return nfa, tags

    def step(self, states: Iterable[int], label: Label) -> frozenset[int]:
        return frozenset(target for state in states for target in self.delta[state].get(label, ()))

    def accepts(self, labels: Iterable[Label]) -> bool:
        states = self.initial
        for label in labels:
            states = self.step(states, label)
            if not states:
                return False
        return bool(states & self.final)

    def trim(self, deadline: float | None = None) -> NFA:
        """Drop states that are unreachable from an initial state or cannot reach a final one (raises
        `DeadlineExceeded` past `deadline`, looking at the clock between its passes)."""
        return _trimmed(self.n_states, self.transitions, self.initial, self.final, deadline)

    def __repr__(self) -> str:
        return (
            f"<NFA states={self.n_states} transitions={len(self.transitions)} "
            f"initial={sorted(self.initial)} final={sorted(self.final)}>"
        )


def _checked(elements: Iterable, deadline: float | None) -> Iterator:
    """`elements`, with a look at the clock every `CLOCK_INTERVAL` of them."""
    if deadline is None:
        yield from elements
        return
    for count, element in enumerate(elements):
        if count % CLOCK_INTERVAL == 0:
            check_deadline(deadline)
        yield element


def _trimmed(n_states: int, transitions: Iterable[tuple[int, Label, int]], initial: Iterable[int],
             final: Iterable[int], deadline: float | None = None) -> NFA:
    """The NFA of the states that are reachable from an initial state and reach a final one, renumbered in order
    (one NFA built, not a second one to trim)."""
    transitions = list(transitions)
    forward_edges: dict[int, set[int]] = {}
    backward_edges: dict[int, set[int]] = {}
    for source, _, target in _checked(transitions, deadline):
        forward_edges.setdefault(source, set()).add(target)
        backward_edges.setdefault(target, set()).add(source)
    initial, final = list(initial), list(final)
    keep = sorted(_closure(initial, forward_edges, deadline) & _closure(final, backward_edges, deadline))
    renumber = {old: new for new, old in enumerate(keep)}
    return NFA(
        len(keep),
        ((renumber[s], label, renumber[t]) for s, label, t in transitions if s in renumber and t in renumber),
        (renumber[s] for s in initial if s in renumber),
        (renumber[s] for s in final if s in renumber),
        deadline,
    )


def _closure(start: Iterable[int], edges: dict[int, set[int]], deadline: float | None = None) -> set[int]:
    seen = set(start)
    stack = list(seen)
    countdown = CLOCK_INTERVAL
    while stack:
        countdown -= 1
        if countdown == 0:
            check_deadline(deadline)
            countdown = CLOCK_INTERVAL
        for target in edges.get(stack.pop(), ()):
            if target not in seen:
                seen.add(target)
                stack.append(target)
    return seen


class Regex:
    """A regular expression over labels, built with `sym`, `seq`, `alt`, `star`, `plus`, `opt`, `repeat`."""

    __slots__ = ("kind", "children", "label", "low", "high", "_key")

    def __init__(self, kind: str, children: tuple = (), label: Label = None, low: int = 0, high: int | None = 0):
        self.kind = kind
        self.children = children
        self.label = label
        self.low = low
        self.high = high
        self._key: tuple | None = None

    def to_nfa(self) -> NFA:
        builder = _ThompsonBuilder()
        start, end = builder.build(self)
        return builder.finish(start, end)

    def key(self) -> tuple:
        """A structural identity, so that equal expressions built separately can be shared."""
        if self._key is None:
            self._key = (self.kind, self.label, self.low, self.high, tuple(child.key() for child in self.children))
        return self._key

    def __repr__(self) -> str:
        if self.kind == "sym":
            return repr(self.label)
        return f"{self.kind}({', '.join(map(repr, self.children))})"


def union_of_sequences(sequences: Iterable[Sequence[Regex]], deadline: float | None = None) -> NFA:
    """The NFA of the union of concatenations, sharing their common prefixes.

    Sequences that agree on a long prefix (a file's right context seen from several boundary indices, reversed)
    become a trie, so an Earley parse over the NFA handles the shared part once. Built without recursion on
    sequence length; raises `DeadlineExceeded` past `deadline`.
    """
    builder = _ThompsonBuilder()
    root, end = builder.state(), builder.state()
    children: dict[tuple[int, tuple], int] = {}
    for sequence in sequences:
        node = root
        for position, part in enumerate(sequence):
            if position % CLOCK_INTERVAL == 0:
                check_deadline(deadline)
            key = (node, part.key())
            child = children.get(key)
            if child is None:
                child = children[key] = builder.state()
                if part.kind == "sym":
                    builder.edges.append((node, part.label, child))
                else:
                    part_start, part_end = builder.build(part)
                    builder.epsilon[node].add(part_start)
                    builder.epsilon[part_end].add(child)
            node = child
        builder.epsilon[node].add(end)
    return builder.finish(root, end, deadline)


def sym(label: Label) -> Regex:
    return Regex("sym", label=label)


def seq(*parts: Regex) -> Regex:
    return Regex("seq", tuple(parts))


def alt(*parts: Regex) -> Regex:
    return Regex("alt", tuple(parts))


def star(part: Regex) -> Regex:
    return repeat(part, 0, None)


def plus(part: Regex) -> Regex:
    return repeat(part, 1, None)


def opt(part: Regex) -> Regex:
    return repeat(part, 0, 1)


def repeat(part: Regex, low: int, high: int | None) -> Regex:
    """`part{low,high}`; `high=None` means unbounded."""
    if low < 0 or (high is not None and high < low):
        raise ValueError(f"bad repetition bounds {{{low},{high}}}")
    return Regex("repeat", (part,), low=low, high=high)


def empty() -> Regex:
    return seq()


class _ThompsonBuilder:
    """Thompson's construction with epsilon edges, then epsilon elimination and trimming."""

    def __init__(self):
        self.n_states = 0
        self.edges: list[tuple[int, Label, int]] = []
        self.epsilon: dict[int, set[int]] = {}

    def state(self) -> int:
        self.n_states += 1
        self.epsilon[self.n_states - 1] = set()
        return self.n_states - 1

    def build(self, regex: Regex) -> tuple[int, int]:
        start, end = self.state(), self.state()
        if regex.kind == "sym":
            self.edges.append((start, regex.label, end))
        elif regex.kind == "seq":
            current = start
            for child in regex.children:
                child_start, child_end = self.build(child)
                self.epsilon[current].add(child_start)
                current = child_end
            self.epsilon[current].add(end)
        elif regex.kind == "alt":
            for child in regex.children:
                child_start, child_end = self.build(child)
                self.epsilon[start].add(child_start)
                self.epsilon[child_end].add(end)
        else:
            (child,) = regex.children
            current = start
            for _ in range(regex.low):
                child_start, child_end = self.build(child)
                self.epsilon[current].add(child_start)
                current = child_end
            if regex.high is None:
                child_start, child_end = self.build(child)
                self.epsilon[current] |= {child_start}
                self.epsilon[child_end] |= {child_start, end}
            else:
                for _ in range(regex.high - regex.low):
                    child_start, child_end = self.build(child)
                    self.epsilon[current] |= {child_start, end}
                    current = child_end
            self.epsilon[current].add(end)
        return start, end

    def finish(self, start: int, end: int, deadline: float | None = None) -> NFA:
        outgoing: dict[int, list[tuple[Label, int]]] = {state: [] for state in range(self.n_states)}
        for source, label, target in self.edges:
            outgoing[source].append((label, target))
        transitions = set()
        final = []
        for state in range(self.n_states):
            if state % CLOCK_INTERVAL == 0:
                check_deadline(deadline)
            closure = _closure([state], self.epsilon) if self.epsilon[state] else (state,)
            transitions.update((state, label, target) for via in closure for label, target in outgoing[via])
            if end in closure:
                final.append(state)
        return _trimmed(self.n_states, transitions, [start], final, deadline)


_REGEX_TOKEN = re.compile(r'\s*(?:(?P<word>[A-Za-z_][A-Za-z_0-9]*)|(?P<literal>"(?:[^"\\]|\\.)*")'
                          r"|(?P<bounds>\{\s*\d+\s*(?:,\s*\d*\s*)?\})|(?P<op>[|*+?()]))")


class _RegexParser:
    def __init__(self, text: str):
        self.tokens: list[tuple[str, str]] = []
        position = 0
        text = text.rstrip()
        while position < len(text):
            match = _REGEX_TOKEN.match(text, position)
            if match is None:
                raise ValueError(f"bad regular expression at {text[position:position + 10]!r}")
            self.tokens.append((match.lastgroup, match.group(match.lastgroup)))
            position = match.end()
        self.position = 0

    def peek(self) -> tuple[str, str] | None:
        return self.tokens[self.position] if self.position < len(self.tokens) else None

    def parse(self) -> Regex:
        regex = self.alternation()
        if self.peek() is not None:
            raise ValueError(f"unexpected {self.peek()[1]!r} in regular expression")
        return regex

    def alternation(self) -> Regex:
        parts = [self.concatenation()]
        while self.peek() == ("op", "|"):
            self.position += 1
            parts.append(self.concatenation())
        return parts[0] if len(parts) == 1 else alt(*parts)

    def concatenation(self) -> Regex:
        parts = []
        while self.peek() is not None and self.peek()[1] not in ("|", ")"):
            parts.append(self.postfix())
        return parts[0] if len(parts) == 1 else seq(*parts)

    def postfix(self) -> Regex:
        regex = self.atom()
        while self.peek() is not None and (self.peek()[0] == "bounds" or self.peek()[1] in ("*", "+", "?")):
            kind, text = self.peek()
            self.position += 1
            if kind == "bounds":
                low_text, _, high_text = text.strip("{} ").partition(",")
                low = int(low_text)
                high = low if "," not in text else (int(high_text) if high_text.strip() else None)
                regex = repeat(regex, low, high)
            else:
                regex = {"*": star, "+": plus, "?": opt}[text](regex)
        return regex

    def atom(self) -> Regex:
        token = self.peek()
        if token is None:
            raise ValueError("unexpected end of regular expression")
        self.position += 1
        kind, text = token
        if kind == "word":
            return sym(text)
        if kind == "literal":
            return sym(re.sub(r"\\(.)", r"\1", text[1:-1]))
        if text == "(":
            if self.peek() == ("op", ")"):
                self.position += 1
                return empty()
            regex = self.alternation()
            if self.peek() != ("op", ")"):
                raise ValueError("missing ')' in regular expression")
            self.position += 1
            return regex
        raise ValueError(f"unexpected {text!r} in regular expression")
