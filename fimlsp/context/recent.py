"""Recently edited and viewed regions of open documents, as chunks (llama.vscode's ring buffer): a chunk of lines
around where the user edited or asked for a completion, the newest first, a near-duplicate of a new chunk evicted
(line-set Jaccard similarity above 0.9), at most `capacity` kept."""
from __future__ import annotations

import threading
from collections import deque
from dataclasses import dataclass
from pathlib import Path

CAPACITY = 16
CHUNK_LINES = 64
SIMILAR = 0.9


@dataclass(frozen=True)
class Chunk:
    path: Path
    first_line: int  # 0-based
    text: str
    lines: frozenset[str]  # its non-blank lines, stripped, for the similarity


def first_changed_line(old: str, new: str) -> int:
    """The 0-based line of the first character where `new` differs from `old` (halving slices: C-speed compares)."""
    low, high = 0, min(len(old), len(new))
    while low < high:
        middle = (low + high + 1) // 2
        if old[:middle] == new[:middle]:
            low = middle
        else:
            high = middle - 1
    return new.count("\n", 0, low)


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    union = len(a | b)
    return len(a & b) / union if union else 1.0


def chunk_around(path: Path, text: str, line: int, size: int = CHUNK_LINES) -> Chunk | None:
    """The `size` lines centred on `line` (0-based), kept within the document; None for a blank region."""
    lines = text.splitlines()
    first = max(0, min(line - size // 2, len(lines) - size))
    kept = lines[first:first + size]
    content = frozenset(stripped for stripped in (each.strip() for each in kept) if stripped)
    if not content:
        return None
    return Chunk(path, first, "\n".join(kept) + "\n", content)


class RecentChunks:
    def __init__(self, capacity: int = CAPACITY, size: int = CHUNK_LINES):
        self.capacity, self.size = capacity, size
        self._chunks: deque[Chunk] = deque()
        self._lock = threading.Lock()

    def add(self, path: Path, text: str, line: int) -> None:
        """The region around `line` of the document was edited or viewed."""
        chunk = chunk_around(path, text, line, self.size)
        if chunk is None:
            return
        with self._lock:
            kept = [each for each in self._chunks if jaccard(each.lines, chunk.lines) <= SIMILAR]
            self._chunks = deque([chunk, *kept][:self.capacity])

    def forget(self, path: Path) -> None:
        with self._lock:
            self._chunks = deque(each for each in self._chunks if each.path != path)

    def chunks(self, excluding: Path | None = None) -> list[Chunk]:
        """The newest first, none of the document `excluding` (the one being completed shows itself)."""
        with self._lock:
            return [each for each in self._chunks if each.path != excluding]
