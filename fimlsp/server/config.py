"""The server's settings: defaults, `fimlsp serve` options, `initializationOptions` and
`workspace/didChangeConfiguration`, validated one key at a time.

Clients send camelCase keys, either at the top level or under a `fimlsp` section (VS Code's
`synchronize.configurationSection` does the latter). A null value means the server's starting value; an unknown key
or a bad value is reported and ignored, so one typo never stops the server. `Settings` is made from the declaration of every
setting (`fimlsp.settings`): its keys, defaults (the editors'), choices, bounds and checks are read there.
"""

from __future__ import annotations

from dataclasses import field, fields, make_dataclass, replace
from typing import Any

from fimlsp.decoding import DecodingOptions
from fimlsp.decoding.options import check_bounds
from fimlsp.settings import server_settings

SECTION = "fimlsp"


def _choice(options: tuple[str, ...]):
    def check(value: Any) -> str:
        if value not in options:
            raise ValueError(f"expected one of {', '.join(options)}")
        return value

    return check


def _boolean(value: Any) -> bool:
    if not isinstance(value, bool):
        raise ValueError("expected true or false")
    return value


def _text(value: Any) -> str:
    if not isinstance(value, str):
        raise ValueError("expected a string")
    return value


def _check(declared) -> Any:
    """The check of a client's value for the setting `declared`: its own, its bounds', its choices' or a bool's."""
    meta = declared.metadata
    if meta.get("check") is not None:
        return meta["check"]
    if meta["editors_bounds"] is not None:
        return meta["editors_bounds"].check
    if meta["choices"]:
        return _choice(meta["choices"])
    return _boolean if declared.type == "bool" else _text


class _Held:
    """What `Settings` does with the values it holds."""

    def __post_init__(self):
        check_bounds(self, fields(self))

    def model_key(self) -> tuple[str | None, str | None, str | None]:
        """What loading a model depends on: a change of it reloads the model."""
        return self.model, self.device, self.model_server

    def decoding_options(self, **given) -> DecodingOptions:
        """The decoding options these settings hold, with `given` (what a request adds) on top."""
        held = {each.name: getattr(self, each.name) for each in fields(self) if each.metadata["decoding"]}
        return DecodingOptions(**{**held, **given})


Settings = make_dataclass("Settings", [
    (each.name, each.type, field(default=each.metadata["editors"], metadata={
        "key": each.metadata["setting"], "check": _check(each), "choices": each.metadata["choices"],
        "decoding": "commands" not in each.metadata, "bounds": each.metadata["editors_bounds"]}))
    for each in server_settings()], bases=(_Held,), frozen=True)
Settings.__module__ = __name__
Settings.__doc__ = "The server's settings, one field for each setting a client may send, with the editors' defaults."

# camelCase key -> (field, check), in the order of `Settings`
KEYS = {each.metadata["key"]: (each.name, each.metadata["check"]) for each in fields(Settings)}
# field -> the bounds of a number setting
BOUNDS = {each.name: each.metadata["bounds"] for each in fields(Settings) if each.metadata["bounds"] is not None}


def section(options: Any) -> dict | None:
    """The fimlsp settings in what a client sent: the `fimlsp` section if there is one, else the object itself."""
    if not isinstance(options, dict):
        return None
    inner = options.get(SECTION)
    return inner if isinstance(inner, dict) else options


def update(settings: Settings, options: Any, base: Settings = Settings()) -> tuple[Settings, list[str]]:
    """`settings` with the valid keys of `options` applied, and one line per key that was ignored.

    A null value restores the value in `base`: the server's starting settings (defaults and command line).
    """
    if options == []:  # an empty table from a Lua client encodes as a JSON array
        return settings, []
    values = section(options)
    if values is None:
        return settings, [] if options is None else [f"settings must be an object, got {type(options).__name__}"]
    changes: dict[str, Any] = {}
    problems: list[str] = []
    for key, value in values.items():
        if key not in KEYS:
            problems.append(f"unknown setting {key!r} ignored (known: {', '.join(KEYS)})")
            continue
        name, check = KEYS[key]
        if value is None:
            changes[name] = getattr(base, name)
            continue
        try:
            changes[name] = check(value)
        except ValueError as error:
            problems.append(f"setting {key!r} = {value!r} ignored: {error}")
    return replace(settings, **changes), problems
