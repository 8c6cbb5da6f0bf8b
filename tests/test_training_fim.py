"""FIM samples and packing: the spans a middle is cut at, the two layouts, segments, first-fit windows, and the tokens
the loss weighs apart (middle ends, repeats)."""

import math
import random

import numpy as np
import pytest

from fimlsp.cases import node_spans
from fimlsp.training.fim import (
    FimTokens,
    SpanMix,
    middle_ends,
    pack,
    repeat_candidates,
    segment_document,
    split_at_random_points,
    split_at_short_random_span,
)
from fimlsp.training.options import TrainOptions
from harness.corpus import STDLIB
from tests.training_fixtures import fim_transform
from tests.training_fixtures import sample_root, tokenizer  # noqa: F401, F811 (pytest fixtures)


def decode(tokenizer, ids):
    return tokenizer.decode(ids, clean_up_tokenization_spaces=False)


def test_random_points_split_reassembles():
    rng = random.Random(5)
    for _ in range(200):
        text = "".join(rng.choice("ab\n é") for _ in range(rng.randrange(0, 30)))
        assert "".join(split_at_random_points(text, rng)) == text


def test_short_random_spans_reassemble_and_are_mostly_short():
    rng = random.Random(6)
    for _ in range(200):
        text = "".join(rng.choice("ab\n é") for _ in range(rng.randrange(0, 30)))
        assert "".join(split_at_short_random_span(text, rng)) == text
    text = (STDLIB / "textwrap.py").read_text()[:1500]
    short = sorted(len(split_at_short_random_span(text, rng)[1]) for _ in range(2000))
    uniform = sorted(len(split_at_random_points(text, rng)[1]) for _ in range(2000))
    assert short[1000] <= 60 < 400 <= uniform[1000]  # medians: ~sqrt(1500) characters against a third of the text
    assert short[-1] > 600  # long middles still come: a cursor may cut anything


def test_nonempty_short_random_spans_never_leave_nothing_to_fill():
    rng = random.Random(7)
    for _ in range(200):
        text = "".join(rng.choice("ab\n é") for _ in range(rng.randrange(0, 30)))
        parts = split_at_short_random_span(text, rng, nonempty=True)
        assert "".join(parts) == text and (parts[1] or not text)
    text = (STDLIB / "textwrap.py").read_text()[:300]
    empty = sum(not split_at_short_random_span(text, rng)[1] for _ in range(2000))
    assert empty > 150  # `log` leaves about one middle in ten empty: log 2 / log 301
    lengths = sorted(len(split_at_short_random_span(text, rng, nonempty=True)[1]) for _ in range(2000))
    assert lengths[0] == 1 and lengths[1000] <= 30 and lengths[-1] > 200


