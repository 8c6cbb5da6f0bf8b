"""Repository context: declarations from other files, recent chunks of open documents, lexical search, all within
a budget and the workspace's bounds, none of it on the keystroke's path."""

import ast
import os
import threading
from pathlib import Path

import pytest

from fimlsp.context import RepositoryContext, effective
from fimlsp.context.declarations import Use, render, uses_near
from fimlsp.context.recent import RecentChunks
from fimlsp.context.search import MAX_SCANNED_POSTINGS, SearchIndex
from fimlsp.syntax_trees import parsed
from fimlsp.workspace import Workspace

MODELS = '''"""Models."""
from dataclasses import dataclass

LIMIT = 10
TABLE = {"a": 1, "b": 2, "c": 3, "d": 4, "e": 5, "f": 6, "g": 7, "h": 8, "i": 9, "j": 10}


@dataclass
class Order:
    """An order someone placed.

    More words nobody needs in a prompt."""
    id: int
    total: float = 0.0

    def add(self, amount: float) -> "Order":
        """Add an amount."""
        self.total += amount
        return self

    def _private(self):
        pass


class Cart:
    def __init__(self, owner):
        self.owner = owner
        self.items = []

    def checkout(self, *, pay=True):
        return Order(1)


def make_order(customer_id, total=0.0):
    """Make an order for a customer."""
    return Order(customer_id, total)
'''

USE = '''from .models import Order, make_order, LIMIT
from . import models
from .secret import TOKEN
from .generated import BUILT


def place(customer):
    cart = models.Cart(customer)
    order = make_order(customer.id, LIMIT)
    order.add(TOKEN)
    BUILT(order)
    return '''


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


@pytest.fixture
def project(tmp_path):
    root = tmp_path / "proj"
    write(root / "pyproject.toml", "")
    write(root / "pkg" / "__init__.py", "")
    write(root / "pkg" / "models.py", MODELS)
    write(root / ".gitignore", "pkg/generated.py\n")
    write(root / "pkg" / "generated.py", "def BUILT(order):\n    'generated, ignored'\n")
    write(tmp_path / "outside" / "secret.py", "TOKEN = 'hunter2-outside-the-root'\n")
    os.symlink(tmp_path / "outside" / "secret.py", root / "pkg" / "secret.py")
    use = write(root / "pkg" / "use.py", USE)
    return root, use


def texts(snippets) -> str:
    return "\n".join(f"# {snippet.path}\n{snippet.text}" for snippet in snippets)


def test_declarations_of_names_used_near_the_cursor_come_from_their_files(project):
    root, use = project
    context = RepositoryContext(Workspace([root]), environment=())
    snippets = context.gather(use, USE, "", "file", budget=4000, wait=True)
    assert [snippet.path for snippet in snippets] == ["pkg/models.py"]
    shown = snippets[0].text
    assert "@dataclass\nclass Order:\n    \"\"\"An order someone placed.\"\"\"\n    id: int\n    total: float = 0.0\n" \
           "    def add(self, amount: float) -> 'Order': ...\n" in shown
    assert "_private" not in shown and "More words" not in shown
    assert "class Cart:\n    def __init__(self, owner):\n        self.owner = owner\n        self.items = []\n" \
           "    def checkout(self, *, pay=True): ...\n" in shown
    assert 'def make_order(customer_id, total=0.0):\n    """Make an order for a customer."""\n    ...\n' in shown
    assert "LIMIT = 10\n" in shown


def test_nothing_outside_the_root_or_ignored_is_read(project):
    root, use = project
    context = RepositoryContext(Workspace([root]), environment=())
    shown = texts(context.gather(use, USE, "", "workspace", budget=100_000, wait=True))
    assert "hunter2" not in shown and "generated, ignored" not in shown
    assert "return '" not in shown  # the document itself is no source: its text is in the prompt already


def test_off_gives_nothing_and_the_budget_holds(project):
    root, use = project
    context = RepositoryContext(Workspace([root]), environment=())
    assert context.gather(use, USE, "", "off", budget=4000, wait=True) == []
    small = context.gather(use, USE, "", "workspace", budget=120, wait=True)
    assert sum(len(snippet.text) for snippet in small) <= 120


