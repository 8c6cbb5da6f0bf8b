"""The members of a receiver before a dot, for the member judge (`fimlsp.python.members`): asked of jedi once per
document and receiver, and cached.

The document a receiver is asked in is the file with the cursor's line cut back to its indentation and the
receiver (`query_code`): typing on a line changes nothing jedi is asked, so the keystrokes after the first of a
line read a cached answer (a line whose left part may bind the receiver's first name is kept whole). The question
runs on the analysis's one jedi thread (`Analysis.run`), and can be asked ahead (`MemberLists.prefetch`) while
the prompt is read.

A member list is an over-approximation on purpose, so that no name Python accepts is refused: jedi's members; for
every class of the receiver's ancestry and every module, the names its source binds (read with `ast` from the
implementation, a stub's too: every branch of an `if sys.platform` block, attributes any method stores on its first
parameter); a class object's metaclass's members (`Real.register`, ABCMeta's); for `self` and `cls`, what the file's
subclasses of their class bind in their bodies (a base's method may load what they define); the names written after
the same receiver anywhere in the file, the names it quotes (what `hasattr` and `getattr` guards test; not a dict
display's keys nor a subscript's: `{"path": ...}`, `scope["path"]`), the names the file stores as an attribute of
anything, and every `__slots__` name. An optional receiver (`Form | None`) is judged by its other type: None has no
member but the dunders. An attribute jedi reads as one assignment's literal is judged by its type where every
store of it is a literal of that type (`fimlsp.python.literal_attributes`). A receiver is unknown (None, with the
reason): no inferred type or several (with dynamic parameters off, jedi infers an instance from an annotation or an
assignment, and several where branches assign differently); a receiver whose type the file tests (`isinstance`,
`issubclass`, `type(x) is`, `match x:`), which jedi does not narrow by; another literal; an operator's result
(`path / "x"`, read by the operator's stub, which may name a base); a module that star-imports where jedi lists no
member (a parameter's place); a class with a base whose source cannot be read (a compiled base without a stub, or a
stub without its implementation outside `builtins`: a stub leaves out the attributes its methods set); `Any`, a mock,
a function; a class or module with `__getattr__` or a custom `__getattribute__`, or whose source (or, for a class
object, its metaclass's) sets attributes dynamically.
"""

from __future__ import annotations

import ast
import hashlib
import re
import threading
import time
from concurrent.futures import Future, TimeoutError as FutureTimeout
from dataclasses import replace
from pathlib import Path

from fimlsp.python.analysis import (Analysis, Answers, Lookup, UnknownBase, ancestry, judges_script, quoted_names,
                                    slot_names, stored_attributes, trailing_chain, used_after, without_prose)
from fimlsp.python.class_text import class_around, class_lines, in_plain_class, related_classes, subclass_names
from fimlsp.python.literal_attributes import literal_type
from fimlsp.syntax_trees import TreeNotBuilt, parsed

QUERY_SECONDS = 1.0  # the longest a judge waits on one receiver (jedi's first query in a workspace loads stubs)
_CACHED = 512  # answers kept per analysis
_JUDGED_TYPES = frozenset({"module", "class", "instance"})
_DYNAMIC_TEXT = re.compile(r"\bsetattr\s*\(|\b__dict__\b|\b__getattr__\b|\b__getattribute__\b|\bvars\s*\(")
# What makes a module's globals at run time: ssl's `_IntEnum._convert_('VerifyMode', ...)` makes CERT_NONE.
_MODULE_GLOBALS = re.compile(r"\bglobals\s*\(\s*\)\s*(?:\.\s*update\b|\[)|\b_convert_\s*\(")
# parso's nodes of a binary operation (`|`, `^`, `&`, `<<`, `+`, `*` and `/`, `**`)
_OPERATIONS = frozenset({"expr", "xor_expr", "and_expr", "shift_expr", "arith_expr", "term", "power"})
_TRAILING_QUOTED = re.compile(r"""['"][A-Za-z_]\w*['"][ \t]*\Z""")
_SELF = ("self", "cls")
# Built-in types whose instances have no `__dict__`: storing a new attribute on one raises AttributeError.
_FIXED_TYPES = frozenset(f"builtins.{name}" for name in ("set", "frozenset", "list", "dict", "tuple", "str", "bytes",
                                                         "bytearray", "int", "float", "complex", "bool"))
