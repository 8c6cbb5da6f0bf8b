"""Earley recognition over NFAs and quotient grammars (Melcer et al., Sec. IV). Language-agnostic, no dependencies.

- `Grammar`, `parse_ebnf`: context-free grammars over interned symbols, and a readable EBNF text format;
- `NFA` and the regex builders: regular languages over terminals, such as a right context's token stream;
- `NFAParse`: Earley charts over every string of an NFA, with each item's creation methods;
- `left_quotient`, `right_quotient`: quotient grammars extracted from those charts; `RightQuotients`: the
  recognizers of many right quotients of one grammar, sharing what depends on the grammar alone, each of which
  tells the parts of a union of right languages apart by their markers;
- `Recognizer`: an incremental recognizer whose states are immutable values.
"""

from earley.deadline import Deadline, DeadlineExceeded, Stopped
from earley.ebnf import parse_ebnf
from earley.grammar import Grammar, GrammarError
from earley.nfa import NFA, Regex, alt, empty, opt, plus, repeat, seq, star, sym, union_of_sequences
from earley.nfa_parser import NFAParse
from earley.quotient import RightQuotients, left_quotient, right_quotient
from earley.recognizer import Recognizer, RecognizerState

__all__ = [
    "NFA",
    "Deadline",
    "DeadlineExceeded",
    "Grammar",
    "GrammarError",
    "NFAParse",
    "Recognizer",
    "RecognizerState",
    "Regex",
    "RightQuotients",
    "Stopped",
    "alt",
    "empty",
    "left_quotient",
    "opt",
    "parse_ebnf",
    "plus",
    "repeat",
    "right_quotient",
    "seq",
    "star",
    "sym",
    "union_of_sequences",
]
