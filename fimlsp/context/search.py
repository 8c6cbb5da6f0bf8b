"""Lexical search of the workspace's files (BM25 over identifier tokens) for chunks like the code around the cursor.

The index is of whole files (a term's postings are the files holding it, with its count); a query ranks files, then
finds the best chunk of lines in each of the few best. It is built once per workspace and kept up to date on
change, in the background; a query takes what is indexed so far and never waits for the build (the lock is held
for one file's update at a time). A query's work is bounded by the postings it may scan, the rarest terms first.
Finding a file's best chunk needs its lines' terms: a keystroke's query (`unread` given) takes the chunks of the
files whose lines are cached and hands the others to the background (`load_lines`), for the next keystroke; reading
and splitting a large module on the keystroke's path cost tens of milliseconds.
"""
from __future__ import annotations

import heapq
import keyword
import math
import re
import threading
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_SKIPPED = frozenset(keyword.kwlist) | {"self", "cls", "None", "True", "False"}
K1, B = 1.2, 0.75
MAX_QUERY_TERMS = 16
MAX_SCANNED_POSTINGS = 8000
COMMON = 0.3  # a term in more of the files than this share says nothing about which
CHUNK_LINES, CHUNK_STRIDE = 24, 12  # a chunk's lines; a chunk starts a third of a stride above its first hit
CACHED_FILES = 64


def terms(text: str) -> list[str]:
    """The identifiers of `text` worth searching by (no keywords, no one-letter names)."""
    return [word for word in _IDENTIFIER.findall(text) if len(word) > 1 and word not in _SKIPPED]


@dataclass(frozen=True)
class Hit:
    path: Path
    first_line: int  # 0-based
    text: str
    score: float


