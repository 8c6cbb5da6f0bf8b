"""`fimlsp complete --context`: what other files of the project go into the prompt, and where the project ends."""

from __future__ import annotations

import json

from fimlsp.cli import main

MODELS = '''class Order:
    """An order of a customer."""

    def __init__(self, customer: str, quantity: int, price: float):
        self.customer = customer
        self.quantity = quantity
'''
USE = "from shop.models import Order\n\n\ndef make():\n    order = Order(\n    return order\n"


def _context(capsys, *flags) -> list[dict]:
    main(["complete", *flags, "--json", "--max-tokens", "4"])
    return json.loads(capsys.readouterr().out)["context"]


def test_the_declarations_of_another_file_of_the_project_go_into_the_prompt(tmp_path, capsys):
    (tmp_path / ".git").mkdir()
    (tmp_path / "shop").mkdir()
    (tmp_path / "shop" / "models.py").write_text(MODELS)
    (tmp_path / "shop" / "use.py").write_text(USE)
    target = f"{tmp_path / 'shop' / 'use.py'}:5:18"
    assert {snippet["path"] for snippet in _context(capsys, target, "--context", "workspace")} == {"shop/models.py"}
    assert _context(capsys, target, "--context", "off") == []
    assert _context(capsys, target) == []  # auto: the shipped model's window has no room for it


def test_a_project_named_elsewhere_lends_none_of_its_files(tmp_path, capsys):
    (tmp_path / "shop").mkdir()
    (tmp_path / "shop" / "models.py").write_text(MODELS)
    (tmp_path / "shop" / "use.py").write_text(USE)
    (tmp_path / "other").mkdir()
    target = f"{tmp_path / 'shop' / 'use.py'}:5:18"
    assert _context(capsys, target, "--context", "workspace", "--project", str(tmp_path / "other")) == []
