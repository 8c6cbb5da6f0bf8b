"""The files made from the declaration of the settings (`fimlsp.settings`), as pylsp makes its CONFIGURATION.md from
its schema: the VS Code extension's `contributes.configuration`, list of keys and README table, the Neovim plugin's
defaults and docs/settings.md. `python -m fimlsp.settings write` writes them; `python -m fimlsp.settings check`
names those that differ from what the declaration makes, as tests/test_settings_list.py does.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import Field
from pathlib import Path
from typing import Any

from fimlsp.settings import DECLARED, editors_only, flag, offered_by, server_settings

ROOT = Path(__file__).resolve().parents[2]
PACKAGE_JSON = ROOT / "editors" / "vscode" / "package.json"
EXTENSION_KEYS = ROOT / "editors" / "vscode" / "src" / "settings.ts"
EXTENSION_README = ROOT / "editors" / "vscode" / "README.md"
NEOVIM = ROOT / "editors" / "nvim" / "lua" / "fimlsp" / "init.lua"
REFERENCE = ROOT / "docs" / "settings.md"
SECTION = "fimlsp"
_JSON_TYPES = {"int": "integer", "float": "number", "bool": "boolean", "str": "string", "tuple[str, ...]": "array"}
USER_ONLY = "User settings only: a workspace cannot set it."


def editor_settings() -> list[Field]:
    """Every setting an editor shows: its own (the server command) first, then the server's."""
    return [each for each in DECLARED.values() if each.metadata["setting"] and editors_only(each)] + server_settings()


def _key(each: Field) -> str:
    return f"{SECTION}.{each.metadata['setting']}"


def _sentence(each: Field) -> str:
    """The help as a sentence; one that starts with a value (`block: …`) keeps the value as it is written."""
    text = each.metadata["help"]
    if text.split(":")[0] not in each.metadata["choices"]:
        text = text[0].upper() + text[1:]
    return text if text.endswith(".") else text + "."


def _description(each: Field) -> str:
    """The help as an editor shows it: a sentence, and whether a workspace may set it."""
    return _sentence(each) + (f" {USER_ONLY}" if each.metadata.get("machine") else "")


def json_schema(each: Field) -> dict[str, Any]:
    """The setting as a VS Code configuration property (JSON Schema), with the editors' default."""
    meta = each.metadata
    kind, default = _JSON_TYPES[each.type.removesuffix(" | None")], meta["editors"]
    schema: dict[str, Any] = {"type": kind if default is not None else [kind, "null"]}
    if kind == "array":
        schema["items"], default = {"type": "string"}, list(default)
    if meta["choices"]:
        schema["enum"] = list(meta["choices"])
    if meta["editors_bounds"] is not None:
        schema.update(meta["editors_bounds"].schema())
    schema["default"] = default
    if meta.get("machine"):
        schema["scope"] = "machine"
    schema["description"] = _description(each)
    return schema


def package_json(current: str) -> str:
    """`current`, the extension's package.json, with its configuration and its settings that a workspace may not set
    made from the declaration."""
    package = json.loads(current)
    machine = [_key(each) for each in editor_settings() if each.metadata.get("machine")]
    package["capabilities"]["untrustedWorkspaces"] = {
        "supported": "limited",
        "description": "In Restricted Mode fimlsp runs the server command and the model from your user settings; a "
                       f"workspace cannot set {', '.join(machine[:-1])} or {machine[-1]}, trusted or not.",
        "restrictedConfigurations": machine}
    package["contributes"]["configuration"] = {
        "title": SECTION, "properties": {_key(each): json_schema(each) for each in editor_settings()}}
    return json.dumps(package, indent=2, ensure_ascii=False) + "\n"


def extension_keys(_current: str) -> str:
    keys = "".join(f'  "{each.metadata["setting"]}",\n' for each in server_settings())
    return ("// Made by `python -m fimlsp.settings write` from the declaration of fimlsp's settings\n"
            "// (fimlsp/settings): do not edit. The settings the language server takes, in its order, sent under\n"
            "// these keys.\n"
            f"export const SERVER_SETTINGS = [\n{keys}] as const;\n")


def extension_readme(current: str) -> str:
    """`current`, the extension's README, with its table of the settings made from the declaration."""
    rows = "".join(f"| `{_key(each)}` | {_cell(_default(each.metadata))} | {_cell(_description(each))} |\n"
                   for each in editor_settings())
    table = f"| setting | default | meaning |\n| --- | --- | --- |\n{rows}"
    made, count = re.subn(r"(?s)(<!-- the settings: made by .*? -->\n).*?(<!-- end of the settings -->)",
                          lambda found: found.group(1) + table + found.group(2), current)
    if count != 1:
        raise ValueError(f"{EXTENSION_README}: expected the settings' table between its two markers")
    return made


