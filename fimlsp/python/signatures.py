"""Signatures of the callables a middle calls, as the call judge (`fimlsp.python.calls`) reads them: jedi's
reading of a `def` or `class` at the left context's end, asked once per completion and callable
(`SignatureSource`), with the decorators and classes whose calls it cannot judge said why."""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable
from concurrent.futures import Future, TimeoutError as FutureTimeout
from dataclasses import dataclass, field

from fimlsp.python import lexemes as lx
from fimlsp.python.analysis import judges_script, trailing_chain
from fimlsp.python.jedi_thread import waited_on_analysis_thread
from fimlsp.python.lexer import INITIAL, advance
from fimlsp.python.waits import WaitBudget

_CLOSER = {"(": ")", "[": "]", "{": "}"}

# The time one signature query may take before the call is let go (seconds).
QUERY_SECONDS = 1.0
# Decorators that keep what a call of the function may pass (the last name of the decorator's expression); not
# contextmanager: jedi reads a method it decorates as unbound (`self` among what a call must pass).
_KEEPING = frozenset({"staticmethod", "classmethod", "property", "setter", "getter", "deleter", "wraps",
                      "abstractmethod", "final", "override", "deprecated", "no_type_check"})
# Bases whose metaclass is `type` and that do not define `__new__` in a way that changes the call's arguments.
_PLAIN_BASES = frozenset({"object", "Exception", "BaseException", "ValueError", "TypeError", "RuntimeError",
                          "KeyError", "IndexError", "LookupError", "AttributeError", "OSError", "IOError",
                          "NotImplementedError", "ImportError", "StopIteration", "Warning", "UserWarning",
                          "DeprecationWarning", "Generic"})


@dataclass(frozen=True, slots=True)
class Signature:
    """What a call may pass: the positional parameters' names in order (the first `positional_only` of them
    positional-only), the keyword-only ones, the required ones, and whether `*args`/`**kwargs` take the rest."""

    positional: tuple[str, ...] = ()
    positional_only: int = 0
    keyword_only: frozenset[str] = frozenset()
    required: frozenset[str] = frozenset()
    var_positional: bool = False
    var_keyword: bool = False

    def takes_positional(self, count: int) -> bool:
        return self.var_positional or count <= len(self.positional)

    def takes_keyword(self, name: str, positional: int, star: bool) -> bool:
        """Whether `name=` may follow `positional` positional arguments (`star`: one was unpacked, so how many
        is not known)."""
        if name in self.keyword_only:
            return True
        if name in self.positional[self.positional_only:]:
            return star or self.positional.index(name) >= positional
        return self.var_keyword  # a positional-only parameter's name, or any other, goes into `**kwargs`

    def keyword_prefix(self, begun: str, positional: int, given: frozenset[str], star: bool) -> bool:
        """Whether a keyword being written, `begun` so far, may go on to one this signature takes."""
        if self.var_keyword:
            return True
        names = list(self.keyword_only) + list(self.positional[self.positional_only:])
        return any(name.startswith(begun) and name not in given and self.takes_keyword(name, positional, star)
                   for name in names)

    def satisfied(self, positional: int, given: frozenset[str]) -> bool:
        """Whether every required parameter has an argument."""
        filled = set(self.positional[:positional]) | given
        return self.required <= filled


@dataclass(frozen=True, slots=True)
class Lookup:
    """The signatures of a callable (None: not known statically, any call goes) and why not, when not."""

    signatures: tuple[Signature, ...] | None
    reason: str = ""


def signature_of(params) -> Signature:
    """A `Signature` from jedi's parameters (their `kind` and `to_string()`, which shows a default after `=`)."""
    positional, keyword_only, required = [], set(), set()
    positional_only = 0
    var_positional = var_keyword = False
    for param in params:
        kind = str(param.kind)
        has_default = "=" in param.to_string()
        if kind == "VAR_POSITIONAL":
            var_positional = True
            continue
        if kind == "VAR_KEYWORD":
            var_keyword = True
            continue
        if kind == "KEYWORD_ONLY":
            keyword_only.add(param.name)
        else:
            positional.append(param.name)
            if kind == "POSITIONAL_ONLY":
                positional_only = len(positional)
        if not has_default:
            required.add(param.name)
    return Signature(tuple(positional), positional_only, frozenset(keyword_only), frozenset(required),
                     var_positional, var_keyword)


def _last_name(node) -> str:
    """The last name of a decorator's or base's expression (`functools.wraps(f)` -> `wraps`)."""
    code = node.get_code(include_prefix=False).strip().lstrip("@").strip()
    code = code.split("(", 1)[0].split("[", 1)[0]
    return code.rsplit(".", 1)[-1].strip()