def test_log_random_lengths_shorten_the_random_middles(tokenizer):
    texts = [(STDLIB / name).read_text() for name in ("textwrap.py", "argparse.py")]

    def median_middle_tokens(random_length):
        transform = fim_transform(tokenizer, fim_rate=1.0, segment_tokens=400,
                                  spans=SpanMix(line=0.0, node=0.0, random_length=random_length))
        lengths = sorted(len(sample) - sample.index(2) - 2
                         for sample in transform.samples(texts, random.Random(5)) if sample[1] != 3)
        return lengths[len(lengths) // 2]

    assert median_middle_tokens("log") <= median_middle_tokens("log-nonempty") <= 32
    assert 64 < median_middle_tokens("uniform")
    with pytest.raises(ValueError, match="random_length"):
        SpanMix(line=0.0, node=0.0, random_length="gaussian")


def test_fim_samples_use_both_layouts_and_reassemble_the_segment(tokenizer):
    transform = fim_transform(tokenizer, fim_rate=1.0)
    rng = random.Random(0)
    text = (STDLIB / "textwrap.py").read_text()[:3000]
    layouts = set()
    for _ in range(60):
        sample = transform.transform(text, rng)
        assert sample[0] == 1 and sample[-1] == 0 and sample.count(2) == 1 and sample.count(3) == 1
        middle_at = sample.index(2)
        if sample[1] == 3:
            layouts.add("SPM")
            suffix, prefix_and_middle = sample[2:middle_at], sample[middle_at + 1 : -1]
            assert decode(tokenizer, prefix_and_middle) + decode(tokenizer, suffix) == text
        else:
            layouts.add("PSM")
            suffix_at = sample.index(3)
            prefix, suffix, middle = sample[1:suffix_at], sample[suffix_at + 1 : middle_at], sample[middle_at + 1 : -1]
            assert decode(tokenizer, prefix) + decode(tokenizer, middle) + decode(tokenizer, suffix) == text
    assert layouts == {"PSM", "SPM"}


def psm_parts(tokenizer, sample):
    """(prefix, middle, suffix) text of a PSM sample, None for an SPM one."""
    if sample[1] == 3:
        return None
    suffix_at, middle_at = sample.index(3), sample.index(2)
    return tuple(decode(tokenizer, part) for part in (sample[1:suffix_at], sample[middle_at + 1 : -1], sample[suffix_at + 1 : middle_at]))


def test_line_spans_end_where_a_line_ends(tokenizer):
    transform = fim_transform(tokenizer, fim_rate=1.0, segment_tokens=400, spans=SpanMix(line=1.0, node=0.0))
    text = (STDLIB / "textwrap.py").read_text()
    parts = [psm_parts(tokenizer, sample) for sample in transform.samples([text], random.Random(3))]
    for prefix, middle, suffix in filter(None, parts):
        assert middle.strip() and (suffix == "" or suffix.startswith("\n"))


def test_node_spans_are_syntax_nodes_of_the_document(tokenizer):
    transform = fim_transform(tokenizer, fim_rate=1.0, segment_tokens=400, spans=SpanMix(line=0.0, node=1.0))
    text = (STDLIB / "textwrap.py").read_text()
    spans = {text[start:end] for found in node_spans(text).values() for start, end in found}
    parts = list(filter(None, (psm_parts(tokenizer, sample) for sample in transform.samples([text], random.Random(4)))))
    # a segment without a whole node (inside a long docstring) falls back to random points
    assert len(parts) >= 5 and sum(middle in spans for _prefix, middle, _suffix in parts) >= 0.7 * len(parts)


def test_the_default_mixture_teaches_short_middles(tokenizer):
    options = TrainOptions()
    mixed = fim_transform(tokenizer, fim_rate=1.0, segment_tokens=400,
                          spans=SpanMix(line=options.line_span_rate, node=options.node_span_rate))
    uniform = fim_transform(tokenizer, fim_rate=1.0, segment_tokens=400, spans=SpanMix(line=0.0, node=0.0))
    texts = [(STDLIB / name).read_text() for name in ("textwrap.py", "argparse.py", "json/decoder.py")]

    def middle_tokens(transform):
        return sorted(len(sample) - sample.index(2) - 2 for sample in transform.samples(texts, random.Random(5)) if sample[1] != 3)

    mixed_lengths, uniform_lengths = middle_tokens(mixed), middle_tokens(uniform)
    assert mixed_lengths[len(mixed_lengths) // 2] <= 64 < uniform_lengths[len(uniform_lengths) // 2]
    assert sum(length <= 64 for length in mixed_lengths) >= 0.6 * len(mixed_lengths)


def test_fim_rate_zero_gives_plain_documents(tokenizer):
    transform = fim_transform(tokenizer, fim_rate=0.0)
    text = (STDLIB / "bisect.py").read_text()
    sample = transform.transform(text, random.Random(1))
    assert sample[-1] == 0 and not {1, 2, 3} & set(sample)
    assert decode(tokenizer, sample[:-1]) == text


def test_documents_are_cut_into_context_sized_segments(tokenizer):
    text = (STDLIB / "heapq.py").read_text()
    encoded = tokenizer(text, add_special_tokens=False, split_special_tokens=True, return_offsets_mapping=True)
    segments = [segment for _offset, segment in segment_document(text, encoded["offset_mapping"], 100)]
    assert "".join(segments) == text
    assert len(segments) == math.ceil(len(encoded["input_ids"]) / 100)
    samples = list(fim_transform(tokenizer, fim_rate=0.5, segment_tokens=100).samples([text, text], random.Random(2)))
    assert len(samples) == 2 * len(segments)


def test_segment_lengths_vary_between_the_bounds_and_cover_the_document(tokenizer):
    text = (STDLIB / "heapq.py").read_text()
    encoded = tokenizer(text, add_special_tokens=False, split_special_tokens=True, return_offsets_mapping=True)
    pieces = list(segment_document(text, encoded["offset_mapping"], 200, min_tokens=20, rng=random.Random(3)))
    assert "".join(segment for _offset, segment in pieces) == text
    assert all(text[offset:].startswith(segment) for offset, segment in pieces)
    lengths = [len(tokenizer(segment, add_special_tokens=False)["input_ids"]) for _offset, segment in pieces[:-1]]
    assert min(lengths) < 60 and max(lengths) > 150  # drawn across the range, not fixed
    assert all(15 <= length <= 210 for length in lengths)  # re-tokenizing a piece alone may shift a few tokens


def test_first_fit_packing_fills_windows_with_samples_of_varied_lengths():
    rng = random.Random(5)
    samples = [[rng.randrange(5, 100) for _ in range(rng.randint(5, 60))] + [0] for _ in range(400)]
    windows = pack(samples, window_tokens=64, pad=4)
    one_at_a_time = pack(samples, window_tokens=64, pad=4, open_windows=1)
    assert (windows == 4).mean() < 0.1 < 0.2 < (one_at_a_time == 4).mean()
    rows = [" ".join(map(str, row)) for row in windows.tolist()]
    assert all(any(" ".join(map(str, sample)) in row for row in rows) for sample in samples)
    assert len(windows) * 64 - int((windows == 4).sum()) == sum(map(len, samples))


def test_packing_keeps_every_sample_whole_in_one_window():
    windows = pack([[5, 6, 0], [7, 0], [8, 9, 10, 0], [11, 12, 13, 14, 15, 16], [17, 0]], window_tokens=5, pad=4)
    assert windows.tolist() == [[5, 6, 0, 7, 0], [8, 9, 10, 0, 4], [17, 0, 4, 4, 4]]  # the 6-token sample is dropped


def middle_ends_by_walking(row: list[int], ids: FimTokens) -> list[bool]:
    """Oracle: walk the window token by token, remembering whether a middle is open."""
    marks, in_middle = [], row[0] == ids.middle
    for following in row[1:]:
        marks.append(following == ids.eos and in_middle)
        if following == ids.eos:
            in_middle = False
        elif following == ids.middle:
            in_middle = True
    return marks


def test_middle_ends_are_the_end_of_sequence_of_fim_samples_only(tokenizer):
    transform = fim_transform(tokenizer, fim_rate=0.5)
    texts = [(STDLIB / name).read_text() for name in ("textwrap.py", "bisect.py")]
    samples = list(transform.samples(texts, random.Random(8)))
    windows = pack(samples, window_tokens=129, pad=4)
    marks = middle_ends(windows, transform.ids)
    assert marks.shape == (len(windows), 128)
    assert marks.tolist() == [middle_ends_by_walking(row, transform.ids) for row in windows.tolist()]
    fim_samples = sum(2 in sample for sample in samples if len(sample) <= 129)
    assert 0 < fim_samples < len(samples) and int(marks.sum()) == fim_samples


def repeat_candidates_by_search(row: list[int], ids: FimTokens, ngram: int) -> list[int]:
    """Oracle: for each target, search the open middle's earlier text for the last place its n - 1 tokens before
    the target were seen, and take the token that followed them there when it is not the target."""
    found = []
    for position in range(len(row) - 1):
        before = row[:position + 1]
        opened = max((i for i, token in enumerate(before) if token == ids.middle), default=-1)
        closed = max((i for i, token in enumerate(before) if token == ids.eos), default=-1)
        candidate = -1
        if opened > closed:
            text, key = row[opened + 1:position + 1], row[position + 2 - ngram:position + 1]
            if len(text) >= ngram - 1:
                earlier = [i for i in range(len(text) - ngram + 1) if text[i:i + ngram - 1] == key]
                if earlier and text[earlier[-1] + ngram - 1] != row[position + 1]:
                    candidate = text[earlier[-1] + ngram - 1]
        found.append(candidate)
    return found


def test_repeat_candidates_are_the_tokens_that_would_repeat_an_earlier_ngram_of_the_open_middle(tokenizer):
    ids = FimTokens(prefix=1, middle=2, suffix=3, eos=0)
    # after <fim_middle>: 10 11 12 13, then 10 11 12 again, followed by 14: 13 is the repeat at that target
    window = [1, 3, 10, 11, 12, 2, 10, 11, 12, 13, 10, 11, 12, 14, 0, 1, 3, 2, 11, 12, 13, 4, 4]
    assert repeat_candidates(np.asarray([window]), ids, 4)[0].tolist() == (
        repeat_candidates_by_search(window, ids, 4))
    assert [i for i, token in enumerate(repeat_candidates_by_search(window, ids, 4)) if token != -1] == [12]
    assert repeat_candidates_by_search(window, ids, 4)[12] == 13  # the suffix's 10 11 12 and the next sample's don't count

    transform = fim_transform(tokenizer, fim_rate=0.8)
    texts = [(STDLIB / name).read_text() for name in ("textwrap.py", "heapq.py")]
    windows = pack(transform.samples(texts, random.Random(3)), window_tokens=129, pad=4)
    for ngram in (2, 4):
        candidates = repeat_candidates(windows, transform.ids, ngram)
        assert candidates.shape == (len(windows), 128)
        assert candidates.tolist() == [repeat_candidates_by_search(row, transform.ids, ngram)
                                       for row in windows.tolist()]
        assert (candidates >= 0).sum() > 10