_DYNAMIC_FILE = "the file sets attributes dynamically (setattr, vars, __dict__, __getattr__)"
_LITERAL = "a literal value inferred (one assignment's, not the receiver's type)"
_UNKNOWN_ROOTS = ("unittest.mock", "mock.", "typing.Any", "typing_extensions.Any")
_INDENT = re.compile(r"[ \t]*")
# Class decorators that add no attribute a class body does not name (or only dunders).
_PLAIN_DECORATOR = re.compile(r"@(?:dataclasses\.)?dataclass\b|@(?:functools\.)?total_ordering\b|@(?:typing\.)?final\b")


def query_code(left: str, right: str, receiver: str) -> tuple[str, int, int]:
    """The document jedi is asked about `receiver`, and the line (1-based) and column (0-based, after its dot) of
    the receiver's end: the file with the cursor's line cut back to its indentation and `receiver.`, the rest of
    that line moved to a line of its own. The line's left part stays where it may bind the receiver's first name
    (`x = f(); x.`, `for x in xs: x.`), which any occurrence of that name other than before a dot may."""
    line_start = left.rfind("\n") + 1
    head = left[line_start:len(left) - len(trailing_chain(left))]
    indent = _INDENT.match(head).group()
    root = re.escape(receiver.split(".")[0])
    kept = head if re.search(r"(?<![\w.])" + root + r"\b(?!\s*\.)", head) else indent
    line_end = right.find("\n")
    rest, after = (right, "") if line_end < 0 else (right[:line_end], right[line_end:])
    rest = rest.strip()
    prefix = left[:line_start] + kept + receiver + "."
    code = prefix + ("\n" + indent + rest if rest else "") + after
    return code, prefix.count("\n") + 1, len(prefix) - line_start


def _question(left: str, right: str, receiver: str, path: str | None) -> tuple[tuple, str, int, int, str | None, str]:
    """What asks about `receiver` at the end of `left`: the answer's key, and jedi's document, line and column."""
    code, line, column = query_code(left, right, receiver)
    key = (hashlib.blake2b(code.encode("utf-8", "surrogatepass"), digest_size=16).digest(), receiver, path)
    return key, code, line, column, path, receiver


class MemberLists:
    """The answers of one analysis, per (document, receiver), the latest `_CACHED` kept."""

    def __init__(self, analysis: Analysis):
        self.analysis = analysis
        self._answers = Answers(_CACHED)
        self._lock = threading.Lock()
        self._ahead: list[tuple] = []  # the questions `ask_ahead` asked last
        self.queries = 0  # jedi queries made (counted bound: at most one per document and receiver)

    def prefetch(self, left: str, right: str, receiver: str, path: str | None, background: bool = False) -> Future:
        """Start the question about `receiver` at the end of `left` (a chain before a dot), without waiting;
        `background`: after every question a judge waits on (one the middle may write later)."""
        key, *question = _question(left, right, receiver, path)
        return self._answers.ask(self.analysis, key, self._ask, *question, background=background)

    def ask_ahead(self, left: str, right: str, receivers: list[str], path: str | None) -> None:
        """Ask in the background about `receivers` at the end of `left`, dropping the questions asked ahead before
        that have not begun and are not asked again (typing has moved on from where they were asked)."""
        asked = []
        for receiver in receivers:
            key, *question = _question(left, right, receiver, path)
            self._answers.ask(self.analysis, key, self._ask, *question, background=True)
            asked.append(key)
        with self._lock:
            earlier, self._ahead = self._ahead, asked
        for key in set(earlier) - set(asked):
            self._answers.drop(self.analysis, key)

    def lookup(self, left: str, right: str, receiver: str, path: str | None,
               seconds: float | None = QUERY_SECONDS, trailing_key: bool = False) -> Lookup:
        """The members of `receiver` written at the end of `left` (before its dot), within `seconds` (None: however
        long jedi takes; past it, unknown, and the answer is kept for the next ask). `trailing_key`: a name quoted
        at the end of `left` is a key (the cursor is in a brace's display), not an attribute's name."""
        future = self.prefetch(left, right, receiver, path)
        clock = time.perf_counter()
        try:
            found = future.result(seconds)
        except FutureTimeout:
            return Lookup(None, f"the analysis took more than {f'{seconds:g} s' if seconds else 'the time left'}")
        finally:
            self.analysis.waited += time.perf_counter() - clock
        if found.names is None:
            return found
        head = left[left.rfind("\n") + 1:]  # the cursor's line, which the question left out
        if trailing_key:
            head = _TRAILING_QUOTED.sub("", head)
        extra = stored_attributes(head) | slot_names(head) | quoted_names(head)
        return replace(found, names=found.names | extra) if extra - found.names else found

    def _ask(self, code: str, line: int, column: int, path: str | None, receiver: str) -> Lookup:
        self.queries += 1
        try:
            return _infer(self.analysis, code, line, column, path, receiver)
        except Exception as error:  # jedi's own failures on odd code: the receiver is unknown, never an error
            return Lookup(None, f"the analysis failed ({type(error).__name__})")


