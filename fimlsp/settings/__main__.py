"""`python -m fimlsp.settings write` makes the files of the settings from their declaration; `check` names the
stale ones and exits 1 if there are any."""

import sys

from fimlsp.settings.files import ROOT, made, stale


def main(argv: list[str]) -> int:
    if argv not in (["write"], ["check"]):
        print("usage: python -m fimlsp.settings write|check", file=sys.stderr)
        return 2
    for path in stale():
        if argv == ["write"]:
            path.write_text(made(path), encoding="utf-8")
            print(f"wrote {path.relative_to(ROOT)}")
        else:
            print(f"{path.relative_to(ROOT)} is not what the declaration makes: python -m fimlsp.settings write")
    return 1 if argv == ["check"] and stale() else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
