"""The settings are declared once (`fimlsp.settings`, `fimlsp.decoding.options`); the server's list, the VS Code
configuration, the extension's keys, the Neovim plugin's list and docs/settings.md are made from the declaration,
and a copy that drifts from it fails here."""

import json
import re
import subprocess
import sys
from dataclasses import fields
from pathlib import Path

import pytest

from fimlsp import settings
from fimlsp.settings import files
from fimlsp.server import config

EDITORS = Path(__file__).resolve().parent.parent / "editors"
KEYS = list(config.KEYS)


def test_the_servers_settings_are_the_declared_settings_with_a_key():
    assert [name for name, _ in config.KEYS.values()] == [each.name for each in fields(config.Settings)]
    assert [each.name for each in fields(config.Settings)] == [each.name for each in settings.server_settings()]
    assert {"model", "modelServer", "device", "timeBudget", "singleLine", "maxTokens", "contextExclude"} <= set(KEYS)
    assert "server.command" not in KEYS  # the editors' own


@pytest.mark.parametrize("path", list(files.FILES), ids=lambda path: path.name)
def test_each_file_made_from_the_declaration_is_up_to_date(path):
    assert path.read_text(encoding="utf-8") == files.made(path), (
        f"{path} is not what the declaration of the settings makes: run python -m fimlsp.settings write")


def test_check_names_a_file_that_drifts(tmp_path, monkeypatch):
    copies = {}
    for path, make in files.FILES.items():
        copies[tmp_path / path.name] = make
        (tmp_path / path.name).write_text(path.read_text(encoding="utf-8"), encoding="utf-8")
    monkeypatch.setattr(files, "FILES", copies)
    assert files.stale() == []
    drifted = tmp_path / "package.json"
    drifted.write_text(drifted.read_text().replace('"default": 128', '"default": 64'))
    assert files.stale() == [drifted]
    done = subprocess.run([sys.executable, "-m", "fimlsp.settings", "check"], capture_output=True, text=True)
    assert (done.returncode, done.stdout) == (0, "")  # the repository's own files


def test_vscode_contributes_every_setting_with_the_servers_default_choices_and_bounds():
    package = json.loads((EDITORS / "vscode" / "package.json").read_text())
    properties = package["contributes"]["configuration"]["properties"]
    assert [key.removeprefix("fimlsp.") for key in properties if key != "fimlsp.server.command"] == KEYS
    assert properties["fimlsp.server.command"]["default"] == ["fimlsp", "serve"]
    for each in fields(config.Settings):
        declared = properties["fimlsp." + each.metadata["key"]]
        assert declared["default"] == each.default, each.name
        assert tuple(declared.get("enum", ())) == each.metadata["choices"], each.name
        bounds = each.metadata["bounds"]
        schema = {word: declared[word] for word in ("minimum", "exclusiveMinimum", "maximum") if word in declared}
        assert schema == (bounds.schema() if bounds is not None else {}), each.name
        if bounds is not None:  # a number that may be none (searchBudget: the clock bounds the searches) or not
            kind = "integer" if bounds.integer else "number"
            assert declared["type"] == (kind if each.default is not None else [kind, "null"]), each.name
    # what a workspace may not choose: the program that runs, the model, where the code is sent
    restricted = package["capabilities"]["untrustedWorkspaces"]["restrictedConfigurations"]
    assert restricted == ["fimlsp.server.command", "fimlsp.model", "fimlsp.modelServer"]
    assert all(properties[key]["scope"] == "machine" for key in restricted)


def test_vscode_sends_every_setting_under_its_key():
    source = (EDITORS / "vscode" / "src" / "extension.ts").read_text()
    assert 'import { SERVER_SETTINGS } from "./settings";' in source and "const SERVER_SETTINGS" not in source
    listed = re.search(r"export const SERVER_SETTINGS = \[(.*?)\] as const",
                       (EDITORS / "vscode" / "src" / "settings.ts").read_text(), re.DOTALL)
    assert listed is not None
    assert re.findall(r'"(\w+)"', listed.group(1)) == KEYS


def test_neovim_lists_every_setting_and_starts_the_declared_command():
    source = (EDITORS / "nvim" / "lua" / "fimlsp" / "init.lua").read_text()
    listed = re.search(r"-- fimlsp settings: (.*)", source)
    assert listed is not None
    assert [word.strip() for word in listed.group(1).split(",")] == KEYS
    assert '  cmd = { "fimlsp", "serve" }, -- the server command' in source


def test_the_reference_has_a_row_for_every_setting_and_every_flag_of_the_commands():
    reference = (Path(__file__).resolve().parent.parent / "docs" / "settings.md").read_text()
    rows = re.findall(r"^\| `([\w.-]+)` \| ([^|]*) \|", reference, re.MULTILINE)
    assert [key for key, _ in rows if not key.startswith("--")] == ["server.command", *KEYS]
    documented = {key for key, _ in rows} | {second.strip("`") for _, second in rows}
    for command in ("complete", "serve", "eval"):
        assert {settings.flag(name) for name in settings.offered_by(command)} <= documented, command
