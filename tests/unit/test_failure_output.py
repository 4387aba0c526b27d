"""The short explanation that replaces pytest's diff of long values (tests/conftest.py)."""

from __future__ import annotations

from tests.conftest import LONG, _first_difference, pytest_assertrepr_compare


def test_long_bytes_name_the_first_differing_line_and_the_sizes() -> None:
    left = b"same\n" * 5000 + b"left\n" + b"tail\n" * 5000
    right = b"same\n" * 5000 + b"right\n" + b"tail\n" * 5000
    lines = pytest_assertrepr_compare(None, "==", left, right)  # type: ignore[arg-type]
    assert lines is not None and len(lines) <= 6
    assert "sizes 50005 vs 50006; lines 10001 vs 10001" in lines[1]
    assert lines[2] == "first difference at line 5001:" and "left" in lines[3] and "right" in lines[4]


def test_a_longer_side_and_long_lists_are_summarized() -> None:
    text = "x\n" * LONG
    assert _first_difference(text, text + "extra\n")[-1] == f"equal up to line {LONG}; then the right has 'extra\\n'"
    items = list(range(LONG))
    assert _first_difference(items, [*items[:10], -1, *items[11:]])[1] == "first difference at index 10:"


def test_short_values_keep_pytest_s_own_diff() -> None:
    assert pytest_assertrepr_compare(None, "==", b"a", b"b") is None  # type: ignore[arg-type]
    assert pytest_assertrepr_compare(None, "!=", "x" * 5000, "y" * 5000) is None  # type: ignore[arg-type]
