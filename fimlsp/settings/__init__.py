"""Every setting of fimlsp, declared once, and what is made from the declaration.

A setting has one name: `max_tokens` in Python, `--max-tokens` on the command line, `maxTokens` in the editors
(`fimlsp.maxTokens` in VS Code, `settings = { maxTokens = … }` in Neovim). The decoding options are declared in
`fimlsp.decoding.options.DecodingOptions`; the other settings, the model's and the server's, in `ServerOptions` below,
the same way. From the two come the flags of `fimlsp complete`, `serve` and `eval` (`add_flags`, `given`), the
server's settings and their checks (`fimlsp.server.config`), the values of a command that are not an editor's
(`differing_from_editors`) and, written by `python -m fimlsp.settings write` (tested to be up to date), the VS Code
extension's configuration and list of keys, the Neovim plugin's list and docs/settings.md (`fimlsp.settings.files`).
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Iterable, Mapping
from dataclasses import Field, dataclass, fields
from typing import Any

from fimlsp.decoding.options import Bounds, DecodingOptions, offered, option_field
from fimlsp.model.choices import DEVICE_CHOICES, DEVICES, GGUF_SUFFIX, HUB_ID, HUB_PREFIX

SINGLE_LINE = ("auto", "always", "never")  # the first is the default
LOG_LEVELS = ("debug", "info", "warning", "error")
COMMANDS = ("complete", "serve", "eval")


# Checks of a client's value: each returns the value or raises ValueError with a one-line reason.
def _optional_text(value: Any) -> str | None:
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise ValueError("expected a string")
    return value


def model_location(value: Any) -> str | None:
    """A model the server may load whatever its working directory (an editor's workspace folder, whose files a
    repository chooses): an absolute or `~` path, or a hub id, made explicit as `hf:OWNER/NAME`."""
    value = _optional_text(value)
    if value is None or value.startswith((HUB_PREFIX, "~")) or os.path.isabs(value):
        return value
    if HUB_ID.fullmatch(value) and not value.endswith(GGUF_SUFFIX):
        return HUB_PREFIX + value
    raise ValueError("a relative path would be read from the server's working directory (the workspace folder): "
                     f"give an absolute path, a path starting with ~, or a hub id (OWNER/NAME or {HUB_PREFIX}NAME)")


def server_url(value: Any) -> str | None:
    value = _optional_text(value)
    if value is not None and not value.startswith(("http://", "https://")):
        raise ValueError("expected an http:// or https:// URL")
    return value


def device_name(value: Any) -> str | None:
    value = _optional_text(value)
    if value is not None and not DEVICES.fullmatch(value):
        raise ValueError(f"expected {DEVICE_CHOICES}")
    return value


def _setting(default, help: str, *, commands: tuple[str, ...] = (), check=None, values: str | None = None,
             unset: str | None = None, machine: bool = False, flag_check: bool = True, **declared):
    """A setting that is not a decoding option: the commands that offer it as a flag, `check` for a text's value
    (a client's, and a flag's unless `flag_check` is off), `values` and `unset` (what None means) in words for the
    reference, and `machine`: VS Code takes it from the user's settings only, never a workspace's."""
    return option_field(default, help, commands=commands, check=check, values=values, unset=unset, machine=machine,
                   flag_check=flag_check, **declared)


@dataclass(frozen=True)
class ServerOptions:
    """The settings that are not decoding options: the model's, how the server answers, the editors' own."""

    model: str | None = _setting(
        None, "model folder, hub id (OWNER/NAME) or .gguf file run by llama.cpp; with a model server, the folder or "
              ".gguf file with its vocabulary. The setting takes an absolute or ~ path, never one in the workspace; "
              "on the command line a relative path is read from the current folder (./OWNER/NAME for a folder that "
              "is also a hub id)", setting="model", commands=COMMANDS, check=model_location, flag_check=False,
        values="an absolute or `~` path, or a hub id `OWNER/NAME`", unset="the model shipped with fimlsp",
        machine=True)
    model_server: str | None = _setting(
        None, "URL of a shared server that runs the model (vLLM, llama.cpp's server, python -m llama_cpp.server: "
              "http://HOST:PORT); the code around the cursor is sent there, the constraint runs here, and model "
              "names the folder with the model's vocabulary",
        metavar="URL", setting="modelServer", commands=COMMANDS, check=server_url, values="`http://HOST:PORT`",
        unset="none: the model runs in fimlsp", machine=True)
    device: str | None = _setting(
        None, f"torch device: {DEVICE_CHOICES}", setting="device", commands=COMMANDS, check=device_name,
        values=DEVICE_CHOICES,
        unset="the shipped model's GGUF on the CPU, a model folder on a GPU if present")
    single_line: str = _setting(
        SINGLE_LINE[0], "single-line suggestions: auto is one line for a request made while typing and several when "
                        "asked for (fimlsp complete asks); several lines end where the statement or block at the "
                        "cursor ends", choices=SINGLE_LINE, setting="singleLine", commands=("complete", "serve"))
    alternatives: int = _setting(
        1, "distinct middles to offer, the best first (see attempts), each another generation; fimlsp complete "
           "prints the first, or with --json lists them under \"completions\"", metavar="K", setting="alternatives",
        bounds=Bounds(1, 10), commands=("complete", "serve"))
    cache: bool = _setting(
        True, "reuse work while typing: right-context quotients, left-context recognizers and suggestions whose "
              "start was typed", setting="cache", commands=("serve",))
    log_level: str = _setting("info", "lowest level of the log lines sent to the client", choices=LOG_LEVELS,
                              commands=("serve",))
    server_command: tuple[str, ...] = _setting(
        ("fimlsp", "serve"), "the command that starts the language server, as a program and its arguments",
        setting="server.command", machine=True)  # the editors' own: the server never sees it


def _declared() -> dict[str, Field]:
    every = [*fields(ServerOptions), *offered()]
    by_name = {each.name: each for each in every}
    if len(by_name) != len(every):
        raise TypeError("a setting is declared twice: a name is one setting's")
    return by_name


DECLARED = _declared()  # every setting, by its Python name: the model's and the server's, then the decoding options


def declared(name: str) -> Field:
    return DECLARED[name]


def flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def editors_default(name: str) -> Any:
    """The setting's value in an editor with the default settings, for a suggestion asked for."""
    return DECLARED[name].metadata["editors"]