_LISTS: dict[int, MemberLists] = {}
_LISTS_LOCK = threading.Lock()


def member_lists(analysis: Analysis) -> MemberLists:
    """The one `MemberLists` of `analysis`."""
    with _LISTS_LOCK:
        found = _LISTS.get(id(analysis))
        if found is None or found.analysis is not analysis:
            found = _LISTS[id(analysis)] = MemberLists(analysis)
        return found


def _infer(analysis: Analysis, code: str, line: int, column: int, path: str | None, receiver: str) -> Lookup:
    if receiver in _SELF and _DYNAMIC_TEXT.search(code):  # (never a module: known unjudged before jedi's 0.4 s)
        return Lookup(None, _DYNAMIC_FILE)
    script, document = judges_script(code, path, analysis.project, "members")
    inferred = script.infer(line, max(column - 1, 0))
    if len(inferred) > 1:  # an optional receiver: None has no member but the dunders, which are never judged
        inferred = [each for each in inferred if each.full_name != "builtins.NoneType"]
    if not inferred:
        return Lookup(None, "no type inferred")
    if len({each.full_name for each in inferred}) > 1:  # jedi lists the members of a union unreliably
        return Lookup(None, "several types inferred")
    kinds: set[str] = set()
    from_stub = star = False
    extra: set[str] = set()
    for each in inferred:
        full_name = each.full_name or ""
        if each.type not in _JUDGED_TYPES:
            return Lookup(None, f"a {each.type} receiver")
        if full_name.startswith(_UNKNOWN_ROOTS):
            return Lookup(None, f"a dynamic receiver ({full_name})")
        kinds.add(each.type)
        sources = _sources(each, document)
        if sources == _LITERAL:
            kind = literal_type(code, receiver, full_name, in_plain_class(code, line))
            sources = sources if kind is None else [(frozenset(dir(kind)), False)]
        if isinstance(sources, str):
            return Lookup(None, sources)
        for source, stub in sources:
            from_stub = from_stub or stub
            star = star or (each.type == "module" and not stub and "*" in source)
            extra |= source
    if kinds != {"module"} and _DYNAMIC_TEXT.search(code):
        return Lookup(None, _DYNAMIC_FILE)
    if _narrowed(code, receiver):
        return Lookup(None, f"{receiver}'s type is narrowed (isinstance, issubclass, type, match), which jedi does "
                            "not follow")
    completions = script.complete(line, column)
    if not completions and star:  # where jedi completes nothing (a parameter's place), the source's own names
        return Lookup(None, "a module that star-imports, whose members jedi does not list here")  # lack the star's
    if "instance" in kinds and _operator_result(script, line, column):
        return Lookup(None, "an operator's result")
    names = {completion.name for completion in completions}
    if "__getattr__" in names or "__getattr__" in extra:
        return Lookup(None, "the receiver defines __getattr__")
    for completion in completions:
        if completion.name == "__getattribute__" and not (completion.full_name or "").startswith(
                ("builtins.", "types.")):
            return Lookup(None, "the receiver defines __getattribute__")
    names |= extra
    if not names:
        return Lookup(None, "no members listed")
    names |= slot_names(code) | stored_attributes(code) | quoted_names(code)
    if receiver in _SELF:
        names |= subclass_names(code, line)
        span = class_lines(code, line)
        above = code.split("\n")[span[0] - 1].strip() if span and span[0] else ""
        if above.startswith("@") and not _PLAIN_DECORATOR.match(above):
            return Lookup(None, f"the class is decorated ({above[:40]}): the decorator may add attributes")
        loads = re.findall(r"(?<![\w.])" + receiver + r"[ \t]*\.[ \t]*(\w+)", class_around(code, line))
        owed = {name for name in loads if not name.startswith("__")}
        if owed - names:  # a base meant to be subclassed (_markupbase.ParserBase calls self.handle_comment)
            return Lookup(None, f"the class loads attributes on {receiver} that it does not define "
                                f"({', '.join(sorted(owed - names)[:3])})")
    if receiver:  # the code's uses, not a comment's or a string's; on self or cls, in a class self may be of
        code_alone = without_prose(code)
        related = related_classes(code_alone, line) if receiver.split(".")[0] in _SELF else None
        names |= used_after(receiver, code_alone if related is None else related)
    fixed = kinds == {"instance"} and all(each.full_name in _FIXED_TYPES for each in inferred)
    return Lookup(frozenset(names), "", frozenset(kinds), from_stub, star, fixed)


