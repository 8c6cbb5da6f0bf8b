"""Throughput of the Earley core on a Python-like expression grammar.

Reports terminals recognised per second when feeding linearly, when forking (many candidates tried from one
state, as constrained decoding does), and the one-time cost per terminal of a right quotient (Earley over the
reversed right context plus extraction). Inputs are random sentences of the grammar from a fixed seed; the same
sentences rendered as Python text and parsed by `ast.parse` in the same run give a reference for the machine's
speed, so the ratio holds on a noisy machine. Times are CPU time of this process (`time.process_time`), which a busy
machine distorts less than wall time.

    python benchmarks/earley_bench.py [--terminals N] [--seed S]
"""

from __future__ import annotations

import argparse
import ast
import random
import sys
import time
from pathlib import Path

from earley import NFA, Grammar, Recognizer, parse_ebnf, right_quotient


PLACEHOLDER_TEXT = {"NAME": "x", "NUMBER": "1", "STRING": "'s'"}


def as_python(sentence: list[str]) -> str:
    return " ".join(PLACEHOLDER_TEXT.get(terminal, terminal) for terminal in sentence)


def random_sentence(grammar: Grammar, rng: random.Random, budget: int) -> list[str]:
    """A random terminal string of the grammar: expand leftmost, preferring short rules once over budget."""
    shortest = _shortest_lengths(grammar)
    output: list[str] = []
    stack = [grammar.start]
    while stack:
        symbol = stack.pop()
        if symbol in grammar.terminals:
            output.append(grammar.names[symbol])
            continue
        options = grammar.rules_by_lhs[symbol]
        if len(output) + len(stack) > budget:
            options = [min(options, key=lambda r: sum(shortest[s] for s in grammar.rules[r][1]))]
        stack.extend(reversed(grammar.rules[rng.choice(options)][1]))
    return output


def _shortest_lengths(grammar: Grammar) -> list[float]:
    lengths = [1.0 if s in grammar.terminals else float("inf") for s in range(len(grammar.names))]
    changed = True
    while changed:
        changed = False
        for lhs, rhs in grammar.rules:
            length = sum(lengths[s] for s in rhs)
            if length < lengths[lhs]:
                lengths[lhs] = length
                changed = True
    return lengths


def corpus(grammar: Grammar, total: int, seed: int) -> list[list[str]]:
    """Random sentences that are also valid Python (the grammar is looser, e.g. on argument order)."""
    rng = random.Random(seed)
    sentences, count = [], 0
    while count < total:
        sentence = random_sentence(grammar, rng, budget=rng.randint(20, 200))
        try:
            ast.parse(as_python(sentence))
        except SyntaxError:
            continue
        sentences.append(sentence)
        count += len(sentence)
    return sentences


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--terminals", type=int, default=50_000, help="terminals to feed in total")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random sentences")
    args = parser.parse_args()
    grammar = parse_ebnf((Path(__file__).parent / "expression.ebnf").read_text())
    sentences = corpus(grammar, args.terminals, args.seed)
    n_terminals = sum(map(len, sentences))
    recognizer = Recognizer(grammar)
    print(f"grammar: {len(grammar.rules)} BNF rules, {len(grammar.names) - len(grammar.terminals)} nonterminals")
    print(f"input: {len(sentences)} random sentences that ast.parse accepts, {n_terminals} terminals (seed {args.seed})")

    started = time.process_time()
    for sentence in sentences:
        state = recognizer.start().feed_all(sentence)
        assert state is not None and state.complete
    linear = time.process_time() - started
    print(f"linear feed: {n_terminals / linear:,.0f} terminals/s ({1e6 * linear / n_terminals:.1f} µs each)")

    texts = [as_python(sentence) for sentence in sentences]
    started = time.process_time()
    for text in texts:
        ast.parse(text)
    reference = time.process_time() - started
    print(
        f"reference: ast.parse of the same sentences as Python text: {1e6 * reference / n_terminals:.2f} µs per "
        f"terminal; linear feed costs {linear / reference:.1f}x ast.parse"
    )

    started = time.process_time()
    tried = 0
    for sentence in sentences:
        state = recognizer.start()
        for terminal in sentence:
            for candidate in state.allowed_ids():
                state.feed(candidate)
                tried += 1
            state = state.feed(terminal)
    forked = time.process_time() - started
    print(f"forked feed (every allowed terminal tried at each step): {tried / forked:,.0f} feeds/s")

    right_contexts = [s for s in sentences if len(s) >= 20][:40]
    started = time.process_time()
    suffix_terminals = 0
    for sentence in right_contexts:
        suffix = sentence[len(sentence) // 2:]
        quotient = right_quotient(grammar, NFA.sequence(suffix))
        assert Recognizer(quotient).recognizes(sentence[: len(sentence) // 2])
        suffix_terminals += len(suffix)
    quotienting = time.process_time() - started
    print(
        f"right quotient setup: {1e3 * quotienting / suffix_terminals:.2f} ms per right-context terminal "
        f"({suffix_terminals} terminals in {len(right_contexts)} contexts)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
