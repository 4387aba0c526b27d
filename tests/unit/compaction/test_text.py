"""JavaScript string semantics: lengths, JSON.stringify, sort order, prefixes."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pi_sessiond.compaction.text import (
    UNDEFINED,
    js_number,
    js_object_items,
    js_sort_key,
    js_sorted,
    js_stringify,
    js_template,
    js_truthy,
    utf16_len,
    utf16_prefix,
    utf16_units,
)

EMOJI = "\U0001f600"  # two UTF-16 units


def test_utf16_len_counts_astral_characters_twice() -> None:
    assert utf16_len("abc") == 3
    assert utf16_len("é") == 1
    assert utf16_len(EMOJI) == 2
    assert utf16_len("a" + EMOJI + "b") == 4


def test_utf16_len_counts_a_lone_surrogate_once() -> None:
    assert utf16_len("\ud800") == 1
    assert utf16_len("x\udc00") == 2


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (1, "1"),
        (-7, "-7"),
        (1.0, "1"),
        (-0.0, "0"),
        (100.0, "100"),
        (1.5, "1.5"),
        (0.1, "0.1"),
        (1e21, "1e+21"),
        (1e20, "100000000000000000000"),
        (1.5e-7, "1.5e-7"),
        (0.000001, "0.000001"),
        (1e-7, "1e-7"),
        (123456789.125, "123456789.125"),
        (2**53 + 2, "9007199254740994"),
        (12345678901234567890, "12345678901234567000"),
        (10**400, "Infinity"),
    ],
)
def test_js_number_formats_like_javascript(value: int | float, expected: str) -> None:
    assert js_number(value) == expected


def test_js_stringify_is_compact_and_keeps_key_order() -> None:
    value = {"path": "a.ts", "offset": 1.0, "flags": [True, None, False], "z": {"b": 1, "a": 2}}
    assert js_stringify(value) == '{"path":"a.ts","offset":1,"flags":[true,null,false],"z":{"b":1,"a":2}}'


def test_js_stringify_puts_array_index_keys_first_in_numeric_order() -> None:
    value = {"b": 1, "10": 2, "2": 3, "01": 4, "a": 5}
    assert js_stringify(value) == '{"2":3,"10":2,"b":1,"01":4,"a":5}'
    assert [k for k, _ in js_object_items(value)] == ["2", "10", "b", "01", "a"]


def test_js_stringify_escapes_like_javascript() -> None:
    text = 'q"b\\s/\b\f\n\r\t\x00\x1f\x7f é' + EMOJI + "\u2028"
    expected = '"q\\"b\\\\s/\\b\\f\\n\\r\\t\\u0000\\u001f\x7f é' + EMOJI + '\u2028"'
    assert js_stringify(text) == expected


def test_js_stringify_escapes_lone_surrogates_but_keeps_pairs() -> None:
    assert js_stringify("a\ud800b") == '"a\\ud800b"'
    assert js_stringify("\udc00") == '"\\udc00"'
    assert js_stringify("\ud83d\ude00") == '"\ud83d\ude00"'


def test_js_stringify_non_finite_floats_become_null() -> None:
    assert js_stringify(float("inf")) == "null"
    assert js_stringify(float("nan")) == "null"


@given(
    st.recursive(
        st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.text(),
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text("abc", min_size=1), inner, max_size=4),
        max_leaves=12,
    )
)
def test_js_stringify_agrees_with_json_for_plain_data(value: object) -> None:
    # Without floats, index-like keys or surrogates JSON.stringify equals compact json.dumps.
    assert js_stringify(value) == json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def test_js_sort_key_orders_by_utf16_code_units() -> None:
    # U+FF61 sorts after an astral character in code points but before it in UTF-16.
    items = ["\uff61", EMOJI, "b", "B", "a"]
    assert js_sorted(items) == ["B", "a", "b", EMOJI, "\uff61"]
    assert js_sort_key("\ud800") < js_sort_key("\ue000")


def test_utf16_prefix_counts_units() -> None:
    assert utf16_prefix("abcdef", 3) == "abc"
    assert utf16_prefix("é" * 5, 2) == "éé"
    assert utf16_prefix(EMOJI + "ab", 3) == EMOJI + "a"
    assert utf16_prefix("abc", 0) == ""


def test_never_split_surrogate_pair_in_prefix() -> None:
    assert utf16_prefix("a" + EMOJI + "b", 2) == "a"
    assert utf16_prefix(EMOJI, 1) == ""


def test_utf16_prefix_keeps_a_lone_high_surrogate_that_was_already_lone() -> None:
    assert utf16_prefix("a\ud800b", 2) == "a\ud800"


def test_utf16_units_splits_pairs() -> None:
    assert utf16_units("a" + EMOJI) == ["a", "\ud83d", "\ude00"]


def test_js_template_and_truthiness() -> None:
    assert js_template(UNDEFINED) == "undefined"
    assert js_template(None) == "null"
    assert js_template(True) == "true"
    assert js_template(2.0) == "2"
    assert js_template([1, None, "a"]) == "1,,a"
    assert js_template({"a": 1}) == "[object Object]"
    assert not js_truthy("") and not js_truthy(0) and not js_truthy(None) and not js_truthy(UNDEFINED)
    assert js_truthy({}) and js_truthy([]) and js_truthy("0") and not js_truthy(float("nan"))
