"""Models whose next tokens a decoding test chooses, and the cursors the decoding tests complete at."""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace

import torch

from fimlsp.decoding import DecodingOptions


LEFT = "def total(items):\n    result = sum(item.price for item in "
RIGHT = ")\n    return result\n"
BROKEN_LEFT = "x = )\n\ndef f(a):\n    return a + "
BROKEN_RIGHT = "\n\ny = (\n"
GREET_LEFT = 'def greet(name, greeting="hello"):\n    message = '
GREET_RIGHT = 'f"{greeting}, {name}"\n    return message\n'


class ScriptedModel(torch.nn.Module):
    """Proposes a fixed token sequence, then end of sequence, always ranking end of sequence second. Each middle
    decoded gets the script from its start: the step is kept in the key-value cache, as a real model's position
    is, so middles that go on from one prompt's cache each start at its first step."""

    def __init__(self, script: list[int], eos: int, vocabulary: int):
        super().__init__()
        self.script, self.eos, self.vocabulary = script, eos, vocabulary

    def forward(self, input_ids, past_key_values=None, use_cache=True):
        step = 0 if past_key_values is None else past_key_values["step"]
        logits = torch.zeros(self.vocabulary)
        wanted = self.script[step] if step < len(self.script) else self.eos
        logits[self.eos] = 5.0
        logits[wanted] = 10.0
        return SimpleNamespace(logits=logits.view(1, 1, -1), past_key_values={"step": step + 1})


def scripted(tiny, tokens: list[int]):
    return dataclasses.replace(tiny, model=ScriptedModel(tokens, min(tiny.stop_ids), len(tiny.token_bytes)))


def byte_token(tiny, value: int) -> int:
    return tiny.token_bytes.index(bytes([value]))


class FixedRankingModel(torch.nn.Module):
    """Ranks the same tokens first at every step, in the given order; the rest of the vocabulary after them."""

    def __init__(self, ranked: list[int], vocabulary: int):
        super().__init__()
        self.logits = torch.zeros(vocabulary)
        for rank, token in enumerate(ranked):
            self.logits[token] = 10.0 - rank

    def forward(self, input_ids, past_key_values=None, use_cache=True):
        return SimpleNamespace(logits=self.logits.view(1, 1, -1), past_key_values=None)


def fixed_ranking(tiny, ranked: list[int]):
    return dataclasses.replace(tiny, model=FixedRankingModel(ranked, len(tiny.token_bytes)))


def quotient_guarantee(left: str, right: str):
    """The constrained mode's promise for `left` and `right`, built before a test changes the clock."""
    from fimlsp.language import named

    return named(DecodingOptions().language).constrain(left, right)


class BranchingModel(torch.nn.Module):
    """At the cursor, ranks the first tokens of `branches` in their order; after one of them, proposes the rest of
    its branch, then end of sequence, always ranking end of sequence second (as `ScriptedModel`, the branch and
    its step kept in the key-value cache)."""

    def __init__(self, branches: list[list[int]], eos: int, vocabulary: int):
        super().__init__()
        self.branches, self.eos, self.vocabulary = branches, eos, vocabulary

    def forward(self, input_ids, past_key_values=None, use_cache=True):
        logits = torch.zeros(self.vocabulary)
        if past_key_values is None:  # the prompt: a middle begins after it
            for rank, branch in enumerate(self.branches):
                logits[branch[0]] = 10.0 - rank
            return SimpleNamespace(logits=logits.view(1, 1, -1), past_key_values={"script": None, "step": 1})
        script = past_key_values["script"] or next(
            branch for branch in self.branches if branch[0] == int(input_ids[0, -1]))
        step = past_key_values["step"]
        wanted = script[step] if step < len(script) else self.eos
        logits[self.eos], logits[wanted] = 5.0, 10.0
        return SimpleNamespace(logits=logits.view(1, 1, -1), past_key_values={"script": script, "step": step + 1})


def branching(tiny, *branches: str):
    tokens = [[byte_token(tiny, byte) for byte in branch.encode()] for branch in branches]
    return dataclasses.replace(tiny, model=BranchingModel(tokens, min(tiny.stop_ids), len(tiny.token_bytes)))


def scripted_text(tiny, script: str):
    return scripted(tiny, [byte_token(tiny, byte) for byte in script.encode()])


def text_token(tiny, data: bytes) -> int:
    return tiny.token_bytes.index(data)
