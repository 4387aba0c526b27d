"""File-operation tracking: which tool calls count as read and modified files."""

from __future__ import annotations

from tests.unit.compaction.builders import assistant_msg, tool_result_msg, user_msg

from pi_sessiond.compaction.fileops import (
    FileOperations,
    FileOpsCollector,
    compute_file_lists,
    format_file_operations,
)


def test_read_write_edit_are_extracted_from_assistant_tool_calls() -> None:
    ops = FileOpsCollector()
    ops.add_message(
        assistant_msg(
            None,
            calls=[
                ("read", {"path": "r.ts", "offset": 1}),
                ("write", {"path": "w.ts", "content": "x"}),
                ("edit", {"path": "e.ts", "oldText": "a", "newText": "b"}),
                ("bash", {"command": "cat x.ts", "path": "ignored.ts"}),
                ("read", {"file": "other-key.ts"}),
                ("read", {"path": ""}),
                ("read", {"path": 7}),
                ("read", None),
            ],
        )
    )
    assert ops.freeze() == FileOperations(frozenset({"r.ts"}), frozenset({"w.ts"}), frozenset({"e.ts"}))


def test_only_assistant_messages_count() -> None:
    ops = FileOpsCollector()
    fake = user_msg("x")
    fake["content"] = [{"type": "toolCall", "name": "read", "arguments": {"path": "u.ts"}}]
    ops.add_message(fake)
    ops.add_message(tool_result_msg("x", "read"))  # a tool result's own name is no file op
    ops.add_message(None)
    assert ops.freeze() == FileOperations()


def test_codemode_nested_calls_on_tool_results_count() -> None:
    ops = FileOpsCollector()
    result = tool_result_msg("script ran", "codemode")
    result["nestedCalls"] = {"calls": [
        {"id": "1", "name": "read", "arguments": {"path": "a.ts"}, "status": "ok"},
        {"id": "2", "name": "edit", "argumentsBytes": 90000, "status": "ok"},  # arguments dropped: no path
        {"id": "3", "name": "write", "arguments": {"path": ""}, "status": "ok"},
        {"id": "4", "name": "bash", "arguments": {"path": "b.ts"}, "status": "ok"},
    ]}
    ops.add_message(result)
    ops.add_message({**tool_result_msg("x"), "nestedCalls": {"calls": "not a list"}})
    assert ops.freeze() == FileOperations(read=frozenset({"a.ts"}))


def test_details_fold_in_unless_from_hook() -> None:
    ops = FileOpsCollector()
    ops.add_details({"details": {"readFiles": ["a"], "modifiedFiles": ["b"]}, "fromHook": False})
    ops.add_details({"details": {"readFiles": ["hook"], "modifiedFiles": ["hook2"]}, "fromHook": True})
    ops.add_details({"details": {"readFiles": "not-a-list"}})
    ops.add_details({"details": None})
    assert ops.freeze() == FileOperations(frozenset({"a"}), frozenset(), frozenset({"b"}))


def test_compute_file_lists_modified_wins_over_read_and_sorts_like_js() -> None:
    ops = FileOperations(
        read=frozenset({"b.ts", "a.ts", "shared.ts", "\uff61.ts", "\U0001f600.ts"}),
        written=frozenset({"shared.ts", "Z.ts"}),
        edited=frozenset({"m.ts"}),
    )
    lists = compute_file_lists(ops)
    assert lists.read_files == ("a.ts", "b.ts", "\U0001f600.ts", "\uff61.ts")
    assert lists.modified_files == ("Z.ts", "m.ts", "shared.ts")


def test_format_file_operations() -> None:
    assert format_file_operations([], []) == ""
    assert format_file_operations(["a", "b"], []) == "\n\n<read-files>\na\nb\n</read-files>"
    assert format_file_operations([], ["c"]) == "\n\n<modified-files>\nc\n</modified-files>"
    assert format_file_operations(["a"], ["c"]) == (
        "\n\n<read-files>\na\n</read-files>\n\n<modified-files>\nc\n</modified-files>"
    )