def _narrowed(code: str, receiver: str) -> bool:
    """Whether `code` tests the type of `receiver` or of a chain it goes on from anywhere (`isinstance(func,
    partial)`, `type(x) is`, `match x:`): jedi infers the declared type there (a Callable's members, not the
    partial's `func`), so a narrowed receiver is unknown wherever it stands."""
    parts = receiver.split(".")
    chains = "|".join(r"\s*\.\s*".join(map(re.escape, parts[:end])) for end in range(1, len(parts) + 1))
    tested = r"\s*(?:" + chains + r")\s*"
    return re.search(r"(?<![\w.])(?:(?:isinstance|issubclass)\s*\(" + tested + r",|type\s*\(" + tested
                     + r"\)\s*(?:is|==|!=|in)\b|match\s" + tested + r":)", code) is not None


def _operator_result(script, line: int, column: int) -> bool:
    """Whether the receiver before the dot at `line`, `column` is assigned an operator's result (`path / "x"`):
    jedi reads its type from the operator's stub, which may name a base of it (PurePath, not the Path it is)."""
    for name in script.goto(line, max(column - 1, 0)):
        tree_name = getattr(name._name, "tree_name", None)
        definition = tree_name.get_definition() if tree_name is not None else None
        if definition is not None and definition.type == "expr_stmt" and definition.get_rhs().type in _OPERATIONS:
            return True
    return False


def _sources(name, document: Path | None) -> list[tuple[frozenset[str], bool]] | str:
    """The names each module or class of the inferred receiver's ancestry binds in its source (and whether it is a
    stub's), the classes of the document itself (at `document`) left to jedi and the file's own stores; a string
    saying why not where one cannot be read."""
    from jedi.inference.gradual.conversion import convert_values

    found = []
    try:
        values = list(name._name.infer())
        if not values:
            return "no value inferred"
        if all(value.is_module() for value in values):
            for value in values:
                for each in {value, *convert_values([value])}:
                    file = each.get_root_context().py__file__()
                    if file is not None and _MODULE_GLOBALS.search(_parsed(str(file))[1]):
                        return f"the module {value.py__name__()} makes globals at run time"
                    if file is not None:
                        found.append((_module_names(str(file)), str(file).endswith(".pyi")))
            return found
        metaclass = _metaclass_sources([value for value in values if value.is_class()], document)
        if isinstance(metaclass, str):
            return metaclass
        found.extend(metaclass)
        if any(not value.is_class() and not hasattr(value, "class_value") for value in values):
            # A compiled literal (`self.sys_import = None` infers the value None): jedi read one assignment or a
            # default, not the attribute's type (lib2to3's fix_exitfunc later loads self.sys_import.parent).
            return _LITERAL
        for current in ancestry([value if value.is_class() else value.class_value for value in values]):
            trusted = current.get_root_context().py__name__() in TRUSTED_STUBS  # jedi's members suffice
            if not trusted and current.get_root_context().py__file__() != document:
                sources = class_sources(current)
                if sources is None:
                    return f"{current.py__name__()} sets attributes dynamically"
                if all(stub for _names, stub in sources):
                    return f"the source of {current.py__name__()} cannot be read (a stub leaves out what it sets)"
                found.extend(sources)
        return found
    except UnknownBase as error:
        return f"a base class of {error} is not known"
    except Exception as error:  # jedi's inner API on odd values: not known
        return f"the receiver's classes could not be read ({type(error).__name__})"


