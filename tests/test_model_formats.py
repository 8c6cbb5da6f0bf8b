"""The FIM prompt formats, declared as data."""

from __future__ import annotations

from fimlsp.model.formats import FORMATS


def test_every_format_has_psm_and_its_controls():
    for fmt in FORMATS.values():
        assert "psm" in fmt.orders
        for pieces in fmt.templates.values():
            assert all(control in pieces for control in fmt.controls)
