"""The cuts of held-out packages' `from ... import` lines (their files: `harness.corpus.package_files`), for the tests
and benchmarks of the judges that read the workspace (issue 49)."""

from __future__ import annotations

import re

from fimlsp.cases import Case

# A module-level `from M import a, b` line (or the first line of a bracketed one): the module and the names.
_FROM_IMPORT = re.compile(r"^from[ \t]+(\.*[\w.]*)[ \t]+import[ \t]+\(?([^#\n()\\]+)", re.MULTILINE)


def import_cuts(files) -> list[Case]:
    """Every name a module-level `from M import a, b` line imports cut out (up to an `as`), and each such whole line."""
    cases = []
    for name, text in files:
        for line in _FROM_IMPORT.finditer(text):
            cases.append(Case(name, text[:line.start()], text[line.start():line.end()], text[line.end():]))
            for imported in re.finditer(r"\w+", line.group(2)):
                if imported.group() == "as":
                    break
                start, end = line.start(2) + imported.start(), line.start(2) + imported.end()
                cases.append(Case(name, text[:start], text[start:end], text[end:]))
    return cases


def imported_module(case: Case) -> str:
    """The module of the `from` line a cut is in (with its leading dots)."""
    line = case.left[case.left.rfind("\n") + 1:] + case.middle
    found = re.match(r"from[ \t]+(\.*[\w.]*)", line)
    return found.group(1) if found else ""
