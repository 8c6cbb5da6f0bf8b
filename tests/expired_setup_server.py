"""`fimlsp serve` as on a machine so loaded that the constraint's setup always runs past its deadline.

Each language's `constrain` is called with a deadline that has already passed, and the real setup stops at its
first look at the clock: the promise is `none`, and the server decodes without a constraint in the time the
request has left. `python -m tests.expired_setup_server [serve options]`.
"""

from __future__ import annotations

import sys
import time

from fimlsp import language
from fimlsp.cli import main


def _expired(constrain):
    def constrain_too_late(self, left, right, budget=language.DEFAULT_BUDGET, deadline=None, caches=None):
        return constrain(self, left, right, budget, time.perf_counter() - 1.0, caches)

    return constrain_too_late


for each in language.languages():
    type(each).constrain = _expired(type(each).constrain)

if __name__ == "__main__":
    sys.exit(main(["serve", *sys.argv[1:]]))
