"""A decoding's results (`fimlsp.decoding.results`): how middles are ranked."""

from __future__ import annotations

def test_preference_ranks_valid_then_ended_then_mean_log_probability():
    from fimlsp.decoding import Completion, preference

    def completion(middle, log_probability, tokens, ending="eos", end=-0.5, guarantee="file"):
        return Completion(middle, guarantee == "file", "constrained", "eos", ending, tokens=tokens,
                          log_probability=log_probability, guarantee=guarantee, end_log_probability=end)

    long = completion("return total / len(values)", -8.0, 8)  # mean with its end: -0.94
    short = completion("pass", -2.5, 1, end=-4.0)  # a bigger sum, a worse mean: -3.25
    fallback = completion("if x", -0.5, 2, ending="fallback", end=None)
    invalid = completion("x", -0.1, 1, guarantee="none")
    empty = completion("", 0.0, 0, end=-0.7)  # worth its end's probability
    ranked = sorted([short, invalid, fallback, long, empty], key=preference, reverse=True)
    assert ranked == [empty, long, short, fallback, invalid]