def _metaclass_sources(classes: list, document: Path | None) -> list[tuple[frozenset[str], bool]] | str:
    """What a class object has from its metaclass other than `type` (`Real.register`: numbers.Real's metaclass is
    ABCMeta): the metaclass's members as jedi lists them for its instances, counted as a stub's (a metaclass's
    C part may set private attributes on the class: ABCMeta's `_abc_impl`), and the names that the sources of its
    ancestry outside the document and the trusted stubs bind; a string saying why not where one sets attributes
    dynamically (enum's EnumType)."""
    found = []
    for value in classes:
        for meta in value.get_metaclasses():
            filters = meta.get_filters(is_instance=True, include_metaclasses=False)
            found.append((frozenset(name.string_name for each in filters for name in each.values()), True))
            for current in meta.py__mro__():
                root = current.get_root_context()
                if root.py__file__() == document or root.py__name__() in TRUSTED_STUBS:
                    continue  # jedi's reading of them above suffices
                sources = class_sources(current)
                if sources is None:
                    return f"the metaclass {meta.py__name__()} sets attributes dynamically"
                found.extend(sources)
    return found


def class_sources(value) -> list[tuple[frozenset[str], bool]] | None:
    """The names the class `value`'s source and stub bind in its body (`_class_names`), each with whether it is the
    stub's; None where one of them sets attributes dynamically."""
    from jedi.inference.gradual.conversion import convert_values

    found = []
    for each in {value, *convert_values([value])}:
        file = each.get_root_context().py__file__()
        qualified = each.get_qualified_names()
        if file is None or qualified is None or not str(file).endswith((".py", ".pyi")):
            continue
        names = _class_names(str(file), tuple(qualified))
        if names is _DYNAMIC:
            return None
        if names is not None:
            found.append((names, str(file).endswith(".pyi")))
    return found


# Stubs of classes whose instances hold no attribute the stub leaves out: built-in types, typing's protocols and
# the abstract base classes.
TRUSTED_STUBS = frozenset({"builtins", "typing", "typing_extensions", "collections.abc", "_collections_abc", "abc",
                            "types", "_typeshed"})
_DYNAMIC = frozenset({"__dynamic__"})
_FILES: dict[str, tuple[float, ast.Module | None, str]] = {}
_FILES_LOCK = threading.Lock()


def _parsed(file: str) -> tuple[ast.Module | None, str]:
    """The file's tree and text, kept while its modification time stands (None: it does not parse)."""
    try:
        stamp = Path(file).stat().st_mtime
    except OSError:
        return None, ""
    with _FILES_LOCK:
        found = _FILES.get(file)
    if found is None or found[0] != stamp:
        try:
            text = Path(file).read_text(encoding="utf-8", errors="replace")
            tree = parsed(text)
        except TreeNotBuilt:
            return None, ""
        except (OSError, SyntaxError, ValueError, MemoryError, RecursionError):
            tree, text = None, ""
        found = (stamp, tree, text)
        with _FILES_LOCK:
            _FILES[file] = found
    return found[1], found[2]


def _bound(statements: list[ast.stmt]) -> set[str]:
    """The names a module's or class body's statements bind, in every branch (not inside functions or classes)."""
    names: set[str] = set()
    stack = list(statements)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
            continue
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        stack.extend(ast.iter_child_nodes(node))
    return names


def _module_names(file: str) -> frozenset[str]:
    tree, _text = _parsed(file)
    return frozenset() if tree is None else frozenset(_bound(tree.body))


def _class_names(file: str, qualified: tuple[str, ...]) -> frozenset[str] | None:
    """What the class `qualified` of `file` binds: its body's names and the attributes its methods store; None where
    the file has no such class statement, `_DYNAMIC` where it sets attributes dynamically."""
    tree, text = _parsed(file)
    if tree is None:
        return None
    body, holder = tree.body, None
    for part in qualified:
        holder = next((node for node in body if isinstance(node, ast.ClassDef) and node.name == part), None)
        if holder is None:  # defined in a branch or made at run time: read every class of that name
            holder = next((node for node in ast.walk(tree) if isinstance(node, ast.ClassDef)
                           and node.name == qualified[-1]), None)
            break
        body = holder.body
    if holder is None:
        return None
    segment = ast.get_source_segment(text, holder) or ""
    if _DYNAMIC_TEXT.search(segment) or any(
            keyword.arg == "metaclass" and not ast.unparse(keyword.value).endswith("ABCMeta")
            for keyword in holder.keywords) or any(
            not _PLAIN_DECORATOR.match("@" + ast.unparse(decorator)) for decorator in holder.decorator_list):
        return _DYNAMIC  # a metaclass may set what the class's instances hold (enum's EnumType sets _name_)
    names = _bound(holder.body)
    for node in ast.walk(holder):
        if isinstance(node, ast.Attribute) and not isinstance(node.ctx, ast.Load):
            names.add(node.attr)  # over any receiver: an attribute stored in the class may be its own
    return frozenset(names)
