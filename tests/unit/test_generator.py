"""The example-session generator: determinism, Pi's file format, shape coverage."""

from __future__ import annotations

import calendar
import re
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import orjson
import pytest
from tests.conftest import require

from pi_sessiond.compaction.text import utf16_len
from pi_sessiond.examples import example_path
from pi_sessiond.examples import generator as gen

Json = dict[str, Any]
ID = re.compile(r"^[0-9a-f]{8}$")
ISO = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
BASE = ["id", "parentId", "timestamp"]
ENTRY_KEYS = {
    "message": ["type", *BASE, "message"],
    "model_change": ["type", *BASE, "provider", "modelId"],
    "thinking_level_change": ["type", *BASE, "thinkingLevel"],
    "compaction": ["type", *BASE, "summary", "firstKeptEntryId", "tokensBefore", "details", "usage",
                   "fromHook", "systemMessage"],
    "branch_summary": ["type", *BASE, "fromId", "summary", "details", "fromHook"],
    "custom": ["type", "customType", "data", *BASE],
    "custom_message": ["type", "customType", "content", "display", "details", *BASE],
    "label": ["type", *BASE, "targetId", "label"],
    "session_info": ["type", *BASE, "name"],
    "future_thing": ["type", *BASE, "payload"],
    "context_edit": ["type", *BASE, "targetId", "replacement"],
    "usage": ["type", *BASE, "kind", "provider", "model", "usage", "note"],
}
V1_KEYS = {
    "message": ["type", "timestamp", "message"],
    "compaction": ["type", "timestamp", "summary", "firstKeptEntryIndex", "tokensBefore"],
}
MESSAGE_KEYS = {
    "user": ["role", "content", "timestamp"],
    "system": ["role", "content", "sections", "toolsAdded", "toolsRemoved", "timestamp"],
    "assistant": ["role", "content", "api", "provider", "model", "usage", "stopReason",
                  "timestamp", "errorMessage"],
    "toolResult": ["role", "toolCallId", "toolName", "content", "details", "isError",
                   "timestamp"],
    "bashExecution": ["role", "command", "output", "exitCode", "cancelled", "truncated",
                      "fullOutputPath", "timestamp", "excludeFromContext"],
    "custom": ["role", "customType", "content", "display", "details", "timestamp"],
    "hookMessage": ["role", "customType", "content", "display", "details", "timestamp"],
}
BLOCK_KEYS = {
    "text": ["type", "text"],
    "thinking": ["type", "thinking", "thinkingSignature"],
    "toolCall": ["type", "id", "name", "arguments"],
    "image": ["type", "data", "mimeType"],
}
USAGE_KEYS = ["input", "output", "cacheRead", "cacheWrite", "totalTokens", "cost"]
COST_KEYS = ["input", "output", "cacheRead", "cacheWrite", "total"]
SHAPES = [("linear", 3), ("long", 3), ("branchy", 3), ("kitchen-sink", 3), ("example", 3), ("pi16", 3),
          ("linear", 1), ("long", 1), ("linear", 2), ("branchy", 2)]
UNKNOWN = {"x_future"}


def make(shape: str, version: int = 3, **kw: Any) -> list[Json]:
    kw.setdefault("entries", 160)
    kw.setdefault("compaction_every", 40 if shape == "long" else None)
    return gen.generate(shape=shape, version=version, **kw)


def raw(lines: list[Json]) -> bytes:
    return b"".join(map(gen.dumps, lines))


def ms(iso: str) -> int:
    secs = calendar.timegm(time.strptime(iso[:19], "%Y-%m-%dT%H:%M:%S"))
    return secs * 1000 + int(iso[20:23])


def assert_order(obj: Json, expected: list[str], what: str) -> None:
    """Keys appear in ``expected`` order; optional ones may be missing; unknown ones trail."""
    keys = [k for k in obj if k not in UNKNOWN]
    assert keys == [k for k in expected if k in obj], f"{what}: {list(obj)}"


def walk(entry: Json, by_id: dict[str, Json]) -> list[str]:
    ids, cur = [], entry.get("parentId")
    while cur is not None:
        ids.append(cur)
        cur = by_id[cur].get("parentId")
    return ids


@pytest.fixture(scope="module")
def sink() -> list[Json]:
    return make("kitchen-sink", entries=0)


@pytest.mark.parametrize(("shape", "version"), SHAPES)
def test_same_seed_same_bytes_other_seed_other_bytes(shape: str, version: int) -> None:
    first = raw(make(shape, version, seed=5))
    assert first == raw(make(shape, version, seed=5))
    assert first != raw(make(shape, version, seed=6))


