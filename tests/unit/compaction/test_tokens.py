"""Token accounting: estimates and usage (Pi's compaction.test.ts token cases)."""

from __future__ import annotations

from typing import Any

import pytest
from tests.unit.compaction.builders import (
    PathBuilder,
    assistant_msg,
    bash_msg,
    tool_result_msg,
    usage,
    user_msg,
)

from pi_protocol import unstructure
from pi_sessiond.compaction.tokens import (
    DEFAULT_COMPACTION_SETTINGS,
    CompactionSettings,
    calculate_context_tokens,
    estimate_context_tokens,
    estimate_tokens,
    get_last_assistant_usage,
    should_compact,
)

IMAGE = {"type": "image", "data": "AAAA", "mimeType": "image/png"}


def test_estimate_is_ceil_of_quarter_chars() -> None:
    assert estimate_tokens(user_msg("")) == 0
    assert estimate_tokens(user_msg("a")) == 1
    assert estimate_tokens(user_msg("abcd")) == 1
    assert estimate_tokens(user_msg("abcde")) == 2


def test_estimate_counts_utf16_units() -> None:
    assert estimate_tokens(user_msg("\U0001f600" * 2)) == 1  # 4 units
    assert estimate_tokens(user_msg("é" * 4)) == 1


def test_user_images_count_1200_tokens() -> None:
    content: list[dict[str, Any]] = [{"type": "text", "text": "abcd"}, IMAGE, {"type": "text", "text": "efgh"}]
    assert estimate_tokens(user_msg(content)) == (8 + 4800) // 4


def test_system_messages_count_content_sections_and_added_tools() -> None:
    tools = [{"name": "read"}]
    msg = {"role": "system", "content": "abcd", "sections": {"a": "xy", "b": None, "c": ""}, "toolsAdded": tools,
           "toolsRemoved": [{"name": "bash" * 100}], "timestamp": 1}
    assert estimate_tokens(msg) == -(-(4 + 2 + len('[{"name":"read"}]')) // 4)
    assert estimate_tokens({"role": "system", "content": "", "toolsAdded": [], "timestamp": 1}) == 1  # "[]"


def test_assistant_counts_text_thinking_and_tool_calls() -> None:
    msg = assistant_msg("abcd", thinking="efgh", calls=[("read", {"path": "a.ts", "limit": 2.0})])
    # 4 + 4 + len("read") + len('{"path":"a.ts","limit":2}')
    assert estimate_tokens(msg) == (8 + 4 + 25 + 3) // 4


def test_tool_call_with_null_arguments_counts_null() -> None:
    msg = assistant_msg(None, calls=[("ls", None)])
    assert estimate_tokens(msg) == (2 + 4 + 3) // 4


@pytest.mark.parametrize("role", ["toolResult", "custom"])
def test_tool_result_and_custom_count_images_as_4800_chars(role: str) -> None:
    msg = tool_result_msg("abcd", images=2)
    msg["role"] = role
    assert estimate_tokens(msg) == (4 + 9600) // 4


def test_custom_string_content() -> None:
    assert estimate_tokens({"role": "custom", "content": "abcdefgh"}) == 2


def test_bash_counts_command_and_output_even_when_excluded() -> None:
    assert estimate_tokens(bash_msg("ls", "abcdef", excludeFromContext=True)) == 2


def test_summaries_count_bare_summary() -> None:
    assert estimate_tokens({"role": "branchSummary", "summary": "x" * 9}) == 3
    assert estimate_tokens({"role": "compactionSummary", "summary": "x" * 8}) == 2


def test_unknown_role_and_malformed_fields_count_zero() -> None:
    assert estimate_tokens({"role": "developer", "content": "abc"}) == 0
    assert estimate_tokens({"role": "assistant", "content": None}) == 0
    assert estimate_tokens({"role": "user", "content": [{"type": "text", "text": None}]}) == 0


def test_calculate_context_tokens() -> None:
    assert calculate_context_tokens(usage(0, input=1000, output=500, cacheRead=200, cacheWrite=100)) == 1800
    assert calculate_context_tokens(usage(0)) == 0
    assert calculate_context_tokens(usage(77, input=1)) == 77


def test_get_last_assistant_usage_skips_aborted_and_errors() -> None:
    b = PathBuilder()
    b.user()
    b.assistant(use=usage(0, input=100))
    b.assistant(use=usage(0, input=150), stop="error")
    b.assistant(use=usage(0, input=200), stop="aborted")
    found = get_last_assistant_usage(b.entries)
    assert found is not None and found["input"] == 100


def test_get_last_assistant_usage_none_without_assistants() -> None:
    b = PathBuilder()
    b.user()
    assert get_last_assistant_usage(b.entries) is None


def test_all_zero_usage_is_skipped() -> None:
    msgs = [assistant_msg("a", use=usage(500)), assistant_msg("b", use=usage(0))]
    est = estimate_context_tokens(msgs)
    assert (est.tokens, est.usage_tokens, est.last_usage_index) == (501, 500, 0)
    only_zero = estimate_context_tokens([assistant_msg("x" * 400, use=usage(0))])
    assert (only_zero.tokens, only_zero.last_usage_index) == (100, None)


def test_estimate_context_tokens_without_usage_sums_estimates() -> None:
    msgs = [user_msg("abcd"), user_msg("abcdefgh")]
    est = estimate_context_tokens(msgs)
    assert (est.tokens, est.usage_tokens, est.trailing_tokens, est.last_usage_index) == (3, 0, 3, None)


def test_estimate_context_tokens_adds_trailing_estimates() -> None:
    msgs = [
        user_msg("x" * 400),
        assistant_msg("y", use=usage(1000)),
        tool_result_msg("z" * 40),
        assistant_msg("w", stop="aborted", use=usage(99999)),
    ]
    est = estimate_context_tokens(msgs)
    assert (est.usage_tokens, est.trailing_tokens, est.last_usage_index) == (1000, 11, 1)
    assert est.tokens == 1011


def test_should_compact_is_strict_and_honours_enabled() -> None:
    settings = CompactionSettings(reserve_tokens=10_000)
    assert should_compact(95_000, 100_000, settings)
    assert not should_compact(89_000, 100_000, settings)
    assert not should_compact(90_000, 100_000, settings)
    assert should_compact(90_001, 100_000, settings)
    assert not should_compact(95_000, 100_000, CompactionSettings(enabled=False))


def test_default_settings_and_threshold() -> None:
    ours = ("masking", "prepareAt", "autoPerTurn")
    pi_part = {k: v for k, v in unstructure(DEFAULT_COMPACTION_SETTINGS).items() if k not in ours}
    assert pi_part == {
        "enabled": True,
        "reserveTokens": 16384,
        "keepRecentTokens": 20000,
        "modelOverrides": {},
    }
    assert DEFAULT_COMPACTION_SETTINGS.masking.enabled is False  # ours, off by default
    assert DEFAULT_COMPACTION_SETTINGS.prepare_at is None  # ours, off by default
    assert should_compact(183_617, 200_000, DEFAULT_COMPACTION_SETTINGS)
    assert not should_compact(183_616, 200_000, DEFAULT_COMPACTION_SETTINGS)


def test_unknown_context_window_makes_any_positive_value_exceed() -> None:
    assert should_compact(1, 0, CompactionSettings(reserve_tokens=0))
