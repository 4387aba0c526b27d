"""A prompt built from a conversation's pieces is the prompt of the joined text, byte for byte."""

from __future__ import annotations

import pytest

from pi_sessiond.compaction.prompts import build_branch_prompt, build_summary_prompt, build_turn_prefix_prompt
from pi_sessiond.compaction.serialize import conversation_parts, serialize_conversation
from pi_sessiond.pipeline.requests import parts_for_request, serialize_for_request

PIECES = ["[User]: fix the build", "[Assistant]: done\n\nwith a blank line", "", "[Tool result]: ok"]


@pytest.mark.parametrize("previous", [None, "## Goal\n- earlier"])
@pytest.mark.parametrize("instructions", [None, "keep the paths"])
def test_pieces_make_the_prompt_of_the_joined_text(previous: str | None, instructions: str | None) -> None:
    text = "\n\n".join(PIECES)
    assert build_summary_prompt(PIECES, previous, instructions) == build_summary_prompt(text, previous, instructions)
    assert build_turn_prefix_prompt(PIECES, instructions) == build_turn_prefix_prompt(text, instructions)
    for replace in (False, True):
        assert build_branch_prompt(PIECES, instructions, replace) == build_branch_prompt(text, instructions, replace)


def test_one_piece_and_no_piece() -> None:
    assert build_summary_prompt(["only"]) == build_summary_prompt("only")
    assert build_summary_prompt([]) == build_summary_prompt("")


def test_the_parts_join_to_the_serialized_texts() -> None:
    long_result = "x" * 5000
    messages = [
        {"role": "user", "content": "hello", "timestamp": 1},
        {"role": "toolResult", "toolCallId": "t", "toolName": "bash", "isError": False, "timestamp": 2,
         "content": [{"type": "text", "text": long_result}]},
    ]
    assert "\n\n".join(conversation_parts(messages)) == serialize_conversation(messages)
    assert "\n\n".join(parts_for_request(messages)) == serialize_for_request(messages)