def _statement(definition):
    """The statement a parso `funcdef` or `classdef` makes: its `async` and decorators included."""
    node = definition
    if node.parent is not None and node.parent.type in ("async_funcdef", "async_stmt"):
        node = node.parent
    if node.parent is not None and node.parent.type == "decorated":
        node = node.parent
    return node


def _decorators(definition) -> list:
    node = _statement(definition)
    if node.type != "decorated":
        return []
    found = node.children[0]
    return list(found.children) if found.type == "decorators" else [found]


def _in_open_bracket(definition) -> bool:
    """Whether parso read the definition inside a bracket left open above it (the query document's call, or the
    left context's statement, not closed): the lines up to its `def` or `class` are then one broken expression, so
    its decorators (`@staticmethod` above a method) are lost to it and what decorates it is not known."""
    before = _statement(definition).get_first_leaf().get_previous_leaf()
    return before is not None and before.type != "newline"


def _overloads(funcdef) -> int:
    """How many `@overload` definitions of the function's name its class or module holds (in any branch): jedi
    gives one of an async function's overloads alone (asyncio.sleep's `(delay, result)`)."""
    scope = funcdef.parent
    while scope.type not in ("classdef", "file_input"):
        scope = scope.parent
    count, stack = 0, list(scope.children)
    while stack:
        node = stack.pop()
        if node.type == "funcdef" and node.name.value == funcdef.name.value:
            count += any(_last_name(each) == "overload" for each in _decorators(node))
        elif node.type not in ("classdef", "funcdef") and hasattr(node, "children"):
            stack.extend(node.children)
    return count


def _takes_the_rest(funcdef) -> bool:
    """Whether a parso `funcdef` has `*args` or `**kwargs` (jedi then may show the parameters of what it passes
    them on to, which is no bound on what it takes)."""
    return any(param.star_count for param in funcdef.get_params())


def _class_reason(classdef, seen: frozenset = frozenset()) -> str:
    """Why calling this class (a parso `classdef`) may not take what its `__init__` says; "" when it does."""
    if _decorators(classdef):
        return "a decorated class"
    for child in classdef.iter_funcdefs():
        if child.name.value == "__new__":
            return "a class with __new__"
        if child.name.value == "__init__" and (_takes_the_rest(child) or _decorators(child)):
            return "a class whose __init__ takes *args or **kwargs or is decorated"
    arglist = classdef.get_super_arglist()
    if arglist is None:
        return ""
    bases = arglist.children if arglist.type == "arglist" else [arglist]
    module_classes = {each.name.value: each for each in classdef.get_root_node().iter_classdefs()}
    for base in bases:
        if base.type == "operator":
            continue
        if base.type == "argument":
            return "a class with class keywords or unpacked bases"
        name = _last_name(base)
        if name in _PLAIN_BASES:
            continue
        inner = module_classes.get(name)
        if inner is None or name in seen or inner is classdef:
            return f"a class whose base {name} is not known to be plain"
        reason = _class_reason(inner, seen | {name})
        if reason:
            return reason
    return ""


def signatures_of(found, chain: tuple[str, ...]) -> Lookup:
    """The signatures jedi gave for a call of `chain`, or why they are not trusted."""
    if not found:
        return Lookup(None, "no signature known")
    signatures = []
    for each in found:
        if each.name != chain[-1]:
            return Lookup(None, f"{'.'.join(chain)} is bound to {each.name}")
        tree_name = each._name.tree_name  # jedi's parso leaf of the definition; None for compiled code
        definition = None if tree_name is None else tree_name.get_definition()
        if definition is None:
            return Lookup(None, f"no source for {'.'.join(chain)}")
        if definition.type in ("funcdef", "classdef") and _in_open_bracket(definition):
            return Lookup(None, f"{'.'.join(chain)} is defined where a bracket above is left open")
        stub = str(each.module_path or "").endswith(".pyi")
        if each.type == "function" and definition.type == "funcdef":
            if _takes_the_rest(definition):
                return Lookup(None, f"{'.'.join(chain)} takes *args or **kwargs")
            for decorator in _decorators(definition):
                name = _last_name(decorator)
                if name not in _KEEPING and not (stub and name == "overload"):
                    return Lookup(None, f"{'.'.join(chain)} is decorated by {name}")
                if name == "overload" and len(found) < _overloads(definition):
                    return Lookup(None, f"jedi read {len(found)} of the overloads of {'.'.join(chain)}")
        elif each.type == "class" and definition.type == "classdef":
            reason = _class_reason(definition)
            if reason:
                return Lookup(None, reason)
        else:
            return Lookup(None, f"{'.'.join(chain)} is a {each.type}")
        signatures.append(signature_of(each.params))
    return Lookup(tuple(signatures))


