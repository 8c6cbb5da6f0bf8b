"""The code attrs compiles for lsprotocol's classes comes from the user's cache folder at the server's second start
(`fimlsp.server.attrs_code`): counted in a fresh interpreter through Python's `compile` audit events."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

# Imports the server's module (and lsprotocol's types and pygls with it) and prints how many of the sources attrs
# writes for their classes were compiled, and whether the types work: a position structured and unstructured.
IMPORT_THE_SERVER = """
import json, sys
compiled = []
sys.addaudithook(lambda event, args: event == "compile" and str(args[1]).startswith("<attrs generated")
                 and (" lsprotocol." in args[1] or " pygls." in args[1]) and compiled.append(args[1]))
import fimlsp.server.server
from lsprotocol import converters, types
converter = converters.get_converter()
position = converter.structure({"line": 3, "character": 4}, types.Position)
print(json.dumps({"compiled": len(compiled), "position": converter.unstructure(position), "repr": repr(position),
                  "equal": position == types.Position(line=3, character=4)}))
"""


def start(cache: Path) -> dict:
    ran = subprocess.run([sys.executable, "-c", IMPORT_THE_SERVER], capture_output=True, text=True, timeout=120,
                         env={**os.environ, "XDG_CACHE_HOME": str(cache)})
    assert ran.returncode == 0, ran.stderr[-2000:]
    return json.loads(ran.stdout)


def cache_files(cache: Path) -> list[Path]:
    return sorted((cache / "fimlsp").glob("attrs-code-lsprotocol-*.marshal"))


def test_the_second_start_compiles_none_of_lsprotocols_attrs_code(tmp_path):
    first, second = start(tmp_path), start(tmp_path)
    assert first["compiled"] > 500, first  # about 570 classes, each with methods to compile
    assert second["compiled"] == 0, second
    assert second == {**first, "compiled": 0}
    assert second["position"] == {"line": 3, "character": 4} and second["equal"], second
    assert second["repr"] == "3:4", second  # lsprotocol's own __repr__, kept


@pytest.mark.slow  # three interpreters importing lsprotocol; the first test keeps one cached start fast
def test_a_damaged_cache_is_compiled_anew_and_replaced(tmp_path):
    start(tmp_path)
    [path] = cache_files(tmp_path)
    path.write_bytes(path.read_bytes()[:1000])  # a write cut short
    assert start(tmp_path)["compiled"] > 500
    assert start(tmp_path)["compiled"] == 0
    assert cache_files(tmp_path) == [path]


@pytest.mark.slow
def test_a_cache_folder_that_cannot_be_written_leaves_the_server_starting_as_before(tmp_path):
    blocked = tmp_path / "not-a-folder"
    blocked.write_text("")  # $XDG_CACHE_HOME/fimlsp cannot be made inside a file
    assert start(blocked)["compiled"] > 500
    assert start(blocked)["compiled"] > 500
