"""Builds Pi session entries one at a time, the way Pi's SessionManager appends them.

A :class:`Builder` owns the seeded RNG, the clock, the id set and the current
path (leaf = last node).  Invariants it keeps for every shape:

* keys in Pi's construction order (``type,id,parentId,timestamp,...``; ``custom``
  and ``custom_message`` put their own fields before the base; v1 has no ids);
* each entry is a child of the current leaf and becomes the leaf;
* the clock only moves forward, so entry timestamps strictly increase in file
  order, and a message's ``timestamp`` (Unix ms) lies after the previous entry's
  and no later than its own entry's;
* usage numbers follow the context: a call's prompt is the system prompt plus
  every path char so far (since the last compaction) / 3.5, with Anthropic-style
  prompt caching (``cacheRead`` = the previous prompt).
"""

from __future__ import annotations

import base64
import time
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from random import Random
from typing import Any, NamedTuple

import orjson

from pi_protocol.base import JsonDict
from pi_sessiond.examples import content as C
from pi_sessiond.examples import toolcalls

_BASE_MS = 1_762_161_164_318  # 2025-11-03T09:12:44.318Z
_SYSTEM_TOKENS = 2_480
_B62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
_OPS = {"read": "read", "edit": "edited", "write": "written"}


class Model(NamedTuple):
    """A model as assistant messages name it, with prices in $ per million tokens."""

    api: str
    provider: str
    id: str
    rates: tuple[float, float, float, float]  # input, output, cacheRead, cacheWrite


SONNET = Model("anthropic-messages", "anthropic", "claude-sonnet-4-5", (3, 15, 0.3, 3.75))
GPT = Model("openai-responses", "openai", "gpt-5", (1.25, 10, 0.125, 0))


@dataclass(slots=True)
class Node:
    """What the builder remembers about one entry on the current path."""

    id: str
    index: int  # line number in the file, header = 0 (v1 ``firstKeptEntryIndex``)
    kind: str  # role for message entries, else the entry type
    ctx: int  # context size in chars once this entry is in context
    ops: tuple[tuple[str, str], ...] = ()
    task: int = -1


