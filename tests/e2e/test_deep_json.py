"""The real daemon serves entries nested hundreds and tens of thousands of levels deep.

A raw JSON-RPC client (``cli/rpcclient.py``, which reads replies of any depth)
drives ``python -m pi_sessiond serve``: pytest-lsp's client parses replies with
the stdlib, which stops at ~1000 levels. A watchdog kills the daemon if a
reply never comes, so a hang fails the test instead of blocking it.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
from tests.e2e.daemon_client import TIMEOUT, serve_command
from tests.unit.store.test_deep_json import deep_session, depth_of, nested

from pi_sessiond.cli.rpcclient import RpcClient
from pi_sessiond.jsonio.jsontext import MAX_DEPTH


def run_daemon(calls: list[tuple[str, dict[str, Any]]], path: Path) -> list[Any]:
    client, proc = RpcClient.spawn(serve_command())
    watchdog = threading.Timer(TIMEOUT * 2, proc.kill)
    watchdog.start()
    try:
        client.request("initialize", {"processId": None, "rootUri": None, "capabilities": {}})
        client.notify("initialized", {})
        opened = client.request("pi/openSession", {"path": str(path)})
        results = [opened]
        for method, params in calls:
            results.append(client.request(method, {"sessionId": opened["sessionId"], **params}))
        client.request("shutdown")
        client.notify("exit")
        proc.wait(timeout=TIMEOUT)
        return results
    finally:
        watchdog.cancel()
        proc.kill()
        proc.wait()


CALLS: list[tuple[str, dict[str, Any]]] = [
    ("pi/getContext", {}),
    ("pi/getEntries", {"since": "root"}),
    ("pi/getTree", {}),
    ("pi/getStats", {}),
    ("pi/estimateTokens", {}),
    ("pi/append", {"entries": [{"type": "message", "message": {"role": "toolResult", "toolCallId": "t2",
                                                                "toolName": "probe", "content": [],
                                                                "details": "DEEP", "isError": False,
                                                                "timestamp": 4}}]}),
    ("pi/getContext", {}),
    ("pi/fork", {"entryId": "a3"}),
]


@pytest.mark.parametrize("depth", [300, 20_000])
def test_every_method_works_on_deep_entries(tmp_path: Path, depth: int) -> None:
    path = deep_session(tmp_path / "s.jsonl", depth)
    calls = list(CALLS)
    calls[5] = ("pi/append", {"entries": [_with_details(CALLS[5][1]["entries"][0], nested(depth))]})
    opened, context, entries, tree, stats, tokens, appended, context2, forked = run_daemon(calls, path)
    assert appended["leafId"] == appended["ids"][0] and len(appended["ids"]) == 1
    assert opened["entryCount"] == 3 and opened["warnings"] == []
    messages = context["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "toolResult"]
    assert depth_of(messages[1]["content"][0]["arguments"]["deep"]) == depth
    assert depth_of(messages[2]["details"]) == depth
    assert [e["id"] for e in entries["entries"]] == ["a1", "a2", "a3"]
    assert tree["total"] == 3
    assert stats["messageCounts"]["toolCalls"] == 1
    assert tokens["tokens"] == context["tokens"] > depth // 2  # the arguments' JSON text is counted
    assert depth_of(context2["messages"][-1]["details"]) == depth  # a deep entry appended over the wire …
    last = path.read_bytes().splitlines()[-1]
    assert nested(depth).encode() in last  # … and written byte for byte as JSON.stringify writes it
    assert Path(forked["path"]).read_bytes().splitlines()[3] == path.read_bytes().splitlines()[3]


def _with_details(entry: dict[str, Any], text: str) -> dict[str, Any]:
    from pi_sessiond.jsonio.jsontext import loads

    return {**entry, "message": {**entry["message"], "details": loads(text)}}


def test_a_line_too_deep_to_read_is_a_warning_and_the_rest_is_served(tmp_path: Path) -> None:
    path = deep_session(tmp_path / "s.jsonl", MAX_DEPTH + 1)
    before = path.read_bytes()
    opened, context = run_daemon([("pi/getContext", {})], path)
    assert [w["line"] for w in opened["warnings"]] == [3, 4]
    assert [m["role"] for m in context["messages"]] == ["user"]
    assert path.read_bytes() == before
