"""The server's settings are one list (`fimlsp.server.config.Settings`); the editors' copies must match it."""

import json
import re
from dataclasses import fields
from pathlib import Path

from fimlsp.server import config

EDITORS = Path(__file__).resolve().parent.parent / "editors"
KEYS = list(config.KEYS)


def test_the_keys_come_from_the_settings_fields():
    assert [name for name, _ in config.KEYS.values()] == [each.name for each in fields(config.Settings)]
    assert KEYS[:3] == ["model", "device", "mode"] and "maxTokens" in KEYS


def test_vscode_contributes_every_setting_with_the_servers_default_choices_and_bounds():
    properties = json.loads((EDITORS / "vscode" / "package.json").read_text())["contributes"]["configuration"][
        "properties"]
    contributed = [key.removeprefix("fimlsp.") for key in properties if key != "fimlsp.server.command"]
    assert contributed == KEYS
    for each in fields(config.Settings):
        declared = properties["fimlsp." + each.metadata["key"]]
        assert declared["default"] == each.default, each.name
        assert tuple(declared.get("enum", ())) == each.metadata["choices"], each.name
        bounds = each.metadata["bounds"]
        schema = {word: declared[word] for word in ("minimum", "exclusiveMinimum", "maximum") if word in declared}
        assert schema == (bounds.schema() if bounds is not None else {}), each.name
        if bounds is not None:
            assert declared["type"] == ("integer" if bounds.integer else "number"), each.name


def test_vscode_sends_every_setting():
    source = (EDITORS / "vscode" / "src" / "extension.ts").read_text()
    listed = re.search(r"const SERVER_SETTINGS = \[(.*?)\] as const", source, re.DOTALL)
    assert listed is not None
    assert re.findall(r'"(\w+)"', listed.group(1)) == KEYS


def test_neovim_documents_every_setting():
    source = (EDITORS / "nvim" / "lua" / "fimlsp" / "init.lua").read_text()
    listed = re.search(r"-- fimlsp settings: (.*)", source)
    assert listed is not None
    assert [word.strip() for word in listed.group(1).split(",")] == KEYS