def neovim_plugin(current: str) -> str:
    """`current`, the plugin's init.lua, with its server command's default and its list of the server's settings
    made from the declaration."""
    command = ", ".join(f'"{word}"' for word in DECLARED["server_command"].metadata["editors"])
    keys = ", ".join(each.metadata["setting"] for each in server_settings())
    current, commands = re.subn(r"(?m)^(  cmd = \{ ).*?( \}, -- the server command)$", rf"\g<1>{command}\g<2>",
                                current)
    current, lists = re.subn(r"(?m)^(  settings = \{\}, -- fimlsp settings: ).*$", rf"\g<1>{keys}", current)
    if (commands, lists) != (1, 1):
        raise ValueError(f"{NEOVIM}: expected one `cmd = {{ … }}, -- the server command` line and one "
                         "`settings = {}, -- fimlsp settings: …` line")
    return current


def _code(value: Any) -> str:
    return f"`{json.dumps(list(value) if isinstance(value, tuple) else value)}`"


def _default(meta) -> str:
    default = meta["editors"]
    return (meta.get("unset") or "none") if default is None else _code(default)


def _values(each: Field) -> str:
    meta = each.metadata
    if meta["choices"]:
        return ", ".join(f"`{choice}`" for choice in meta["choices"])
    bounds = meta["editors_bounds"]
    if bounds is not None:
        return str(bounds)
    if each.type == "bool":
        return "`true`, `false`"
    if each.type.startswith("tuple"):
        return "a list of strings"
    return meta.get("values") or "a string"


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def reference(_current: str) -> str:
    """docs/settings.md."""
    lines = [
        "# Settings",
        "",
        "<!-- Made by `python -m fimlsp.settings write` from the declaration of the settings (`fimlsp/settings`,",
        "`fimlsp/decoding/options.py`): do not edit; tests/test_settings_list.py fails when it is not up to date. -->",
        "",
        "Each setting has one name: `maxTokens` in the editors (VS Code: `fimlsp.maxTokens` in the settings; Neovim:",
        "`settings = { maxTokens = … }` in `setup`), `--max-tokens` on the command line. A client sends them as",
        "`initializationOptions` and `workspace/didChangeConfiguration`; a value of the wrong type or outside its",
        "bounds is refused with a warning in the log and the setting keeps its value, and null restores the server's",
        "starting value. `fimlsp serve` takes the starting value of each as its flag.",
        "",
        "| setting | flag | default | values | meaning |",
        "| --- | --- | --- | --- | --- |",
    ]
    for each in editor_settings():
        meta = each.metadata
        named = "none (Neovim: `cmd`)" if editors_only(each) else f"`{flag(each.name)}`"
        lines.append(f"| `{meta['setting']}` | {named} | {_cell(_default(meta))} | {_cell(_values(each))} | "
                     f"{_cell(_sentence(each))} |")
    others = [name for name in DECLARED if not DECLARED[name].metadata["setting"]]
    lines += [
        "",
        "## Options of the commands only",
        "",
        "`fimlsp complete` has a flag for every decoding option, with the editors' defaults but no time budget (a",
        "middle that does not depend on the machine's speed). `fimlsp eval` takes the model's settings and the",
        "decoding options a run records, with the library's defaults (the paper's setup: `--scope file`, `--names",
        "off`, `--max-tokens 500`) and a search budget rather than a time budget. The flags with no setting:",
        "",
        "| flag | commands | default | values | meaning |",
        "| --- | --- | --- | --- | --- |",
    ]
    for name in others:
        meta = DECLARED[name].metadata
        commands = ", ".join(command for command in ("complete", "serve", "eval") if name in offered_by(command))
        lines.append(f"| `{flag(name)}` | {commands} | {_cell(_default(meta))} | "
                     f"{_cell(_values(DECLARED[name]))} | {_cell(_sentence(DECLARED[name]))} |")
    lines += [
        "",
        "In VS Code, the settings marked user settings only are taken from the user's settings, never from a",
        "workspace's: see [SECURITY.md](../SECURITY.md).",
    ]
    return "\n".join(lines) + "\n"


FILES: dict[Path, Callable[[str], str]] = {
    PACKAGE_JSON: package_json, EXTENSION_KEYS: extension_keys, EXTENSION_README: extension_readme,
    NEOVIM: neovim_plugin, REFERENCE: reference}


def made(path: Path) -> str:
    """What the declaration makes of the file at `path`."""
    return FILES[path](path.read_text(encoding="utf-8") if path.exists() else "")


def stale() -> list[Path]:
    """The files that differ from what the declaration makes of them."""
    return [path for path in FILES if not path.exists() or path.read_text(encoding="utf-8") != made(path)]
