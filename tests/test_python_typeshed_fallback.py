"""typeshed's stubs of the distributions an environment lacks (`fimlsp.python.typeshed_fallback`): a distribution's
stub folder is on the bases' path only where none of its top-level modules is importable, and none where what the
environment imports is not known."""

from __future__ import annotations

from pathlib import Path

from fimlsp.python.environment import Importable
from fimlsp.python.typeshed_fallback import fallback_folders, typeshed_stubs


def _names(folders: tuple[str, ...]) -> set[str]:
    return {Path(folder).name for folder in folders}


def test_a_distribution_the_environment_has_keeps_its_stub_off_the_path():
    assert (typeshed_stubs() / "gunicorn" / "gunicorn").is_dir()  # jedi's copy of typeshed holds it
    lacking = _names(fallback_folders(Importable(names=("os", "sys"))))
    assert {"gunicorn", "requests", "six"} <= lacking
    having = _names(fallback_folders(Importable(names=("gunicorn", "os", "six", "sys"))))
    assert "gunicorn" not in having and "six" not in having and "requests" in having


def test_an_environment_whose_imports_are_not_known_gets_no_stub():
    assert fallback_folders(Importable(unknown="a sitecustomize runs code")) == ()