def _iso(ms: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ms // 1000)) + f".{ms % 1000:03d}Z"


def _num(value: float) -> float | int:
    return int(value) if float(value).is_integer() else value


def _block_chars(block: JsonDict) -> int:
    kind = block["type"]
    if kind == "toolCall":
        return len(block["name"]) + len(orjson.dumps(block["arguments"]))
    return len(str(block.get("text", block.get("thinking", ""))))


class Builder:
    """Appends entries to a session the way Pi's SessionManager does (leaf = last append)."""

    def __init__(self, seed: int, version: int, cwd: str, max_result: int = 20_000) -> None:
        self.rng = Random(seed)
        self.version, self.cwd, self.max_result = version, cwd, max_result
        self.model, self.thinking = SONNET, "medium"
        self.clock, self.cache, self.count = _BASE_MS, 0, 0
        self.ids: set[str] = set()
        self.carry: tuple[list[str], list[str]] = ([], [])  # file lists of the last compaction
        self.path: list[Node] = []
        self.min_steps = 1  # tool-using steps per turn: min_steps..6
        self.retry: int | None = None  # task the user retries after navigating back
        self.compacted_at = 0  # line index of the last compaction (0 = none yet)
        self.out: list[JsonDict] = []

    def drain(self) -> Iterator[JsonDict]:
        """Hand over the entries built so far (keeps memory flat when streaming)."""
        out, self.out = self.out, []
        return iter(out)

    @property
    def ctx(self) -> int:
        """Context size (chars) at the leaf."""
        return self.path[-1].ctx if self.path else 0

    def header(self, **extra: str) -> JsonDict:
        """The session line (v1: legacy fields instead of ``version``)."""
        sid = str(uuid.UUID(int=self.rng.getrandbits(128), version=4))
        head: JsonDict = {"type": "session", "version": self.version, "id": sid,
                      "timestamp": _iso(self.clock), "cwd": self.cwd, **extra}
        if self.version == 1:
            del head["version"]
            head.update(provider=self.model.provider, modelId=self.model.id,
                        thinkingLevel=self.thinking)
        self.out.append(head)
        return head

    def new_id(self) -> str:
        """A fresh 8-hex-char entry id (re-drawn on collision, as Pi does)."""
        while (new := f"{self.rng.getrandbits(32):08x}") in self.ids:
            pass
        self.ids.add(new)
        return new

    def tick(self, lo: int, hi: int) -> int:
        """Advance the clock by ``lo..hi`` ms (``lo >= 1`` keeps timestamps strict)."""
        self.clock += self.rng.randint(lo, hi)
        return self.clock

    def add(self, type_: str, fields: JsonDict, *, lead: JsonDict | None = None,
            gap: tuple[int, int] = (200, 3000), kind: str = "", chars: int = 0,
            ctx: int | None = None, ops: tuple[tuple[str, str], ...] = (), task: int = -1,
            ms: int | None = None, extra: JsonDict | None = None) -> JsonDict:
        """Append one entry as a child of the leaf; it becomes the leaf."""
        stamp = _iso(self.tick(*gap) if ms is None else ms)
        self.count += 1
        if self.version == 1:
            entry, new = {"type": type_, "timestamp": stamp, **fields}, str(self.count)
        else:
            new = self.new_id()
            base = {"id": new, "parentId": self.path[-1].id if self.path else None,
                    "timestamp": stamp}
            entry = {"type": type_, **(lead or {}), **base, **fields}
        entry.update(extra or {})
        size = self.ctx + chars if ctx is None else ctx
        self.path.append(Node(new, self.count, kind or type_, size, ops, task))
        self.out.append(entry)
        return entry

    def message(self, role: str, fields: JsonDict, *, tail: JsonDict | None = None, start: bool = False,
                gap: tuple[int, int] = (5, 400), **kw: Any) -> JsonDict:
        """A ``message`` entry; ``start`` stamps the message when the request began."""
        prev, ms = self.clock, self.tick(*gap)
        lag = self.rng.randint(1, 9) if start else ms - prev - self.rng.randint(0, 25)
        msg_ms = prev + max(1, min(lag, ms - prev))
        msg = {"role": role, **fields, "timestamp": msg_ms, **(tail or {})}
        return self.add("message", {"message": msg}, kind=role, ms=ms, **kw)

    def user(self, content: str | list[JsonDict], task: int = -1, **kw: Any) -> JsonDict:
        """A user message (string or block content), after some thinking time."""
        chars = len(content) if isinstance(content, str) else sum(map(_block_chars, content))
        kw.setdefault("gap", (15_000, 240_000))
        return self.message("user", {"content": content}, chars=chars, task=task, **kw)

    def assistant(self, blocks: list[JsonDict], stop: str, *, error: str | None = None,
                  zero: bool = False, **kw: Any) -> JsonDict:
        """An assistant message with usage (all zero when ``zero``) and its file ops."""
        chars = sum(map(_block_chars, blocks))
        usage = self.usage(0, 0) if zero else self.usage(chars, self.rng.random())
        m = self.model
        fields = {"content": blocks, "api": m.api, "provider": m.provider, "model": m.id,
                  "usage": usage, "stopReason": stop}
        ops = tuple((_OPS[b["name"]], str(b["arguments"]["path"])) for b in blocks
                    if b["type"] == "toolCall" and b["name"] in _OPS
                    and isinstance(b["arguments"], dict))
        tail = None if error is None else {"errorMessage": error}
        kw.setdefault("gap", (1500, 9000 + chars * 4))
        return self.message("assistant", fields, tail=tail, start=True, chars=chars, ops=ops, **kw)

    def usage(self, out_chars: int, luck: float) -> JsonDict:
        """Usage of a call whose prompt is the whole current context (chars / 3.5)."""
        if out_chars == 0:
            counts = [0, 0, 0, 0]
        else:
            prompt = _SYSTEM_TOKENS + int(self.ctx / 3.5)
            out = max(1, int(out_chars / 3.5 * (0.9 + luck / 3)))
            if self.model.provider == "anthropic":
                fresh = 1 if luck < 0.7 else 10
                read = 0 if luck > 0.98 else min(self.cache, prompt - fresh)
                counts = [fresh, out, read, prompt - fresh - read]
            else:
                read = min(self.cache, prompt) // 128 * 128
                counts = [prompt - read, out, read, 0]
            self.cache = prompt
        cost = [rate / 1_000_000 * n for rate, n in zip(self.model.rates, counts, strict=True)]
        names = ("input", "output", "cacheRead", "cacheWrite")
        return {**dict(zip(names, counts, strict=True)), "totalTokens": sum(counts),
                "cost": {**{k: _num(c) for k, c in zip(names, cost, strict=True)},
                         "total": _num(cost[0] + cost[1] + cost[2] + cost[3])}}

    def tool_result(self, call: JsonDict, text: str, is_error: bool = False,
                    details: JsonDict | None = None, blocks: Sequence[JsonDict] = ()) -> JsonDict:
        """The ``toolResult`` for ``call``: a text block plus any extra (image) blocks."""
        fields: JsonDict = {"toolCallId": call["id"], "toolName": call["name"],
                        "content": [{"type": "text", "text": text}, *blocks]}
        if details is not None:
            fields["details"] = details
        fields["isError"] = is_error
        return self.message("toolResult", fields, chars=len(text) + 4800 * len(blocks))

    def call(self, name: str, args: JsonDict | None) -> JsonDict:
        """A ``toolCall`` block with a provider-style id."""
        prefix, size = ("toolu_01", 22) if self.model.provider == "anthropic" else ("call_", 24)
        tid = prefix + "".join(self.rng.choices(_B62, k=size))
        return {"type": "toolCall", "id": tid, "name": name, "arguments": args}

    def thinking_block(self, text: str, signed: bool = True) -> JsonDict:
        """A thinking block; unsigned ones (aborted streams) carry an empty signature."""
        sig = base64.b64encode(self.rng.randbytes(self.rng.randint(160, 420))).decode()
        return {"type": "thinking", "thinking": text, "thinkingSignature": sig if signed else ""}

    def start(self) -> None:
        """A new session's path opens with the model, then the thinking level."""
        if self.version != 1:
            self.add("model_change", {"provider": self.model.provider, "modelId": self.model.id},
                     gap=(40, 900))
            self.add("thinking_level_change", {"thinkingLevel": self.thinking}, gap=(1, 5))

    def turn(self, task_no: int, prompt: str, budget: int) -> None:
        """User request -> tool-using assistant steps -> final answer, in ``budget`` entries."""
        rng, task = self.rng, C.TASKS[task_no]
        self.user(prompt, task_no)
        steps, left = rng.randint(self.min_steps, 6), budget - 2
        for step in range(steps):
            n = min(rng.choice((1, 1, 1, 2, 2, 3)), left - 1)
            if n < 1:
                break
            picks = [toolcalls.pick_call(rng, task, (k, step, steps), self.cwd) for k in range(n)]
            calls = [self.call(name, args) for name, args, _ in picks]
            blocks: list[JsonDict] = []
            if step == 0 and self.thinking != "off" and rng.random() < 0.6:
                blocks.append(self.thinking_block(C.fill(rng.choice(C.THOUGHTS), task, rng)))
            if rng.random() < 0.4:
                lines = C.PREFACES if step else C.OPENERS
                blocks.append({"type": "text", "text": rng.choice(lines)})
            self.assistant(blocks + calls, "toolUse")
            for call, (name, args, hint) in zip(calls, picks, strict=True):
                text, err, details = toolcalls.tool_result(rng, name, args, hint, task, self.max_result)
                self.tool_result(call, text, err, details)
            left -= 1 + n
        self.assistant([{"type": "text", "text": C.fill(rng.choice(C.FINALS), task, rng)}],
                       "stop", task=task_no)

    def file_lists(self, nodes: Sequence[Node],
                   carry: tuple[list[str], list[str]] = ([], [])) -> tuple[list[str], list[str]]:
        """Pi's ``computeFileLists`` over the tool calls of ``nodes`` (plus carried lists)."""
        read, modified = set(carry[0]), set(carry[1])
        for node in nodes:
            for op, path in node.ops:
                (read if op == "read" else modified).add(path)
        return sorted(read - modified), sorted(modified)

    def compact(self) -> None:
        """Append a ``compaction`` keeping the last few turns (like Pi's auto-compaction)."""
        prev = next((i for i in range(len(self.path) - 1, -1, -1)
                     if self.path[i].kind == "compaction"), -1)
        users = [i for i in range(prev + 1, len(self.path)) if self.path[i].kind == "user"]
        if not users:
            return
        keep = users[-self.rng.randint(1, min(3, len(users) - 1))] if len(users) > 1 else users[0]
        gone = self.path[prev + 1:keep]
        files = self.file_lists(gone, self.carry if prev >= 0 else ([], []))
        tasks = list(dict.fromkeys(n.task for n in gone if n.task >= 0))
        current = C.TASKS[max(self.path[-1].task, 0)]
        summary = C.compaction_summary([C.TASKS[t] for t in tasks], current, files)
        before = _SYSTEM_TOKENS + int(self.ctx / 3.5)
        kept_ctx = self.ctx - (self.path[keep - 1].ctx if keep else 0)
        first: JsonDict = ({"firstKeptEntryIndex": self.path[keep].index} if self.version == 1
                       else {"firstKeptEntryId": self.path[keep].id})
        fields: JsonDict = {"summary": summary, **first, "tokensBefore": before}
        if self.version != 1:
            fields |= {"details": {"readFiles": files[0], "modifiedFiles": files[1]},
                       "fromHook": False}
        self.add("compaction", fields, gap=(20_000, 90_000), ctx=len(summary) + kept_ctx)
        self.carry, self.cache, self.compacted_at = files, 0, self.count

    def rewind(self, keep: int) -> list[Node]:
        """Move the leaf back so the path ends at index ``keep``; returns what was left."""
        gone, self.path = self.path[keep + 1:], self.path[:keep + 1]
        self.cache = min(self.cache, _SYSTEM_TOKENS + int(self.ctx / 3.5))
        return gone

    def branch_summary(self, from_id: str, gone: Sequence[Node]) -> JsonDict:
        """A ``branch_summary`` of the abandoned ``gone`` entries (``fromId`` = old leaf)."""
        files = self.file_lists(gone)
        task = C.TASKS[next((n.task for n in gone if n.task >= 0), 0)]
        summary = C.branch_summary(task, files)
        details = {"readFiles": files[0], "modifiedFiles": files[1]}
        fields = {"fromId": from_id, "summary": summary, "details": details, "fromHook": False}
        return self.add("branch_summary", fields, chars=len(summary), gap=(8_000, 40_000))

    def branch(self, label: bool) -> None:
        """Navigate back like Pi's ``/tree`` (to a user message's parent or an answer)."""
        marks = [i for i, n in enumerate(self.path[:-1]) if n.kind in ("user", "assistant")
                 and i > 2 and (n.kind == "user" or n.task >= 0)]
        if not marks:
            return
        target = self.rng.choice(marks)
        old_leaf = self.path[-1].id
        gone = self.rewind(target - 1 if self.path[target].kind == "user" else target)
        self.retry = next((n.task for n in gone if n.task >= 0), None)
        self.tick(5_000, 60_000)
        if self.rng.random() < 0.6:
            self.branch_summary(old_leaf, gone)
        if label:
            self.label(self.path[-1].id, self.rng.choice(C.LABELS))

    def label(self, target: str, text: str | None, **kw: Any) -> JsonDict:
        """Set (``text``), or clear (``None`` omits the field, like Pi's ``undefined``)."""
        fields = {"targetId": target} if text is None else {"targetId": target, "label": text}
        return self.add("label", fields, gap=(2_000, 20_000), **kw)

    def bash(self, command: str, output: str, exit_code: int | None, *, cancelled: bool = False,
             truncated: bool = False, full: str | None = None, exclude: bool = False) -> JsonDict:
        """A user ``!command`` (``!!`` when ``exclude``) stored as a ``bashExecution``."""
        fields: JsonDict = {"command": command, "output": output}
        if exit_code is not None:
            fields["exitCode"] = exit_code
        fields |= {"cancelled": cancelled, "truncated": truncated}
        if full is not None:
            fields["fullOutputPath"] = full
        tail = {"excludeFromContext": True} if exclude else None
        return self.message("bashExecution", fields, tail=tail, gap=(5_000, 60_000),
                            chars=len(command) + len(output))

    def hook_message(self) -> JsonDict:
        """The v2 role that the v2 -> v3 migration renames to ``custom``."""
        fields = {"customType": "git-status", "content": "On branch main\n2 files changed",
                  "display": True, "details": {"ahead": 1}}
        return self.message("hookMessage", fields, gap=(500, 3_000), chars=33)
