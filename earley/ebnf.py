"""A small EBNF text format for grammars, compiled to plain BNF.

    // comments run to the end of the line (so do `#` comments)
    call: expr "(" [args] ")"        // a rule; names in lower case are nonterminals
    args: expr ("," expr)* [","]     // "quoted" literals and UPPER_CASE names are terminals
        | "*" NAME                   // a line starting with `|` continues the rule above
    empty_ok: <empty> | NAME+        // `<empty>` is the empty alternative

Operators: `|` alternatives, `[x]` and `x?` optional, `x*` zero or more, `x+` one or more, `( … )` grouping.
A quoted literal is the terminal whose name is the literal's text, so `"("` and `(` name the same terminal.
Each operator becomes a helper nonterminal named after the rule it occurs in (`args@1`), so error messages and
quotient grammars stay readable.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from earley.grammar import Grammar, GrammarError

_TOKEN = re.compile(
    r"""
    (?P<space>[ \t\r\f]+|(?://|\#)[^\n]*)
  | (?P<newline>\n)
  | (?P<empty><empty>)
  | (?P<literal>"(?:[^"\\\n]|\\.)+")
  | (?P<name>[A-Za-z_][A-Za-z_0-9]*)
  | (?P<op>[:|()\[\]*+?])
    """,
    re.VERBOSE,
)


@dataclass
class _Token:
    kind: str
    text: str
    line: int


def _tokenize(text: str) -> list[_Token]:
    tokens: list[_Token] = []
    line = 1
    position = 0
    while position < len(text):
        match = _TOKEN.match(text, position)
        if match is None:
            raise GrammarError(f"line {line}: unexpected character {text[position]!r}")
        kind = match.lastgroup
        if kind == "newline":
            line += 1
        elif kind != "space":
            tokens.append(_Token(kind, match.group(), line))
        position = match.end()
    return tokens


def _unquote(literal: str) -> str:
    return re.sub(r"\\(.)", r"\1", literal[1:-1])


@dataclass
class _Compiler:
    tokens: list[_Token]
    position: int = 0
    rules: list[tuple[str, tuple[str, ...]]] = field(default_factory=list)
    terminals: set[str] = field(default_factory=set)
    defined: dict[str, int] = field(default_factory=dict)
    used: dict[str, int] = field(default_factory=dict)
    helpers: int = 0
    current: str = ""

    def peek(self, offset: int = 0) -> _Token | None:
        index = self.position + offset
        return self.tokens[index] if index < len(self.tokens) else None

    def error(self, message: str) -> GrammarError:
        token = self.peek() or (self.tokens[-1] if self.tokens else _Token("", "", 1))
        return GrammarError(f"line {token.line}: {message}")

    def expect(self, text: str) -> None:
        token = self.peek()
        if token is None or token.text != text:
            raise self.error(f"expected {text!r}, found {token.text if token else 'end of text'!r}")
        self.position += 1

    def at_rule_start(self) -> bool:
        token, colon = self.peek(), self.peek(1)
        return token is not None and token.kind == "name" and colon is not None and colon.text == ":"

    def compile(self) -> None:
        while self.peek() is not None:
            if not self.at_rule_start():
                raise self.error("expected a rule of the form `name: alternatives`")
            name = self.peek().text
            if name.isupper():
                raise self.error(f"rule name {name!r} is upper case, which marks terminals")
            if name in self.defined:
                raise self.error(f"rule {name!r} is already defined on line {self.defined[name]}")
            self.defined[name] = self.peek().line
            self.current = name
            self.position += 2
            for alternative in self.alternatives():
                self.rules.append((name, alternative))

    def alternatives(self) -> list[tuple[str, ...]]:
        result = [self.sequence()]
        while self.peek() is not None and self.peek().text == "|":
            self.position += 1
            result.append(self.sequence())
        return result

    def sequence(self) -> tuple[str, ...]:
        token = self.peek()
        if token is not None and token.kind == "empty":
            self.position += 1
            return ()
        items: list[str] = []
        while True:
            token = self.peek()
            if token is None or token.text in "|)]" or self.at_rule_start():
                break
            items.append(self.repetition())
        if not items:
            raise self.error("empty alternative: write `<empty>` for the empty string")
        return tuple(items)

    def repetition(self) -> str:
        symbol = self.atom()
        while self.peek() is not None and self.peek().text in ("*", "+", "?"):
            operator = self.peek().text
            self.position += 1
            helper = self.helper()
            if operator == "*":
                self.rules += [(helper, ()), (helper, (helper, symbol))]
            elif operator == "+":
                self.rules += [(helper, (symbol,)), (helper, (helper, symbol))]
            else:
                self.rules += [(helper, ()), (helper, (symbol,))]
            symbol = helper
        return symbol

    def atom(self) -> str:
        token = self.peek()
        if token is None:
            raise self.error("unexpected end of text")
        self.position += 1
        if token.kind == "literal":
            name = _unquote(token.text)
            self.terminals.add(name)
            return name
        if token.kind == "name":
            if token.text.isupper():
                self.terminals.add(token.text)
            else:
                self.used.setdefault(token.text, token.line)
            return token.text
        if token.text in ("(", "["):
            closing = ")" if token.text == "(" else "]"
            alternatives = self.alternatives()
            self.expect(closing)
            helper = self.helper()
            if closing == "]":
                alternatives.append(())
            self.rules += [(helper, alternative) for alternative in alternatives]
            return helper
        raise self.error(f"unexpected {token.text!r}")

    def helper(self) -> str:
        self.helpers += 1
        return f"{self.current}@{self.helpers}"


def parse_ebnf(text: str, start: str | None = None) -> Grammar:
    """Compile EBNF text to a `Grammar`; the start symbol defaults to the first rule."""
    compiler = _Compiler(_tokenize(text))
    compiler.compile()
    if not compiler.defined:
        raise GrammarError("the grammar defines no rules")
    undefined = {name: line for name, line in compiler.used.items() if name not in compiler.defined}
    if undefined:
        name, line = min(undefined.items(), key=lambda item: item[1])
        raise GrammarError(f"line {line}: rule {name!r} is used but never defined")
    start = start if start is not None else next(iter(compiler.defined))
    if start not in compiler.defined:
        raise GrammarError(f"start symbol {start!r} is not a rule of the grammar")
    return Grammar.from_rules(start, compiler.rules, compiler.terminals)