def _closing(line: str) -> str:
    """The brackets that close what `line` leaves open, innermost first: the query document closes the call it
    asks about and those around it, so that the lines after it read as they are written (left open, they would
    swallow the decorators of the definitions below up to the next `def`)."""
    lexed = advance(INITIAL, line + " ")  # the space ends the last token
    opened: list[str] = []
    for terminal in lexed[1] if lexed is not None else ["("]:
        if terminal in lx.OPENING_BRACKETS:
            opened.append(_CLOSER[terminal])
        elif terminal in lx.CLOSING_BRACKETS and opened:
            opened.pop()
    return "".join(reversed(opened))


def _after_line(right: str) -> str:
    """The right context after the cursor's line (whose rest the query document leaves out: its arguments and
    closing brackets are the middle's call's)."""
    end = right.find("\n")
    return "" if end < 0 else right[end:]


_ANSWERS: dict[tuple[str, int, int, str], Future] = {}
_ANSWERS_LOCK = threading.Lock()
_ANSWERS_KEPT = 512


@dataclass(eq=False)
class SignatureSource:
    """What the middle's calls are asked of: jedi's project (None: the environment alone), the file around the
    middle, and the answers so far (one per callable: a completion asks jedi at most once per callable).

    `submit` runs a query where jedi's queries run (one thread: jedi is not thread-safe) and returns its future;
    the default waits there for its end, without a time bound. A query is waited on `seconds` at most, and no longer
    than what is left of `budget`; one not answered in time lets the call go for the rest of the completion and,
    kept, answers the next keystroke's."""

    left: str
    right: str
    project: object = None
    path: str | None = None
    submit: Callable[..., Future] = waited_on_analysis_thread
    seconds: float | None = QUERY_SECONDS
    # What the completion's judges may wait on jedi in all (shared with the member judge, where it is on; none given:
    # no bound but `seconds` a query)
    budget: WaitBudget | None = None
    spent: float = 0.0  # this completion's time in the judge: its checks and its waits (issue 49's added time)
    answers: dict[tuple[str, ...], Lookup] = field(default_factory=dict)
    relaxed: list[str] = field(default_factory=list)  # why calls went unjudged
    queries: int = 0  # callables asked beyond this source's answers (of jedi, or of answers kept from before)

    def __post_init__(self):
        if self.budget is None:
            self.budget = WaitBudget(None)

    def lookup(self, chain: tuple[str, ...]) -> Lookup:
        found = self.answers.get(chain)
        if found is None:
            self.queries += 1
            prefix = self.left[:len(self.left) - len(trailing_chain(self.left))]
            prefix += ".".join(chain) + "("
            line = prefix.count("\n") + 1
            column = len(prefix) - (prefix.rfind("\n") + 1)
            code = prefix + _closing(prefix[prefix.rfind("\n") + 1:]) + _after_line(self.right)
            key = (hashlib.blake2b(code.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest(), line, column,
                   str(self.path))
            with _ANSWERS_LOCK:
                future = _ANSWERS.get(key)
                if future is None:
                    if len(_ANSWERS) >= _ANSWERS_KEPT:
                        _ANSWERS.clear()
                    future = _ANSWERS[key] = self.submit(self._ask, code, line, column, chain)
            bound = self.budget.within(self.seconds)
            try:
                found = self.budget.result(future, self.seconds)
            except FutureTimeout:  # kept too: a finish search's states do not wait on it again
                found = Lookup(None, f"the signature query took more than {bound:g} s" if bound else
                               "the completion's time to wait on the analysis was spent")
            self.answers[chain] = found
            if found.signatures is None and found.reason not in self.relaxed:
                self.relaxed.append(found.reason)
        return found

    def _ask(self, code: str, line: int, column: int, chain: tuple[str, ...]) -> Lookup:
        try:
            script, _path = judges_script(code, self.path, self.project, "calls")
            return signatures_of(script.get_signatures(line, column), chain)
        except Exception as error:  # jedi's own failures on odd code: the callable is unknown, never an error
            return Lookup(None, f"the analysis failed ({type(error).__name__})")

    @property
    def reason(self) -> str:
        """Why the call judge let some calls go, for the completion's reason."""
        relaxed = self.relaxed + [self.budget.reason] if self.budget.spent_out else self.relaxed
        return "calls not judged for some callables: " + "; ".join(relaxed) if relaxed else ""