@pytest.mark.parametrize(("shape", "version"), SHAPES)
def test_lines_are_compact_json_in_pi_key_order(shape: str, version: int) -> None:
    for line in raw(make(shape, version)).splitlines(keepends=True):
        parsed = orjson.loads(line)
        assert gen.dumps(parsed) == line  # stable: what a reader re-serializes is identical
        assert b"\n" not in line[:-1]
    lines = make(shape, version)
    for entry in lines[1:]:
        table = V1_KEYS if version == 1 else ENTRY_KEYS
        assert_order(entry, table[entry["type"]], entry["type"])
        msg = entry.get("message")
        if msg is None:
            continue
        assert_order(msg, MESSAGE_KEYS[msg["role"]], msg["role"])
        for block in msg.get("content") if isinstance(msg.get("content"), list) else []:
            assert_order(block, BLOCK_KEYS[block["type"]], block["type"])
        if "usage" in msg:
            assert list(msg["usage"]) == USAGE_KEYS
            assert list(msg["usage"]["cost"]) == COST_KEYS


@pytest.mark.parametrize(("shape", "version"), [s for s in SHAPES if s[1] != 1])
def test_ids_unique_and_parents_earlier(shape: str, version: int) -> None:
    header, *entries = make(shape, version)
    assert list(header)[:5] == ["type", "version", "id", "timestamp", "cwd"]
    assert header["version"] == version
    seen: set[str] = set()
    for entry in entries:
        assert ID.match(entry["id"]) and entry["id"] not in seen
        assert entry["parentId"] is None or entry["parentId"] in seen
        seen.add(entry["id"])


@pytest.mark.parametrize(("shape", "version"), SHAPES)
def test_timestamps_increase_and_messages_agree(shape: str, version: int) -> None:
    header, *entries = make(shape, version)
    prev = ms(header["timestamp"])
    for entry in entries:
        assert ISO.match(entry["timestamp"])
        now = ms(entry["timestamp"])
        assert now > prev
        if "message" in entry:
            assert prev < entry["message"]["timestamp"] <= now
        prev = now


@pytest.mark.parametrize("shape", ["linear", "long", "branchy", "example"])
@pytest.mark.parametrize("entries", [12, 200, 1000])
def test_entry_count_is_close_to_the_request(shape: str, entries: int) -> None:
    count = len(make(shape, entries=entries)) - 1
    assert abs(count - entries) <= max(2, entries * 0.03)


PI16_ONLY = {"context_edit", "usage"}


def test_pi16_shape_has_what_pi_1_6_0_writes() -> None:
    entries = make("pi16", entries=1500, compaction_every=300)[1:]
    assert {e["type"] for e in entries} >= PI16_ONLY
    system = [e["message"] for e in entries if e["type"] == "message" and e["message"]["role"] == "system"]
    assert system[0]["sections"] and system[0]["toolsAdded"] and len(system) >= 3
    edits = [e for e in entries if e["type"] == "context_edit"]
    assert any(e["replacement"] is None for e in edits) and any(e["replacement"] for e in edits)
    compactions = [e for e in entries if e["type"] == "compaction"]
    assert len(compactions) >= 3 and all("systemMessage" in c and "usage" in c for c in compactions)
    assert sum(c["firstKeptEntryId"] == c["id"] for c in compactions) == 1  # one retain-none
    assert all(c["systemMessage"]["timestamp"] == ms(c["timestamp"]) for c in compactions)


def test_kitchen_sink_has_every_entry_type_role_and_block(sink: list[Json]) -> None:
    entries = sink[1:]
    assert {e["type"] for e in entries} == set(ENTRY_KEYS) - PI16_ONLY
    msgs = [e["message"] for e in entries if e["type"] == "message"]
    assert {m["role"] for m in msgs} == {"user", "assistant", "toolResult", "bashExecution",
                                         "custom"}
    blocks = [(m["role"], b["type"]) for m in msgs if isinstance(m.get("content"), list)
              for b in m["content"]]
    assert {("user", "image"), ("toolResult", "image"), ("assistant", "thinking"),
            ("assistant", "toolCall"), ("assistant", "text")} <= set(blocks)
    users = [m["content"] for m in msgs if m["role"] == "user"]
    assert any(isinstance(c, str) for c in users) and any(isinstance(c, list) for c in users)
    assert "image" in {b["type"] for e in entries if e["type"] == "custom_message"
                       and isinstance(e["content"], list) for b in e["content"]}