def test_a_completion_never_resolves_on_its_own_thread(project):
    root, use = project
    context = RepositoryContext(Workspace([root]), environment=())
    context.start()
    try:
        assert context.settle()
        first = context.gather(use, USE, "", "file", budget=4000)
        assert context.declarations.resolutions == 0  # asked of the background, not done here
        assert first == []
        assert context.settle()
        assert context.declarations.resolutions > 0
        resolved = context.declarations.resolutions
        second = context.gather(use, USE, "", "file", budget=4000)
        assert "class Order" in texts(second)
        assert context.declarations.resolutions == resolved
    finally:
        context.close()


def test_a_changed_file_is_rendered_again(project):
    root, use = project
    context = RepositoryContext(Workspace([root]), environment=())
    context.start()
    try:
        context.gather(use, USE, "", "file", budget=4000)
        context.settle()
        context.changed(root / "pkg" / "models.py", MODELS.replace("LIMIT = 10", "LIMIT = 99"), line=3)
        context.settle()
        assert "LIMIT = 99" in texts(context.gather(use, USE, "", "file", budget=4000))
    finally:
        context.close()


def test_a_tree_other_threads_kept_from_being_built_is_not_kept_as_the_file_s(project, monkeypatch):
    """The parses of models.py lost to other threads' conversions (gh-106905): no declarations this time, and the
    next completion's reading builds its tree."""
    root, use = project
    context = RepositoryContext(Workspace([root]), environment=())
    losing, parse = [True], ast.parse

    def losing_models(source, *args, **kwargs):
        if source == MODELS and losing[0]:
            raise SystemError("AST constructor recursion depth mismatch (before=36, after=301)")
        return parse(source, *args, **kwargs)

    monkeypatch.setattr(ast, "parse", losing_models)
    assert context.gather(use, USE, "", "file", budget=4000, wait=True) == []
    losing[0] = False
    assert "class Order" in texts(context.gather(use, USE, "", "file", budget=4000, wait=True))
    losing[0] = True  # the file changed, and its new tree is kept from being built too
    context.declarations.changed(root / "pkg" / "models.py")
    assert context.gather(use, USE, "", "file", budget=4000, wait=True) == []
    losing[0] = False
    assert "class Order" in texts(context.gather(use, USE, "", "file", budget=4000, wait=True))


def test_recent_chunks_of_other_documents_come_newest_first(project):
    root, use = project
    context = RepositoryContext(Workspace([root]), environment=())
    notes = root / "pkg" / "notes.py"
    context.changed(notes, "".join(f"note_{n} = {n}\n" for n in range(200)), line=150)
    context.changed(use, USE, line=5)
    snippets = context.gather(use, USE, "", "workspace", budget=100_000, wait=True)
    paths = [snippet.path for snippet in snippets]
    assert "pkg/notes.py" in paths and "pkg/use.py" not in paths
    chunk = snippets[paths.index("pkg/notes.py")].text
    assert chunk.startswith("note_118 = 118\n") and chunk.count("\n") == 64
    assert paths.index("pkg/models.py") < paths.index("pkg/notes.py")  # declarations first


def test_near_duplicate_chunks_are_evicted():
    chunks = RecentChunks(capacity=3)
    text = "".join(f"line_{n} = {n}\n" for n in range(100))
    chunks.add(Path("/a.py"), text, 50)
    chunks.add(Path("/a.py"), text.replace("line_40 = 40", "line_40 = 41"), 50)  # 63 of 65 lines shared
    assert len(chunks.chunks()) == 1
    chunks.add(Path("/a.py"), text, 10)
    chunks.add(Path("/b.py"), text, 90)
    chunks.add(Path("/c.py"), "other = 1\n", 0)
    assert [chunk.path for chunk in chunks.chunks()] == [Path("/c.py"), Path("/b.py"), Path("/a.py")]
    assert [chunk.path for chunk in chunks.chunks(excluding=Path("/b.py"))] == [Path("/c.py"), Path("/a.py")]


