"""The server's settings: defaults, `fimlsp serve` options, `initializationOptions` and
`workspace/didChangeConfiguration`, validated one key at a time.

Clients send camelCase keys, either at the top level or under a `fimlsp` section (VS Code's
`synchronize.configurationSection` does the latter). A null value means the server's starting value; an unknown key or a bad
value is reported and ignored, so one typo never stops the server. A number setting's bounds are declared once, with
the setting (or with its decoding option): its check, `fimlsp serve`'s flag and the VS Code schema read them there.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, fields, replace
from typing import Any

from fimlsp.decoding import DecodingOptions
from fimlsp.decoding.options import Bounds, option
from fimlsp.model.loading import DEVICE_CHOICES, DEVICES, GGUF_SUFFIX, HUB_ID, HUB_PREFIX

SINGLE_LINE = ("auto", "always", "never")
SECTION = "fimlsp"


# Checks of a client's value: each returns the value or raises ValueError with a one-line reason.
def _optional_text(value: Any) -> str | None:
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise ValueError("expected a string")
    return value


def _model_location(value: Any) -> str | None:
    """A model the server may load whatever its working directory (an editor's workspace folder, whose files a
    repository chooses): an absolute or `~` path, or a hub id, made explicit as `hf:OWNER/NAME`."""
    value = _optional_text(value)
    if value is None or value.startswith((HUB_PREFIX, "~")) or os.path.isabs(value):
        return value
    if HUB_ID.fullmatch(value) and not value.endswith(GGUF_SUFFIX):
        return HUB_PREFIX + value
    raise ValueError("a relative path would be read from the server's working directory (the workspace folder): "
                     f"give an absolute path, a path starting with ~, or a hub id (OWNER/NAME or {HUB_PREFIX}NAME)")


def _server_url(value: Any) -> str | None:
    value = _optional_text(value)
    if value is not None and not value.startswith(("http://", "https://")):
        raise ValueError("expected an http:// or https:// URL")
    return value


def _device(value: Any) -> str | None:
    value = _optional_text(value)
    if value is not None and not DEVICES.fullmatch(value):
        raise ValueError(f"expected {DEVICE_CHOICES}")
    return value


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


def _setting(default: Any, key: str, check=None, choices: tuple[str, ...] = (), decoding: bool = False,
             bounds: Bounds | None = None) -> Any:
    """A field of `Settings` with the camelCase key clients send, its check and, for a choice, its options, for a
    number its bounds (which are then its check); with `decoding`, it is the decoding option of the same name."""
    return field(default=default, metadata={"key": key, "check": check or bounds.check, "choices": choices,
                                             "decoding": decoding, "bounds": bounds})


_DECLARED = object()


def _decoding(name: str, default: Any = _DECLARED, least: int | None = None) -> Any:
    """A setting that is the decoding option `name`: its key, choices, bounds (from `least` on, where the server
    refuses what the library allows) and (unless given) default are the option's declaration
    (`fimlsp.decoding.options`); a choice is checked against its choices, a number against its bounds."""
    declared = option(name)
    choices, bounds = declared.metadata["choices"], declared.metadata["bounds"]
    if bounds is not None and least is not None:
        bounds = bounds.narrowed(least)
    return _setting(declared.default if default is _DECLARED else default, declared.metadata["setting"],
                    None if bounds is not None else _choice(choices), choices, decoding=True, bounds=bounds)


@dataclass(frozen=True)
class Settings:
    """The one list of the server's settings: the editors' copies are tested against it."""

    # a model folder, hub id or .gguf file; None: the shipped one
    model: str | None = _setting(None, "model", _model_location)
    device: str | None = _setting(None, "device", _device)  # a torch device; None: a GPU if present
    mode: str = _decoding("mode")
    # block: a middle stays in the block at the cursor and leaves the code after it as it reads
    scope: str = _decoding("scope", "block")
    # strict: a constrained suggestion loads only names that the file or the suggestion binds (the editors' default:
    # 1 of 48 held-out constrained middles adds an undefined name with it, 14 without)
    names: str = _decoding("names", "strict")
    max_tokens: int = _decoding("max_tokens", 128, least=1)
    # seconds per completion; a minute at most, and the setting is a suggestion's, not a batch run's
    time_budget: float = _setting(2.0, "timeBudget", bounds=Bounds(0, 60, integer=False, above=True))
    # auto: single-line while typing, multi-line when the user asks
    single_line: str = _setting("auto", "singleLine", _choice(SINGLE_LINE), SINGLE_LINE)
    top_k: int = _decoding("top_k")
    cache: bool = _setting(True, "cache", _boolean)  # right-context quotients, left recognizers, served suggestions
    # characters: bigger files are checked around the cursor only
    size_budget: int = _decoding("size_budget")
    # distinct middles an inline completion offers, each another generation
    alternatives: int = _setting(1, "alternatives", bounds=Bounds(1, 10))
    # greedy middles decoded from the best first tokens, the best ended offered first
    attempts: int = _decoding("attempts")
    # a middle ending in the same chunk this many times is cut back to the first
    loop_repeats: int = _decoding("loop_repeats")
    # a shared server (vLLM, llama.cpp's) that runs the model: `model` then names the folder of its vocabulary
    model_server: str | None = _setting(None, "modelServer", _server_url)

    def __post_init__(self):
        for each in fields(self):
            bounds = each.metadata["bounds"]
            if bounds is not None:
                try:
                    bounds.check(getattr(self, each.name))
                except ValueError:
                    raise ValueError(f"{each.name} must be {bounds}, got {getattr(self, each.name)!r}") from None

    def model_key(self) -> tuple[str | None, str | None, str | None]:
        """What loading a model depends on: a change of it reloads the model."""
        return self.model, self.device, self.model_server

    def decoding_options(self, **given) -> DecodingOptions:
        """The decoding options these settings hold, with `given` (what a request adds) on top."""
        held = {each.name: getattr(self, each.name) for each in fields(self) if each.metadata["decoding"]}
        return DecodingOptions(**{**held, **given})


# camelCase key -> (field, check), in the order of `Settings`
KEYS = {each.metadata["key"]: (each.name, each.metadata["check"]) for each in fields(Settings)}
# field -> the bounds of a number setting, for the flags of `fimlsp serve`
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
