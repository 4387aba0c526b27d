"""A request made without its prompt has the output limit of the request with it."""

from __future__ import annotations

import pytest

from pi_sessiond.pipeline.requests import (
    OutputLimit,
    SummaryJob,
    branch_job,
    history_job,
    serialize_for_request,
    serialized_length,
    turn_prefix_job,
)
from pi_sessiond.summarizers.base import reads_prompt
from pi_sessiond.summarizers.offline import OfflineSummarizer

MESSAGES = [
    {"role": "user", "content": "fix the build", "timestamp": 1},
    {"role": "assistant", "content": [{"type": "text", "text": "on it"},
                                      {"type": "toolCall", "id": "t1", "name": "bash", "arguments": {"cmd": "make"}}],
     "timestamp": 2},
    {"role": "toolResult", "toolCallId": "t1", "toolName": "bash", "isError": False, "timestamp": 3,
     "content": [{"type": "text", "text": "y" * 9000}]},
]
# A window so small that the output limit follows the prompt's length exactly.
NARROW = OutputLimit(context_window=9000)


def _jobs() -> list[SummaryJob]:
    return [
        history_job(MESSAGES, limit=NARROW),
        history_job(MESSAGES, limit=NARROW, previous_summary="## Goal\n- before", instructions="paths"),
        turn_prefix_job(MESSAGES, limit=NARROW, instructions="paths"),
        branch_job(MESSAGES, limit=NARROW),
        branch_job(MESSAGES, limit=NARROW, instructions="mine", replace_instructions=True),
    ]


@pytest.mark.parametrize("job", _jobs(), ids=lambda j: j.purpose)
def test_the_output_limit_is_the_same_without_the_prompt(job: SummaryJob) -> None:
    full, bare = job.request(), job.request(with_prompt=False)
    assert bare.prompt == "" and full.prompt != ""
    assert bare.max_tokens == full.max_tokens
    assert bare.messages == full.messages


def test_the_length_is_that_of_the_serialized_text() -> None:
    for count in range(len(MESSAGES) + 1):
        assert serialized_length(MESSAGES[:count]) == len(serialize_for_request(MESSAGES[:count]))


def test_only_the_offline_summarizer_goes_without_the_prompt() -> None:
    assert not reads_prompt(OfflineSummarizer())
    assert reads_prompt(object())