class SearchIndex:
    def __init__(self, read: Callable[[Path], str | None]):
        self._read = read  # the workspace's reader: what may not be read is not indexed
        self._postings: dict[str, dict[int, int]] = {}
        self._files: dict[Path, int] = {}
        self._paths: dict[int, Path] = {}
        self._counts: dict[int, Counter] = {}
        self._lengths: dict[int, int] = {}
        self._total_length = 0
        self._next_id = 0
        self._lock = threading.Lock()
        self._lines: OrderedDict[Path, tuple[list[str], dict[str, list[int]]]] = OrderedDict()
        self.scanned = 0  # postings scanned by the last query (a counted bound for tests)

    def __len__(self) -> int:
        return len(self._files)

    def update(self, path: Path, text: str | None = None) -> None:
        """(Re)index one file from `text`, else from what the reader gives; a file that cannot be read leaves."""
        text = self._read(path) if text is None else text
        counts = Counter(terms(text)) if text is not None else None
        with self._lock:
            self._remove(path)
            self._lines.pop(path, None)
            if counts is None:
                return
            file_id, self._next_id = self._next_id, self._next_id + 1
            self._files[path], self._paths[file_id] = file_id, path
            self._counts[file_id] = counts
            length = sum(counts.values())
            self._lengths[file_id] = length
            self._total_length += length
            for term, count in counts.items():
                self._postings.setdefault(term, {})[file_id] = count

    def remove(self, path: Path) -> None:
        with self._lock:
            self._remove(path)
            self._lines.pop(path, None)

    def _remove(self, path: Path) -> None:
        file_id = self._files.pop(path, None)
        if file_id is None:
            return
        del self._paths[file_id]
        self._total_length -= self._lengths.pop(file_id)
        for term in self._counts.pop(file_id):
            postings = self._postings[term]
            del postings[file_id]
            if not postings:
                del self._postings[term]

    def build(self, paths: Iterable[Path], should_stop: Callable[[], bool] = lambda: False) -> int:
        """Index every file of `paths` (the background's work), one file under the lock at a time."""
        count = 0
        for path in paths:
            if should_stop():
                break
            self.update(path)
            count += 1
        return count

    def search(self, query: str, excluding: Path | None = None, files: int = 4,
               unread: Callable[[Path], None] | None = None) -> list[Hit]:
        """The best chunk of each of the `files` files that score best for the identifiers of `query`. With
        `unread`, a file whose lines are not cached is not read: it is handed to `unread` and left out."""
        wanted = set(terms(query))
        with self._lock:
            total = len(self._files)
            if not total or not wanted:
                self.scanned = 0
                return []
            average = self._total_length / total
            frequencies = {term: len(self._postings.get(term, ())) for term in wanted}
            useful = sorted((term for term, df in frequencies.items() if 0 < df <= max(2, COMMON * total)),
                            key=lambda term: frequencies[term])[:MAX_QUERY_TERMS]
            weights = {term: math.log(1 + (total - frequencies[term] + 0.5) / (frequencies[term] + 0.5))
                       for term in useful}
            scores: dict[int, float] = {}
            scanned = 0
            lengths, base, scale = self._lengths, K1 * (1 - B), K1 * B / average
            for term in useful:
                postings = self._postings[term]
                if scanned + len(postings) > MAX_SCANNED_POSTINGS:
                    break
                scanned += len(postings)
                weight = weights[term] * (K1 + 1)
                for file_id, count in postings.items():
                    norm = count + base + scale * lengths[file_id]
                    scores[file_id] = scores.get(file_id, 0.0) + weight * count / norm
            self.scanned = scanned
            scores.pop(self._files.get(excluding) if excluding is not None else None, None)
            best = [self._paths[file_id] for file_id in heapq.nlargest(files, scores, key=scores.__getitem__)]
        hits = []
        for path in best:
            if unread is not None:
                with self._lock:
                    cached = path in self._lines
                if not cached:
                    unread(path)
                    continue
            hit = self._best_chunk(path, weights)
            if hit is not None:
                hits.append(hit)
        return sorted(hits, key=lambda hit: -hit.score)

    def _best_chunk(self, path: Path, weights: dict[str, float]) -> Hit | None:
        """The window of `CHUNK_LINES` lines whose lines hold the most weight of the query's terms (a term counted
        once a line), found from the lines that hold them: the work is the query terms' occurrences in the file."""
        lines, positions = self._file_lines(path)
        scores: dict[int, float] = {}
        for term, weight in weights.items():
            for line in positions.get(term, ()):
                scores[line] = scores.get(line, 0.0) + weight
        if not scores:
            return None
        ordered = sorted(scores)
        best, best_first, total, low = 0.0, 0, 0.0, 0
        for high, line in enumerate(ordered):
            total += scores[line]
            while ordered[low] <= line - CHUNK_LINES:
                total -= scores[ordered[low]]
                low += 1
            if total > best:
                best, best_first = total, ordered[low]
        first = max(0, min(best_first - CHUNK_STRIDE // 3, len(lines) - CHUNK_LINES))
        return Hit(path, first, "\n".join(lines[first:first + CHUNK_LINES]) + "\n", best)

    def load_lines(self, path: Path) -> None:
        """Cache a file's lines and their terms (the background's work, for a query that left the file out)."""
        self._file_lines(path)

    def _file_lines(self, path: Path) -> tuple[list[str], dict[str, list[int]]]:
        """A file's lines and, for each term, the lines that hold it (kept for the files searched last)."""
        with self._lock:
            cached = self._lines.get(path)
            if cached is not None:
                self._lines.move_to_end(path)
                return cached
        text = self._read(path) or ""
        lines = text.splitlines()
        positions: dict[str, list[int]] = {}
        for number, line in enumerate(lines):
            for term in set(terms(line)):
                positions.setdefault(term, []).append(number)
        entry = (lines, positions)
        with self._lock:
            self._lines[path] = entry
            while len(self._lines) > CACHED_FILES:
                self._lines.popitem(last=False)
        return entry
