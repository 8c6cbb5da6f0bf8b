"""Compiled right contexts kept by their owner (a server, one CLI run) for the next request, and the statement
starts of the last few documents: what `fimlsp.python.quotient.quotient` reuses when a user types."""

from __future__ import annotations

import math
import threading
import time
from collections import OrderedDict
from collections.abc import Sequence

from earley import DeadlineExceeded, Stopped
from fimlsp.python.quotient import RightContext
from fimlsp.python.window import StatementStarts

_CACHE_SIZE = 16  # right contexts a cache keeps, and as many that ran out of time
_DOCUMENTS_KEPT = 4  # documents whose statement starts a cache keeps: a cursor that jumps about one


class RightContextCache:
    """Compiled right contexts, kept by their owner (a server, one CLI run) for the next request: a typing user
    keeps the same right context. A small LRU, beside a memory of the right contexts whose build ran out of time
    and one of the last documents' statement starts (`statement_starts`).

    Shared by the server's threads: a lock guards the dictionaries, never a build (two threads that build the
    same right context at once each build it, and the later one is kept).
    """

    def __init__(self):
        self._lock = threading.Lock()
        self._contexts: OrderedDict[tuple[str, str], RightContext] = OrderedDict()
        # Right contexts whose build ran out of time, with the time they were given.
        self._too_slow: OrderedDict[tuple[str, str], float] = OrderedDict()
        self._statement_starts: OrderedDict[str, StatementStarts] = OrderedDict()

    def statement_starts(self, document: str) -> StatementStarts:
        """The document's statement starts: kept; or, when it is an edit of the last document kept, those whose
        facts the edit leaves standing on each side of it (`StatementStarts.edited`), if any; else parsed."""
        with self._lock:
            found = self._statement_starts.get(document)
            if found is not None:
                self._statement_starts.move_to_end(document)
                return found
            last = next(reversed(self._statement_starts.items()), None)
        if last is not None:
            found = last[1].edited(last[0], document)
        if found is None or not (found.before or found.after):
            found = StatementStarts.of(document)
        self._remember(self._statement_starts, document, found, _DOCUMENTS_KEPT)
        return found

    def right_context(
        self, right: str, deadline: float | None = None, block_indent: str = "", statement_starts: Sequence[int] = ()
    ) -> RightContext:
        """The compiled right context, built unless it is kept.

        A build that runs past `deadline` raises `DeadlineExceeded` and is remembered with the time it was
        given, so that a user typing in front of a right context too big to compile does not pay for the attempt
        again on every keystroke unless at least twice the time is offered. A build stopped by its caller
        (`earley.Deadline`) raises `earley.Stopped` and is not held against the right context.

        `statement_starts` are not part of the key: they are facts about `right` alone (the rest of the file from
        each is whole statements) that spare the build parses, and the context's language does not depend on them.
        """
        key = (right, block_indent)
        with self._lock:
            found = self._contexts.get(key)
            if found is not None:
                self._contexts.move_to_end(key)
                return found
            too_slow = self._too_slow.get(key, -math.inf)
        started = time.perf_counter()
        offered = math.inf if deadline is None else deadline - started
        if 2 * too_slow > offered:
            raise DeadlineExceeded
        try:
            context = RightContext(right, deadline, block_indent, statement_starts=statement_starts)
        except Stopped:
            raise
        except DeadlineExceeded:
            self._remember(self._too_slow, key, offered)
            raise
        self._remember(self._contexts, key, context)
        return context

    def _remember(self, entries: OrderedDict, key, value, size: int = _CACHE_SIZE) -> None:
        with self._lock:
            entries[key] = value
            entries.move_to_end(key)
            while len(entries) > size:
                entries.popitem(last=False)
