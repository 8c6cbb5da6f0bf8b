"""Exact bytes of every token, so that decoded text can be fed to the parser one complete character at a time.

Byte-level BPE (GPT-2, StarCoder, DeepSeek, Qwen, ours) spells each byte as one printable character; a token can
end in the middle of a UTF-8 character, so text is decoded incrementally and the incomplete tail stays pending.
SentencePiece vocabularies (CodeLlama) spell a space as `▁` and raw bytes as `<0xNN>`. Control and other special
tokens have no bytes: they are never fed as text.
"""

from __future__ import annotations

import codecs
import re
from functools import lru_cache

_SENTENCEPIECE_BYTE = re.compile(r"<0x([0-9A-Fa-f]{2})>")


@lru_cache(maxsize=1)
def _byte_level_decoder() -> dict[str, int]:
    """The inverse of GPT-2's `bytes_to_unicode`: printable stand-in character -> byte."""
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(
        range(ord("®"), ord("ÿ") + 1)
    )
    stand_ins = printable[:]
    extra = 0
    for byte in range(256):
        if byte not in printable:
            printable.append(byte)
            stand_ins.append(256 + extra)
            extra += 1
    return {chr(stand_in): byte for byte, stand_in in zip(printable, stand_ins)}


def token_bytes(tokenizer) -> list[bytes | None]:
    """For each token id, the bytes it stands for; None for special tokens."""
    vocabulary = tokenizer.get_vocab()
    table: list[bytes | None] = [None] * max(len(tokenizer), max(vocabulary.values()) + 1)
    special = set(tokenizer.all_special_tokens) | {
        token.content for token in getattr(tokenizer, "added_tokens_decoder", {}).values() if token.special
    }
    byte_level = _is_byte_level(tokenizer)
    decoder = _byte_level_decoder()
    for token, index in vocabulary.items():
        if token in special:
            continue
        if byte_level:
            if all(char in decoder for char in token):
                table[index] = bytes(decoder[char] for char in token)
            else:  # an added non-special token spelled in plain text
                table[index] = token.encode("utf-8")
        else:
            match = _SENTENCEPIECE_BYTE.fullmatch(token)
            table[index] = bytes([int(match.group(1), 16)]) if match else token.replace("▁", " ").encode("utf-8")
    return table


def _is_byte_level(tokenizer) -> bool:
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is not None:
        described = f"{backend.pre_tokenizer!r} {backend.decoder!r}"
        if "ByteLevel" in described:
            return True
        if "Metaspace" in described or "ByteFallback" in described:
            return False
    return "Ġ" in tokenizer.get_vocab()


def split_utf8(data: bytes) -> tuple[str, bytes] | None:
    """Decode the longest complete prefix of `data`; the rest is an unfinished character. None if invalid."""
    try:
        text = codecs.getincrementaldecoder("utf-8")().decode(data, final=False)
    except UnicodeDecodeError:
        return None
    return text, data[len(text.encode("utf-8")):]


@lru_cache(maxsize=256)
def completions_of(pending: bytes) -> tuple[str, ...]:
    """A few characters whose UTF-8 encoding starts with `pending` (an unfinished character): a letter, a digit
    and a symbol where the range has them, so a caller can tell whether some completion could be valid before
    it takes the partial character."""
    lead = pending[0]
    continuation_bytes = 1 if lead < 0xE0 else 2 if lead < 0xF0 else 3
    missing = continuation_bytes + 1 - len(pending)
    found: dict[str, str] = {}
    for tail in range(min(64 ** missing, 1 << 12)):
        data = pending + bytes(0x80 | (tail >> (6 * shift)) & 0x3F for shift in reversed(range(missing)))
        try:
            char = data.decode("utf-8")
        except UnicodeDecodeError:
            continue
        kind = "letter" if char.isidentifier() else "digit" if ("x" + char).isidentifier() else "symbol"
        found.setdefault(kind, char)
        if len(found) == 3:
            break
    return tuple(found.values())