def test_search_finds_the_chunk_like_the_code_and_leaves_the_document_out():
    files = {Path(f"/w/m{n}.py"): "".join(f"def filler_{n}_{k}(x):\n    return x\n" for k in range(40))
             for n in range(20)}
    files[Path("/w/target.py")] = ("def unrelated():\n    pass\n" * 30
                                   + "def fetch_invoice(ledger, invoice_id):\n    return ledger.lookup(invoice_id)\n")
    files[Path("/w/current.py")] = "ledger invoice_id fetch_invoice lookup\n"
    index = SearchIndex(files.get)
    index.build(files)
    hits = index.search("total = ledger.lookup(invoice_id)", excluding=Path("/w/current.py"))
    assert hits[0].path == Path("/w/target.py") and "def fetch_invoice" in hits[0].text
    assert all(hit.path != Path("/w/current.py") for hit in hits)
    index.remove(Path("/w/target.py"))
    assert all(hit.path != Path("/w/target.py") for hit in index.search("ledger.lookup(invoice_id)"))


def test_search_work_is_bounded_on_a_large_index():
    files = {Path(f"/w/f{n}.py"): f"import common_helper\nvalue_{n % 50} = common_helper.run(shared_{n % 7})\n"
             for n in range(5000)}
    index = SearchIndex(files.get)
    index.build(files)
    index.search("x = common_helper.run(shared_3) + value_7 + value_8 + value_9 + shared_4 + shared_5")
    assert 0 < index.scanned <= MAX_SCANNED_POSTINGS


def test_a_query_does_not_wait_for_the_index_being_built():
    release = threading.Event()
    files = {Path(f"/w/f{n}.py"): f"name_{n} = helper_{n}()\n" for n in range(10)}

    def slow_read(path):
        if path == Path("/w/f5.py"):
            release.wait(10)
        return files[path]

    index = SearchIndex(slow_read)
    builder = threading.Thread(target=index.build, args=(files,))
    builder.start()
    try:
        while len(index) < 5:
            pass
        hits = index.search("y = helper_2()")  # answered while the build waits on a file
        assert [hit.path for hit in hits] == [Path("/w/f2.py")]
        assert builder.is_alive()
    finally:
        release.set()
        builder.join()
    assert len(index) == 10


def test_uses_near_the_cursor_leave_out_the_name_being_typed_and_comments():
    left = "".join(f"far_{n} = {n}\n" for n in range(100)) + "import os\n# mention Secret\nx = os.path.join(a, 'Quoted')\ny = compu"
    uses = uses_near(left, "ted(after)\nbelow_1\n" + "".join(f"far_below_{n}\n" for n in range(20)))
    chains = [use.chain for use in uses]
    assert "compu" not in chains and "computed" not in chains and "Secret" not in chains and "Quoted" not in chains
    assert chains[:3] == ["y", "after", "x"] and "os.path.join" in chains and "below_1" in chains
    assert "far_72" not in chains and "far_73" in chains  # 30 lines above
    assert "far_below_8" in chains and "far_below_9" not in chains  # 10 below
    assert next(use for use in uses if use.chain == "x") == Use("x", 103, 0, 1)  # 1-based line, as jedi counts


def test_render_shortens_long_values_and_finds_members_classes():
    
    tree = parsed(MODELS)
    assert render(tree, "TABLE") == ("TABLE", "TABLE = ...")
    assert render(tree, "Order.add")[0] == "Order"
    assert render(tree, "missing") is None


def test_auto_follows_the_window():
    assert effective("auto", 512) == "off"
    assert effective("auto", 8192) == "workspace"
    assert effective("file", 512) == "file"


def test_the_index_follows_an_open_document_s_unsaved_text(project):
    root, use = project
    context = RepositoryContext(Workspace([root]), environment=())
    context.start()
    try:
        assert context.settle() and context.indexed.is_set()
        query_left = "def caller():\n    value = reticulate_splines(grid)\n    grid.refresh()\n\n"
        assert context.index.search(query_left) == []
        notes = root / "pkg" / "notes.py"
        context.opened(notes, "def reticulate_splines(grid):\n    return grid.refresh()\n")
        assert context.settle()
        hits = context.index.search(query_left, excluding=use)
        assert [hit.path for hit in hits] == [notes.resolve()]
        context.closed(notes)  # never saved: it leaves the index with the editor's copy
        assert context.settle()
        assert context.index.search(query_left) == []
    finally:
        context.close()
