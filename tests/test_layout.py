"""The package's layout rules (issue 47), read from the source with `ast`: no import cycle between modules or
between fimlsp's subpackages, the core knows nothing of fimlsp, nothing above the language seam imports the Python
package, modules and functions a reader takes in whole, and tests and benchmarks share only `harness`.

Imports are counted wherever they stand, at module level or inside a function (a deferred import is still a
dependency, and the cycles this guards against hid in functions), except under `if TYPE_CHECKING:`.
"""

from __future__ import annotations

import ast
from functools import lru_cache
from pathlib import Path

from fimlsp.syntax_trees import parsed

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("fimlsp", "earley")
ABOVE_THE_SEAM = ("decoding", "model", "server", "commands", "evaluation", "training", "context")
GRAMMAR_TABLES = {"earley/tables.py", "fimlsp/python/lexemes.py"}
MAX_MODULE_LINES = 450
LONG_FUNCTION_LINES = 80
MAX_LONG_FUNCTIONS = 4
MAX_FUNCTION_LINES = 110


@lru_cache(maxsize=1)
def modules() -> dict[str, Path]:
    """Dotted name of every module of the packages, to its file."""
    found = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def _type_checking_only(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _import_nodes(node: ast.AST):
    """The import statements under `node`, at any depth, leaving out those under `if TYPE_CHECKING:`."""
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        yield node
    children = node.orelse if isinstance(node, ast.If) and _type_checking_only(node) else ast.iter_child_nodes(node)
    for child in children:
        yield from _import_nodes(child)


@lru_cache(maxsize=None)
def imports(name: str) -> frozenset[str]:
    """The modules of the packages that module `name` imports: `from a.b import c` counts `a.b.c` where that is a
    module and `a.b` otherwise; a package's `__init__` counts only where it is named itself."""
    path = modules()[name]
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    known = modules()
    found = set()
    for node in _import_nodes(parsed(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name in known)
            continue
        base = node.module or ""
        if node.level:
            anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
            base = ".".join(anchor + ([base] if base else []))
        for alias in node.names:
            if f"{base}.{alias.name}" in known:
                found.add(f"{base}.{alias.name}")
            elif base in known:
                found.add(base)
    found.discard(name)
    return frozenset(found)


def subpackage(name: str) -> str:
    """The package's own subpackage that module `name` belongs to (`fimlsp.model` for `fimlsp.model.wire`)."""
    parts = name.split(".")
    return ".".join(parts[:2]) if len(parts) > 2 or (ROOT / Path(*parts) / "__init__.py").exists() else name


def subpackage_imports(package: str) -> frozenset[str]:
    return frozenset(subpackage(imported) for name in modules() if subpackage(name) == package
                     for imported in imports(name)) - {package}


def import_cycles(nodes, edges) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles = []

    def visit(name: str) -> None:
        index[name] = low[name] = len(index)
        stack.append(name)
        on_stack.add(name)
        for other in sorted(edges(name)):
            if other not in index:
                visit(other)
                low[name] = min(low[name], low[other])
            elif other in on_stack:
                low[name] = min(low[name], index[other])
        if low[name] == index[name]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == name:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for name in sorted(nodes):
        if name not in index:
            visit(name)
    return cycles


def functions(tree: ast.AST):
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield node


def _relative(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def test_the_imports_are_read_as_python_runs_them():
    """The walker's own check: it sees a deferred import, a relative one and a submodule named in `from`."""
    assert "fimlsp.python.quotient" in imports("fimlsp")  # inside __getattr__
    assert "earley.grammar" in imports("earley")
    assert all(imports(name) <= set(modules()) for name in modules())


def test_no_import_cycle():
    cycles = import_cycles(modules(), imports)
    assert not cycles, cycles


def test_no_import_cycle_between_subpackages():
    """`fimlsp.training` may use `fimlsp.evaluation` or the other way round, not both."""
    cycles = import_cycles({subpackage(name) for name in modules()}, subpackage_imports)
    assert not cycles, cycles


def test_the_core_imports_nothing_of_fimlsp():
    offenders = {name: sorted(imported for imported in imports(name) if imported.split(".")[0] == "fimlsp")
                 for name in modules() if name.startswith("earley")}
    offenders = {name: found for name, found in offenders.items() if found}
    assert not offenders, offenders


def test_nothing_above_the_language_seam_imports_the_python_package():
    """Only the language registry (`fimlsp/language.py`) picks Python; decoding, the model, the server, the
    commands, evaluation, training and context reach it through `fimlsp.language`."""
    offenders = {}
    for name in modules():
        parts = name.split(".")
        if parts[0] == "fimlsp" and len(parts) > 1 and parts[1] in ABOVE_THE_SEAM:
            found = sorted(imported for imported in imports(name) if imported.startswith("fimlsp.python"))
            if found:
                offenders[name] = found
    assert not offenders, offenders


def test_no_module_is_longer_than_a_reader_takes_in():
    long = {}
    for path in modules().values():
        lines = len(path.read_text(encoding="utf-8").splitlines())
        if lines > MAX_MODULE_LINES and _relative(path) not in GRAMMAR_TABLES:
            long[_relative(path)] = lines
    assert not long, "; ".join(f"{path}: {lines} lines" for path, lines in sorted(long.items()))


def test_few_functions_are_long_and_none_very_long():
    """A function over 80 lines is a hot loop kept whole on purpose (its docstring says so); at most four."""
    lengths = {}
    for path in modules().values():
        for function in functions(parsed(path.read_text(encoding="utf-8"))):
            length = function.end_lineno - function.lineno + 1
            if length > LONG_FUNCTION_LINES:
                lengths[f"{_relative(path)}:{function.name}"] = length
    very_long = {name: length for name, length in lengths.items() if length > MAX_FUNCTION_LINES}
    assert not very_long, "; ".join(f"{name}: {lines} lines" for name, lines in sorted(very_long.items()))
    assert len(lengths) <= MAX_LONG_FUNCTIONS, "; ".join(f"{name}: {lines} lines" for name, lines in sorted(lengths.items()))


def top_level_imports(path: Path) -> set[str]:
    """The top-level packages that the file at `path` imports (`tests` for `from tests.oracles import x`)."""
    found = set()
    for node in _import_nodes(parsed(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif not node.level and node.module:
            found.add(node.module.split(".")[0])
    return found


def test_tests_and_benchmarks_share_only_the_harness():
    """Tests do not import benchmarks nor benchmarks tests; what both need is in `harness`, which imports neither
    (and the package imports none of the three)."""
    forbidden = {"tests": {"benchmarks"}, "benchmarks": {"tests"}, "harness": {"tests", "benchmarks"},
                 "fimlsp": {"tests", "benchmarks", "harness"}, "earley": {"tests", "benchmarks", "harness"}}
    crossings = {_relative(path): sorted(top_level_imports(path) & banned)
                 for folder, banned in forbidden.items() for path in sorted((ROOT / folder).rglob("*.py"))}
    crossings = {path: found for path, found in crossings.items() if found}
    assert not crossings, crossings
