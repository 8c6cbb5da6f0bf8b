"""The server's settings: defaults, `fimlsp serve` options, `initializationOptions` and
`workspace/didChangeConfiguration`, validated one key at a time.

Clients send camelCase keys, either at the top level or under a `fimlsp` section (VS Code's
`synchronize.configurationSection` does the latter). A null value means the server's starting value; an unknown key or a bad
value is reported and ignored, so one typo never stops the server.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Any

from fimlsp.decoding import MODES
from fimlsp.python.region import DEFAULT_BUDGET

SINGLE_LINE = ("auto", "always", "never")
SECTION = "fimlsp"


@dataclass(frozen=True)
class Settings:
    model: str | None = None  # a model folder or hub id; None: the model shipped with fimlsp
    device: str | None = None  # a torch device; None: a GPU if present
    mode: str = "constrained"
    max_tokens: int = 128
    time_budget: float = 2.0  # seconds per completion
    single_line: str = "auto"  # auto: single-line while typing, multi-line when the user asks
    top_k: int = 50
    cache: bool = True  # right-context quotients, left-context recognizers and served suggestions
    size_budget: int = DEFAULT_BUDGET  # characters: bigger files are checked around the cursor only
    alternatives: int = 1  # distinct middles an inline completion offers, the most probable first

    def model_key(self) -> tuple[str | None, str | None]:
        """What loading a model depends on: a change of it reloads the model."""
        return self.model, self.device


# camelCase key -> (field, check returning the value or raising ValueError with a one-line reason)
def _optional_text(value: Any) -> str | None:
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise ValueError("expected a string")
    return value


def _choice(options: tuple[str, ...]):
    def check(value: Any) -> str:
        if value not in options:
            raise ValueError(f"expected one of {', '.join(options)}")
        return value

    return check


def _positive_int(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError("expected a positive integer")
    return value


def _positive_number(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise ValueError("expected a positive number of seconds")
    return float(value)


def _boolean(value: Any) -> bool:
    if not isinstance(value, bool):
        raise ValueError("expected true or false")
    return value


KEYS = {
    "model": ("model", _optional_text),
    "device": ("device", _optional_text),
    "mode": ("mode", _choice(MODES)),
    "maxTokens": ("max_tokens", _positive_int),
    "timeBudget": ("time_budget", _positive_number),
    "singleLine": ("single_line", _choice(SINGLE_LINE)),
    "topK": ("top_k", _positive_int),
    "cache": ("cache", _boolean),
    "sizeBudget": ("size_budget", _positive_int),
    "alternatives": ("alternatives", _positive_int),
}
assert {field for field, _ in KEYS.values()} == {field.name for field in fields(Settings)}


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
