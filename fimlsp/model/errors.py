"""What goes wrong with a model, the same for every engine: errors a user reads as one line."""

from __future__ import annotations


class ModelError(Exception):
    """The model cannot be used: a missing folder, no network for a hub id, not a FIM model."""


class OutOfTime(ModelError):
    """An engine in another process (a model server) did not answer before the decoding's deadline: the decoding
    ends there, as when its own clock runs out, instead of waiting on a stalled server."""


def first_line(error: BaseException) -> str:
    """The first line of an error's message (a library's can run to a traceback), else the error's type."""
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__
