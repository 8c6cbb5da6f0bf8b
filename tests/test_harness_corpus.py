"""The corpus the tests and benchmarks share (`harness.corpus`)."""

from __future__ import annotations

import os
from pathlib import Path


def test_the_fresh_line_benchmark_takes_a_line_out_and_puts_the_cursor_after_its_indentation():
    from harness.corpus import fresh_lines

    files = [Path(os.__file__).parent / name for name in ("textwrap.py", "argparse.py")]
    texts = {path.read_text(encoding="utf-8") for path in files}
    cuts = list(fresh_lines(files, 30, seed=1))
    assert len(cuts) == 30
    for left, right, code in cuts:
        indentation = left[left.rfind("\n") + 1:]
        assert indentation and not indentation.strip() and right.startswith("\n") and code == code.strip()
        assert any(text.startswith(left + code) and text.endswith(right) for text in texts)
