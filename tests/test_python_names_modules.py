"""The name judge refuses an import of a module that exists nowhere (issue 49): `import pyflask`,
`from uvic.config import Config`, a submodule of a plain module (`__future__.id`), as they are written and on the
whole file; never one that may exist (`os.anything`: `os` writes `sys.modules`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.test_python_workspace_judges import PYTHON, accepts, project  # noqa: F401 (a fixture)


@pytest.mark.parametrize("middle", ["import pyflask", "import os, pyflask", "import os.path, pyflask as f",
                                    "from uvic.config import Config", "from .nothing import x",
                                    "from pkg.nowhere import x", "import json.decoderx",
                                    "from __future__.id import x", "import json.decoder.scanner"])
def test_an_import_of_a_module_that_exists_nowhere_is_refused(project, middle):
    place = (str(project / "pkg" / "main.py"), str(project))
    assert not accepts("import sys\n", middle, "\n\nprint(sys)\n", place)


@pytest.mark.parametrize("middle", ["import os", "import os.path as p, json", "from uvicorn.config import Config",
                                    "from .util import helper", "from . import util", "from pkg.sub import helper",
                                    "import pkg.util", "from json import decoder", "import os.anything"])
def test_an_import_of_a_module_that_may_exist_is_accepted(project, middle):
    place = (str(project / "pkg" / "main.py"), str(project))
    assert accepts("import sys\n", middle, "\n\nprint(sys)\n", place)


def test_the_module_is_refused_as_it_is_written(project):
    from tests.test_python_workspace_judges import judged

    place = (str(project / "pkg" / "main.py"), str(project))
    state = judged("import sys\n", "\n\nprint(sys)\n", place)
    assert state.feed("import pyf") is not None  # pyflakes
    assert state.feed("import pyflu") is None
    assert state.feed("from uvic") is not None and state.feed("from uvicx") is None
    assert state.feed("from uvicorn.con") is not None and state.feed("from uvicorn.conx") is None
    assert state.feed("from os imp") is not None  # the keyword, not a module


def test_imports_that_may_not_run_or_the_file_names_are_not_judged(project):
    place = (str(project / "pkg" / "main.py"), str(project))
    right = "\n\nprint(sys)\n"
    assert accepts("import sys\n", "if sys.version_info < (3, 11):\n    import tomli", right, place)
    assert accepts("import sys\n", "try:\n    import pyflask\nexcept ImportError:\n    pass", right, place)
    assert accepts("import sys\n", "import zttp", "\n\nprint(sys, zttp.Request)\n", place)
    assert accepts("import sys\nsys.path.insert(0, 'lib')\n", "import pyflask", right, place)
    assert not accepts("import sys\nimport pyf", "lask", right, place)  # begun in the left, as pyflakes begins
    assert accepts("import sys\nimport zzq", "x", right, place)  # begun in the left as no module here: the user's
    assert accepts("import sys\nfrom pyflask ", "import Request", right, place)
    assert accepts("import sys\nfrom pyflask.", "app import Request", right, place)
    assert accepts("import sys\n", "import pyflask", right, (None, None))  # no place: nothing judged


@pytest.mark.parametrize("left", ["from pkg.nowhere_to_read import *\nimport sys\n",  # a star import not readable
                                  "import sys\nvars()['late'] = 1\n"])  # names set at run time
def test_a_file_whose_names_cannot_be_known_still_has_its_imports_judged(project, left):
    """Such a file relaxes the name judge (any name may be bound), but not whether a module exists: held out,
    gguf's `__init__` (star imports of its own modules) took `from .gguf_reas import *` and `from .config import *`,
    modules it does not have."""
    place = (str(project / "pkg" / "main.py"), str(project))
    right = "\n\nprint(sys)\n"
    guarantee, reason = PYTHON.judging_names(PYTHON.constrain(left, right), left, right, *place)
    assert reason.startswith("names not judged")

    def accepted(middle: str) -> bool:
        state = guarantee.state.feed(middle)
        ended = state is not None and state.complete
        assert ended == PYTHON.binds_names(left, middle, right, *place)
        return ended

    assert accepted("print(anything_at_all)")  # the names are not judged
    assert accepted("from .util import helper")
    assert not accepted("from .nothing import x")
    assert not accepted("import pyflask")


@pytest.mark.parametrize("middle, imported", [("from .", False), ("from .util ", True), ("from pkg ", False),
                                               ("from pkg.util ", True), ("from pkg.sub ", True)])
def test_where_the_middle_writes_the_module_the_right_contexts_names_must_be_its(project, middle, imported):
    """The right context's `import helper` names what the user wrote; the module the middle writes must have it
    (held out: `from .` before fastapi's `import GZipMiddleware`, which `fastapi.middleware` does not define)."""
    place = (str(project / "pkg" / "main.py"), str(project))
    assert accepts("import sys\n", middle, "import helper\n\nprint(sys, helper)\n", place) == imported
