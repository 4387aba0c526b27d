"""The converter: camelCase, strict types, nothing unknown lost."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pi_protocol import (
    ENTRY_TYPES,
    AssistantMessage,
    MessageEntry,
    SessionHeader,
    StructureError,
    TextContent,
    structure,
    unstructure,
)
from pi_sessiond.store.session import Session


def roundtrip(data: dict[str, Any]) -> Any:
    cls = ENTRY_TYPES.get(data.get("type"))  # type: ignore[arg-type]
    if cls is None:
        return data
    return unstructure(structure(data, cls))


def test_every_entry_of_the_real_fixture_round_trips(real_session: Path) -> None:
    session = Session.open(real_session)
    for entry in session.entries:
        assert roundtrip(entry.data) == entry.data
    header = structure(session.header, SessionHeader)
    assert header.extra["branchedFrom"].endswith(".jsonl")
    assert unstructure(header) == session.header


def test_unknown_fields_roles_blocks_and_types_survive() -> None:
    data = {"type": "message", "id": "a", "parentId": None, "timestamp": "t", "x_future": {"k": [1]},
            "message": {"role": "assistant", "content": [{"type": "text", "text": "hi", "sig2": 1},
                                                          {"type": "hologram", "bits": 3}],
                        "usage": {"input": 1, "output": 2, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 3,
                                  "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
                                  "reasoning": 7},
                        "stopReason": "stop", "timestamp": 5, "errorMessage": None}}
    entry = structure(data, MessageEntry)
    assert isinstance(entry.message, AssistantMessage)
    assert isinstance(entry.message.content[0], TextContent)
    assert entry.message.content[1] == {"type": "hologram", "bits": 3}
    assert entry.message.usage is not None and entry.message.usage.extra == {"reasoning": 7}
    assert unstructure(entry) == data
    odd_role = {"type": "message", "id": "b", "parentId": "a", "timestamp": "t",
                "message": {"role": "developer", "content": "x"}}
    assert unstructure(structure(odd_role, MessageEntry)) == odd_role
    assert roundtrip({"type": "future_thing", "id": "c", "payload": 1}) == {"type": "future_thing", "id": "c",
                                                                            "payload": 1}


def test_wire_names_are_camel_case() -> None:
    out = unstructure(structure({"type": "compaction", "id": "c", "parentId": "p", "timestamp": "t",
                                 "summary": "s", "firstKeptEntryId": "k", "tokensBefore": 3,
                                 "fromHook": False}, ENTRY_TYPES["compaction"]))
    assert list(out) == ["type", "id", "parentId", "timestamp", "summary", "firstKeptEntryId",
                         "tokensBefore", "fromHook"]


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"type": "message", "message": {"role": "user", "content": 5}},
         "message.content: expected string or array, got number"),
        ({"type": "message", "message": {"role": "assistant", "content": [{"type": "text", "text": 3}]}},
         "message.content.0.text: expected string, got number"),
        ({"type": "message"}, "message: expected object (required field missing), got null"),
        ({"type": "message", "message": {"role": "toolResult", "toolName": "x", "content": []}},
         "message.toolCallId: expected string (required field missing), got null"),
    ],
)
def test_errors_name_the_field(data: dict[str, Any], message: str) -> None:
    with pytest.raises(StructureError) as info:
        structure(data, MessageEntry)
    assert str(info.value) == message


def test_unstructure_of_data_nested_deeper_than_python_recurses_equals_the_shallow_rule() -> None:
    from pi_protocol import unstructure
    from pi_protocol.converter import _unstructure, _unstructure_deep
    from pi_protocol.session import ContextResult, SessionWarning

    shallow = ContextResult(messages=[{"role": "user", "content": [[1, {"a": None, "w": SessionWarning(line=2,
                            message="m")}]]}], thinking_level="off", model=None, tokens=3)
    assert _unstructure_deep(shallow) == _unstructure(shallow)
    deep: object = "leaf"
    for level in range(20_000):
        deep = [deep] if level % 2 else {"k": deep}
    result = unstructure(ContextResult(messages=[{"role": "user", "content": deep}], thinking_level="off",
                                       model=None, tokens=1))
    node, levels = result["messages"][0]["content"], 0
    while not isinstance(node, str):
        node, levels = (node["k"] if isinstance(node, dict) else node[0]), levels + 1
    assert (node, levels) == ("leaf", 20_000)


def test_a_value_outside_the_named_ones_is_shown_and_a_long_one_is_not() -> None:
    from pi_protocol.params import GetContextParams

    with pytest.raises(StructureError, match=r'^format: expected .pi. or .openai. or .anthropic., got string "gemini"'):
        structure({"sessionId": "s", "format": "gemini"}, GetContextParams)
    with pytest.raises(StructureError, match=r"got string$"):
        structure({"sessionId": "s", "format": "x" * 41}, GetContextParams)
