"""Deeply nested JSON: read and written at any depth we accept, never a RecursionError.

orjson stops at 1024 levels (read) and 255 (write), the stdlib and our own
recursive helpers at about 1000: the sizes below are larger than each of those.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.unit.store.helpers import HEADER, user, write_lines

from pi_sessiond.compaction.convert import convert_to_llm
from pi_sessiond.compaction.serialize import serialize_conversation
from pi_sessiond.compaction.text import js_stringify
from pi_sessiond.compaction.tokens import estimate_tokens
from pi_sessiond.jsonio.deepjson import MAX_DEPTH, TooDeepError, deep_dumps, deep_loads
from pi_sessiond.jsonio.jsontext import dumps, loads
from pi_sessiond.store.session import Session

SIZES = (1_500, 20_000)  # beyond orjson's and Python's limits; 20,000 is twice the 10,000


def nested(depth: int, leaf: str = "1") -> str:
    """``depth`` levels of alternating arrays and objects around ``leaf``."""
    opening = "".join('{"k":' if i % 2 else "[" for i in range(depth))
    closing = "".join("}" if i % 2 else "]" for i in reversed(range(depth)))
    return opening + leaf + closing


def depth_of(value: object) -> int:
    deepest, stack = 0, [(value, 1)]
    while stack:
        node, level = stack.pop()
        if isinstance(node, dict | list):
            deepest = max(deepest, level)
            stack.extend((child, level + 1) for child in (node.values() if isinstance(node, dict) else node))
    return deepest


def tool_call_line(eid: str, parent: str, depth: int) -> str:
    head = (f'{{"type":"message","id":"{eid}","parentId":"{parent}","timestamp":"2026-01-01T00:00:02.000Z",'
            '"message":{"role":"assistant","content":[{"type":"toolCall","id":"t1","name":"probe","arguments":'
            '{"deep":')
    return (head + nested(depth) + '}}],"api":"x","provider":"p","model":"m","usage":{"input":0,"output":0,'
            '"cacheRead":0,"cacheWrite":0,"totalTokens":0,"cost":{"input":0,"output":0,"cacheRead":0,'
            '"cacheWrite":0,"total":0}},"stopReason":"toolUse","timestamp":2}}')


def tool_result_line(eid: str, parent: str, depth: int) -> str:
    return (f'{{"type":"message","id":"{eid}","parentId":"{parent}","timestamp":"2026-01-01T00:00:03.000Z",'
            '"message":{"role":"toolResult","toolCallId":"t1","toolName":"probe","content":[{"type":"text",'
            f'"text":"ok"}}],"details":{nested(depth)},"isError":false,"timestamp":3}}}}')


def deep_session(path: Path, depth: int, header: dict[str, object] = HEADER) -> Path:
    lines = [json.dumps(header, separators=(",", ":")), json.dumps(user("a1", None, "hi"), separators=(",", ":")),
             tool_call_line("a2", "a1", depth), tool_result_line("a3", "a2", depth)]
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize(
    "text",
    ['{"a":[1,2.5,-3e2,true,false,null,"x\\u00e9\\ud800\\n"],"b":{},"c":[],"a":0}', "[]", ' [ 1 , { } ] ', '"s"',
     "-0", "1E+2", '{"":""}'],
)
def test_deep_loads_agrees_with_json_loads(text: str) -> None:
    assert json.dumps(deep_loads(text)) == json.dumps(json.loads(text))  # same values, same key order


@pytest.mark.parametrize("text", ["[1,]", '{"a" 1}', "[1", "tru", "[NaN]", '{"a":1}}', '["\x01"]', "", "{1:2}",
                                  "[1 2]", "01", '{"a":1,}'])
def test_deep_loads_refuses_what_json_parse_refuses(text: str) -> None:
    with pytest.raises(ValueError):
        deep_loads(text)
    with pytest.raises(ValueError):
        loads(text)


@pytest.mark.parametrize("depth", SIZES)
def test_read_and_written_byte_for_byte_at_depth(depth: int) -> None:
    text = nested(depth, '"a\\u2028\\ud83d\\ude00 \\ud800\\"0.000001"')
    value = loads(text.encode())
    assert depth_of(value) == depth
    # JSON.stringify's text: U+2028 and the pair as characters, the lone surrogate escaped.
    expected = nested(depth, '"a\u2028\U0001f600 \\ud800\\"0.000001"')
    assert dumps(value) == expected.encode()
    assert js_stringify(value) == expected
    assert deep_dumps([1e-7, 1e21, 0.5, float("nan"), 2**60]) == "[1e-7,1e+21,0.5,null,1152921504606846976]"


def test_the_depth_limit_is_exact() -> None:
    assert depth_of(loads(nested(MAX_DEPTH))) == MAX_DEPTH
    with pytest.raises(TooDeepError):
        loads(nested(MAX_DEPTH + 1))
    with pytest.raises(TooDeepError):
        loads("[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1))  # the innermost empty array counts too


@pytest.mark.parametrize("depth", SIZES)
def test_a_deep_session_opens_and_serves_context_tokens_and_serialization(tmp_path: Path, depth: int) -> None:
    path = deep_session(tmp_path / "s.jsonl", depth)
    before = path.read_bytes()
    session = Session.open(path)
    assert session.warnings == [] and len(session.entries) == 3
    messages = session.context().messages
    assert [m["role"] for m in messages] == ["user", "assistant", "toolResult"]
    assert depth_of(messages[1]["content"][0]["arguments"]["deep"]) == depth
    assert depth_of(messages[2]["details"]) == depth
    # Tokens count the arguments' JSON text: name + stringify(arguments), chars / 4 rounded up.
    args_chars = len("probe") + len('{"deep":') + len(nested(depth)) + 1
    assert estimate_tokens(messages[1]) == -(-args_chars // 4)
    text = serialize_conversation(convert_to_llm(messages))
    assert f"probe(deep={nested(depth)})" in text
    for entry in session.entries:
        assert dumps(entry.data) == entry.raw  # re-encoding the parsed line gives the line back
    assert path.read_bytes() == before


def test_fix_a_line_deeper_than_the_limit_is_skipped_with_a_warning_and_kept_byte_for_byte(tmp_path: Path) -> None:
    """Pi's JSON.parse reads any depth; we stop at MAX_DEPTH, skip the line and never drop it from the file."""
    header = {**HEADER, "version": 2}  # an old version: the first append rewrites the whole file
    path = deep_session(tmp_path / "s.jsonl", MAX_DEPTH + 10, header)
    deep_lines = path.read_bytes().splitlines()[2:4]
    session = Session.open(path)
    assert [(w.line, w.message) for w in session.warnings] == [
        (3, f"line nested deeper than {MAX_DEPTH} levels skipped (kept in the file)"),
        (4, f"line nested deeper than {MAX_DEPTH} levels skipped (kept in the file)"),
    ]
    assert [e.id for e in session.entries] == ["a1"]
    assert [m["role"] for m in session.context().messages] == ["user"]
    session.append([{"type": "message", "message": {"role": "user", "content": "more", "timestamp": 9}}])
    lines = path.read_bytes().splitlines()
    assert json.loads(lines[0])["version"] == 3  # rewritten as v3 …
    assert lines[2:4] == deep_lines  # … with the skipped lines where they were, byte for byte
    reopened = Session.open(path)
    assert [e.id for e in reopened.entries][:1] == ["a1"] and len(reopened.entries) == 2
    assert len(reopened.warnings) == 2


def test_a_deep_line_another_program_appended_is_folded_in(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "s.jsonl", [user("a1", None, "hi")])
    session = Session.open(path)
    with path.open("a") as f:  # another program appends a deep line
        f.write(tool_call_line("a2", "a1", 5_000) + "\n")
    session.append([{"type": "message", "message": {"role": "user", "content": "x", "timestamp": 9}}])
    assert [e.id for e in session.entries][:2] == ["a1", "a2"]
    assert depth_of(session.entry("a2").data) == 5_000 + 5