def test_kitchen_sink_assistant_edge_cases(sink: list[Json]) -> None:
    assistants = [e["message"] for e in sink[1:]
                  if e["type"] == "message" and e["message"]["role"] == "assistant"]
    stops = {m["stopReason"] for m in assistants}
    assert {"stop", "toolUse", "aborted", "error"} <= stops
    assert any(m["stopReason"] == "error" and m["errorMessage"] for m in assistants)
    assert any(m["content"] == [] for m in assistants)
    calls = [b for m in assistants for b in m["content"] if b["type"] == "toolCall"]
    assert any(c["arguments"] is None for c in calls)
    thinking = [b for m in assistants for b in m["content"] if b["type"] == "thinking"]
    assert any(len(b["thinkingSignature"]) > 100 for b in thinking)
    assert {m["provider"] for m in assistants} == {"anthropic", "openai"}


def test_kitchen_sink_bash_labels_and_summaries(sink: list[Json]) -> None:
    entries = sink[1:]
    bash = [e["message"] for e in entries
            if e["type"] == "message" and e["message"]["role"] == "bashExecution"]
    assert any(b.get("excludeFromContext") is True for b in bash)
    assert any("exitCode" not in b and b["cancelled"] for b in bash)
    assert any(b["truncated"] and b["fullOutputPath"] for b in bash)
    assert any(b["exitCode"] not in (0, None) for b in bash if "exitCode" in b)
    labels = [e for e in entries if e["type"] == "label"]
    targets = [e["targetId"] for e in labels]
    twice = next(t for t in targets if targets.count(t) >= 3)
    mine = [e for e in labels if e["targetId"] == twice]
    assert [e.get("label") is None for e in mine][-1] and len({e.get("label") for e in mine}) == 3
    summaries = [e for e in entries if e["type"] == "branch_summary"]
    assert any(e["summary"] == "" for e in summaries)
    assert all(e["fromId"] != e["parentId"] for e in summaries)
    assert sum(e["parentId"] is None for e in entries) == 2  # a second root (resetLeaf)


def test_kitchen_sink_compaction_may_keep_an_entry_off_its_path(sink: list[Json]) -> None:
    by_id = {e["id"]: e for e in sink[1:]}
    compactions = [e for e in sink[1:] if e["type"] == "compaction"]
    on_path = [c["firstKeptEntryId"] in walk(c, by_id) for c in compactions]
    assert True in on_path and False in on_path
    assert all(c["firstKeptEntryId"] in by_id for c in compactions)


def test_kitchen_sink_unicode_empty_and_unknown_values(sink: list[Json]) -> None:
    text = gen.dumps(sink[0]) + b"".join(map(gen.dumps, sink[1:]))
    decoded = text.decode()
    for needle in ("🚀", "東京", "e\u0301", "👩🏽\u200d💻", '"x_future":1', '"type":"future_thing"',
                   '"text":""', '"output":""', '"name":""', '"label":""'):
        assert needle in decoded, needle
    results = [b["text"] for e in sink[1:] if e["type"] == "message"
               and e["message"]["role"] == "toolResult" for b in e["message"]["content"]
               if b["type"] == "text"]
    exact = next(t for t in results if utf16_len(t) == 2000)
    assert exact.endswith("🚀")
    split = next(t for t in results if utf16_len(t) > 2000 and t.startswith("y"))
    units = split.encode("utf-16-le")
    assert 0xD800 <= int.from_bytes(units[3998:4000], "little") <= 0xDBFF  # unit 1999: high half
    assert sink[0]["parentSession"].endswith(".jsonl")


def test_v1_is_legacy_linear_with_index_compactions() -> None:
    header, *entries = make("long", 1, entries=300)
    assert "version" not in header and {"provider", "modelId", "thinkingLevel"} <= set(header)
    assert all("id" not in e and "parentId" not in e for e in entries)
    compactions = [e for e in entries if e["type"] == "compaction"]
    assert compactions
    for c in compactions:
        kept = entries[c["firstKeptEntryIndex"] - 1]  # the index counts the header as 0
        assert kept["type"] == "message" and kept["message"]["role"] == "user"
        assert ms(kept["timestamp"]) < ms(c["timestamp"])
    with pytest.raises(ValueError, match="version 1"):
        gen.generate(shape="branchy", version=1)


def test_v2_has_a_hook_message_and_v3_has_none() -> None:
    roles = {e["message"]["role"] for e in make("linear", 2)[1:] if e["type"] == "message"}
    assert "hookMessage" in roles
    assert all(e["message"]["role"] != "hookMessage"
               for e in make("linear", 3)[1:] if e["type"] == "message")


