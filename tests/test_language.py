"""The language seam: languages are picked by name, suffix or language id, and a second one works end to end."""

from __future__ import annotations

import json
from dataclasses import dataclass

import pytest

from fimlsp import language
from fimlsp.cli import main
from fimlsp.decoding import DecodingOptions
from fimlsp.language import FILE, NONE, Guarantee, Language

CLOSING = {")": "(", "]": "["}


@dataclass(frozen=True)
class Brackets:
    """Balanced brackets: the open brackets after the left context and the middle, and those the right closes."""

    stack: str
    need: str

    def feed(self, text: str) -> Brackets | None:
        stack = self.stack
        for char in text:
            if char in "([":
                stack += char
            elif stack.endswith(CLOSING.get(char, "-")):
                stack = stack[:-1]
            else:
                return None
        return Brackets(stack, self.need)

    @property
    def complete(self) -> bool:
        return self.stack == self.need

    def _finish(self) -> str:
        common = next((i for i, (a, b) in enumerate(zip(self.stack, self.need)) if a != b),
                      min(len(self.stack), len(self.need)))
        closers = {opener: closer for closer, opener in CLOSING.items()}
        return "".join(closers[opener] for opener in reversed(self.stack[common:])) + self.need[common:]

    def in_block(self) -> Brackets:
        return self

    def expected(self) -> tuple[str, ...]:
        return ("(", "[", {"(": ")", "[": "]"}[self.stack[-1]]) if self.stack else ("(", "[")

    def statement_column(self) -> int:
        return 0

    def likely_names(self) -> None:
        return None

    def at_statement_start(self) -> bool:
        return False

    def distance_bound(self) -> float:
        return len(self._finish())

    def finish(self, limit: float, deadline: float | None = None, work: int | None = None) -> str | None:
        return self._finish() if len(self._finish()) <= limit else None


@dataclass(frozen=True)
class BracketsRight:
    right: str

    def start(self, left: str) -> Brackets | None:
        # Read backwards, the right context's closers are openers: what is left open is what it needs.
        need = Brackets("", "").feed(self.right[::-1].translate(str.maketrans("()[]", ")(][")))
        return None if need is None else Brackets("", need.stack).feed(left)


class BracketsLanguage(Language):
    name = "brackets"
    language_ids = ("brackets",)
    suffixes = (".brackets",)
    closers = frozenset(")]")  # a finish of these closes what the middle opened: it invents nothing

    def constrain(self, left, right, budget=0, deadline=None, caches=None) -> Guarantee:
        state = self.right_context(right).start(left)
        if state is None:
            return Guarantee(NONE, None, 0, len(right), "unbalanced outside the middle")
        return Guarantee(FILE, state, 0, len(right))

    def right_context(self, right: str) -> BracketsRight:
        return BracketsRight(right)

    def parses(self, text: str) -> bool:
        state = Brackets("", "").feed(text)
        return state is not None and state.complete


@pytest.fixture
def brackets():
    registered = language.register(BracketsLanguage())
    yield registered
    language.unregister(registered.name)


def test_the_toy_language_judges_like_its_definition(brackets):
    assert brackets.parses("([]())") and not brackets.parses("([)]") and not brackets.parses("((")
    state = brackets.right_context("])").start("(")
    assert state.need == "(["
    assert state.feed("[").complete and not state.feed(")").complete and state.feed("]") is None
    assert state.finish(5) == "[" and state.finish(0) is None
    assert brackets.constrain("(", ")(").scope == NONE


def test_languages_are_found_by_name_suffix_and_language_id(brackets):
    assert language.named("python").name == "python"
    assert language.for_path("file:///work/a.PY?version=2").name == "python"
    assert language.for_path("notes.brackets") is brackets
    assert language.for_language_id("Brackets") is brackets
    assert language.for_path("notes.md") is None and language.for_language_id("markdown") is None
    with pytest.raises(ValueError, match="unknown language 'cobol'; known: python, brackets"):
        language.named("cobol")
    with pytest.raises(ValueError, match="unknown language"):
        DecodingOptions(language="cobol")


def test_a_registered_language_completes_through_the_cli(brackets, tmp_path, capsys):
    path = tmp_path / "nested.brackets"
    path.write_text("([)")
    assert main(["complete", f"{path}:1:3", "--json", "--max-tokens", "12"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["guarantee"] == FILE and result["parses"] is True
    assert result["middle"] and brackets.parses("([" + result["middle"] + ")")


def test_the_cli_language_option_overrides_the_suffix(brackets, tmp_path, capsys):
    path = tmp_path / "nested.py"
    path.write_text("[")
    assert main(["complete", f"{path}:1:2", "--json", "--max-tokens", "8", "--language", "brackets"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert brackets.parses("[" + result["middle"])


def test_caches_are_kept_per_owner_and_per_language(brackets):
    first, second = language.Caches(), language.Caches()
    python = language.named("python")
    kept = first.of(python, dict)
    assert first.of(python, dict) is kept
    assert second.of(python, dict) is not kept and first.of(brackets, dict) is not kept
