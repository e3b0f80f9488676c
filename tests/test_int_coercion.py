"""Integer fields given as text: what the parser keeps, and never an error for odd digits."""

from __future__ import annotations

import pandas as pd
import pytest

from traceviz.parse.columns import nullable_ints


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("7", 7),
        (" 42 ", 42),
        ("0x10", 16),
        ("stream 7", 7),
        ("²", None),  # a superscript: str.isdigit() says digit, int() refuses it
        ("x²3", 3),
        ("٣", 3),  # an Arabic-Indic digit: a decimal digit int() reads
        ("", None),
        ("none", None),
        (None, None),
        (3.0, 3),
        (float("nan"), None),
    ],
)
def test_text_and_odd_values_become_ints_or_na(value: object, expected: int | None) -> None:
    got = nullable_ints([value, 1])
    assert got[1] == 1
    if expected is None:
        assert got[0] is pd.NA
    else:
        assert got[0] == expected