def test_long_compactions_keep_a_recent_user_message_on_the_path() -> None:
    _, *entries = make("long", entries=600, compaction_every=120)
    by_id = {e["id"]: e for e in entries}
    compactions = [e for e in entries if e["type"] == "compaction"]
    assert len(compactions) >= 3
    for c in compactions:
        kept = by_id[c["firstKeptEntryId"]]
        assert kept["message"]["role"] == "user" and kept["id"] in walk(c, by_id)
        assert list(c["details"]) == ["readFiles", "modifiedFiles"] and c["fromHook"] is False
        assert c["summary"].startswith("## Goal\n") and c["tokensBefore"] > 2000


def test_context_usage_grows_with_the_conversation() -> None:
    entries = make("linear", entries=400)[1:]
    usages = [e["message"]["usage"] for e in entries if e["type"] == "message"
              and e["message"]["role"] == "assistant"]
    prompts = [u["input"] + u["cacheRead"] + u["cacheWrite"] for u in usages]
    assert prompts == sorted(prompts) and prompts[-1] > 10 * prompts[0]
    chars = sum(len(gen.dumps(e)) for e in entries)
    assert chars / 8 < prompts[-1] < chars / 2  # roughly chars / 3.5 of the JSON content
    for u in usages:
        assert u["totalTokens"] == sum(u[k] for k in USAGE_KEYS[:4])
        assert u["cost"]["total"] == pytest.approx(sum(u["cost"][k] for k in COST_KEYS[:4]))


def test_branchy_is_a_tree_with_summaries_labels_and_a_name() -> None:
    entries = make("branchy", entries=500)[1:]
    types = {e["type"] for e in entries}
    assert {"branch_summary", "label", "session_info"} <= types
    parents = [e["parentId"] for e in entries]
    assert len(set(parents)) < len(parents)  # some entry has several children


@pytest.mark.parametrize(
    ("value", "text"),
    [(5e-06, "0.000005"), (3e-07, "3e-7"), (1.5000000000000002e-05, "0.000015000000000000002"),
     (0.0, "0"), (123.0, "123"), (1e21, "1e+21"), (-2.5e-07, "-2.5e-7"), (0.1, "0.1")],
)
def test_numbers_are_formatted_like_javascript(value: float, text: str) -> None:
    assert gen.dumps({"n": value}) == b'{"n":' + text.encode() + b"}\n"


def test_node_json_stringify_reproduces_every_line(sink: list[Json], tmp_path: Path) -> None:
    require(shutil.which("node") is not None, "node not installed")
    path = tmp_path / "s.jsonl"
    gen.write(path, sink + make("linear", entries=300)[1:])
    script = ('const l=require("fs").readFileSync(process.argv[1],"utf8").split("\\n");'
              'l.pop();console.log(l.filter(x=>JSON.stringify(JSON.parse(x))!==x).length)')
    out = subprocess.run(["node", "-e", script, str(path)], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "0"


def test_write_stream_matches_write(tmp_path: Path) -> None:
    kw: Json = {"shape": "branchy", "entries": 300, "seed": 3}
    lines = gen.generate(**kw)
    gen.write(tmp_path / "a.jsonl", lines)
    assert gen.write_stream(tmp_path / "b.jsonl", **kw) == len(lines)
    assert (tmp_path / "a.jsonl").read_bytes() == (tmp_path / "b.jsonl").read_bytes()
    assert (tmp_path / "a.jsonl").read_bytes().endswith(b"}\n")


def test_cli_writes_the_file_and_rejects_bad_combinations(tmp_path: Path) -> None:
    out = tmp_path / "cli.jsonl"
    argv = [str(out), "--entries", "50", "--shape", "long", "--seed", "2",
            "--compaction-every", "20"]
    assert gen.main(argv) == 0
    expected = gen.generate(entries=50, shape="long", seed=2, compaction_every=20)
    assert out.read_bytes() == raw(expected)
    bad = tmp_path / "bad.jsonl"
    with pytest.raises(SystemExit):
        gen.main([str(bad), "--shape", "kitchen-sink", "--version", "1"])
    assert not bad.exists()


def test_bundled_example_is_fresh_small_and_demo_shaped() -> None:
    path = example_path()
    data = path.read_bytes()
    assert len(data) < 200_000
    assert data == raw(gen.generate(**gen.EXAMPLE_ARGS)), "regenerate: see generator docstring"
    entries = [orjson.loads(line) for line in data.splitlines()[1:]]
    assert 150 <= len(entries) <= 250
    types = [e["type"] for e in entries]
    assert types.count("branch_summary") == 1 and types.count("label") >= 2
    assert "compaction" not in types and "session_info" in types
    assert sum(e["type"] == "message" and e["message"]["role"] == "toolResult"
               for e in entries) > 20