def editors_only(each: Field) -> bool:
    """A setting of the editors that the server never sees (the command that starts it)."""
    return not each.metadata.get("commands", True)


def server_settings() -> list[Field]:
    """The settings a client sends the server, in their order: the others', then the decoding options'."""
    return [each for each in DECLARED.values() if each.metadata["setting"] and not editors_only(each)]


def offered_by(command: str) -> list[str]:
    """The settings that `command` (complete or serve) has a flag for: complete every decoding option, serve every
    setting the server takes (its starting value), and each the other settings that name it."""
    def offers(each: Field) -> bool:
        if "commands" in each.metadata:  # not a decoding option: it names its commands
            return command in each.metadata["commands"]
        return command == "complete" or (command == "serve" and each.metadata["setting"] is not None)

    return [each.name for each in DECLARED.values() if offers(each)]


def add_flags(parser, names: Iterable[str], defaults: Mapping[str, Any] | None = None, server: bool = False) -> None:
    """A flag for each setting in `names`, `--max-tokens` for `max_tokens`, with the default in `defaults`, else the
    editors', and its value checked against the declared bounds (the server's with `server`); on/off settings get
    `--x` and `--no-x`."""
    for name in names:
        each = DECLARED[name]
        meta = each.metadata
        default = (defaults or {}).get(name, meta["editors"])
        if each.type == "bool":
            parser.add_argument(flag(name), action=argparse.BooleanOptionalAction, default=default,
                                help=f"{meta['help']} (default: {'on' if default else 'off'})")
            continue
        within = meta["editors_bounds"] if server else meta["bounds"]
        parser.add_argument(flag(name), type=str if within is None else within.parse, choices=meta["choices"] or None,
                            default=default, metavar=meta["metavar"],
                            help=f"{meta['help']} (default: {_default_in_words(meta, default)})")


def _default_in_words(meta: Mapping[str, Any], default: Any) -> str:
    if default is None:
        return meta.get("unset") or "none"
    return "%(default)s" if default != "" else "none"


def given(args: argparse.Namespace, names: Iterable[str]) -> dict[str, Any]:
    """The values of the flags that `add_flags` added for `names`; ValueError, naming the flag, for a text that the
    setting's check refuses."""
    values = {name: getattr(args, name) for name in names}
    for name, value in values.items():
        check = DECLARED[name].metadata.get("check")
        if check is not None and DECLARED[name].metadata["flag_check"]:
            try:
                check(value)
            except ValueError as error:
                raise ValueError(f"{flag(name)} {value!r}: {error}") from None
    return values


def decoding_options(values: Mapping[str, Any], **given_options) -> DecodingOptions:
    """The decoding options among `values` (a command's settings), with `given_options` on top."""
    decoding = {each.name for each in offered()}
    return DecodingOptions(**{**{name: value for name, value in values.items() if name in decoding},
                              **given_options})


def differing_from_editors(values: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """The settings among `values` (a command's) whose value is not the one an editor with the default settings
    asks a suggestion with, as {"name": {"here": value, "editors": value}}."""
    return {name: {"here": value, "editors": editors_default(name)} for name, value in values.items()
            if value != editors_default(name)}
