"""The loopback provider's prompt caches, as each real API bills them, on a fake clock.

OpenAI (Chat Completions), automatic prefix caching:

* A prompt is its system and message strings in order (the loopback's token
  count, 4 characters a token); a cached prefix is shared only by requests
  for the same model with the same tools.
* Only prompts of at least :data:`OPENAI_MIN_TOKENS` are cached, in blocks of
  :data:`OPENAI_BLOCK` tokens: a request reads the longest stored prefix it
  starts with, rounded down to whole blocks, and stores its own prompt
  (whole blocks) for :data:`OPENAI_TTL` seconds; a hit refreshes that.
* Reads are ``prompt_tokens_details.cached_tokens``. Models that bill cache
  writes (GPT-5.6 and later) put an implicit breakpoint on the newest
  message: the newly stored tokens are ``cache_write_tokens``, unless the
  request says ``prompt_cache_options: {"mode": "explicit"}`` (then nothing
  is stored). Older models store for free and report no writes.

Anthropic (Messages), ``cache_control`` breakpoints:

* The prompt is a list of blocks: each tool, each system block, each
  content block of each message (a string content is one block). A prefix
  is identified by the model and every block up to it; ``tool_choice`` and
  ``thinking`` are part of the identity of message blocks only (changing
  them keeps the tools and system cached, as the real API does).
* A request's breakpoints are its blocks with ``cache_control`` (at most 4).
  At each breakpoint the cache is looked up there and up to
  :data:`ANTHROPIC_LOOKBACK` blocks before it; the longest prefix found is
  read (``cache_read_input_tokens``). Every breakpoint beyond it whose prefix
  has at least :data:`ANTHROPIC_MIN_TOKENS` is written; the tokens from the
  read point to the last written breakpoint are ``cache_creation_input_tokens``;
  the rest is ``input_tokens``.
* An entry lives 5 minutes, or an hour with ``"ttl": "1h"``; a read refreshes it.

The clock is :attr:`PromptCache.now` (seconds), moved only by :meth:`PromptCache.advance`.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import threading
from dataclasses import dataclass
from typing import Any

OPENAI_MIN_TOKENS = 1024
OPENAI_BLOCK = 128
OPENAI_TTL = 300.0
ANTHROPIC_MIN_TOKENS = 1024
ANTHROPIC_LOOKBACK = 20
ANTHROPIC_TTL = {"5m": 300.0, "1h": 3600.0}
MAX_BREAKPOINTS = 4
_GPT_VERSION = re.compile(r"^gpt-(\d+)(?:\.(\d+))?(?:-|$)")


def tokens(text: str) -> int:
    """The loopback's count: 4 characters a token, rounded up."""
    return math.ceil(len(text) / 4)


def strings(value: Any) -> list[str]:
    """Every string of a request part that reaches the model (not ``type``, ``role``, ``cache_control``)."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for key, v in value.items() if key not in ("type", "role", "cache_control") for s in strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in strings(v)]
    return []


def bills_cache_writes(model: str) -> bool:
    """GPT-5.6 and later (and ``gpt-daybreak-…``): an implicit, billed breakpoint on the newest message."""
    name = model.rsplit("/", 1)[-1].lower()
    version = _GPT_VERSION.match(name)
    if name.startswith("gpt-daybreak-"):
        return True
    return version is not None and (int(version.group(1)), int(version.group(2) or 0)) >= (5, 6)


@dataclass(frozen=True)
class CacheUsage:
    """What one request read and wrote, and its whole prompt, in tokens."""

    prompt: int
    read: int = 0
    write: int = 0


def _common_prefix(a: str, b: str) -> int:
    n = min(len(a), len(b))
    low, high = 0, n
    while low < high:  # binary search on equal prefixes: the prompts are long
        mid = (low + high + 1) // 2
        if a[:mid] == b[:mid]:
            low = mid
        else:
            high = mid - 1
    return low


class PromptCache:
    """Both providers' caches (see the module docstring); safe to share between threads."""

    def __init__(self) -> None:
        self.now = 0.0
        self._lock = threading.Lock()
        self._openai: dict[str, dict[str, float]] = {}
        self._anthropic: dict[str, float] = {}

    def advance(self, seconds: float) -> None:
        """Move the fake clock forward."""
        with self._lock:
            self.now += seconds

    def clear(self) -> None:
        """Forget every cached prefix."""
        with self._lock:
            self._openai.clear()
            self._anthropic.clear()

    # -- OpenAI -----------------------------------------------------------------

    def openai(self, body: dict[str, Any]) -> CacheUsage:
        """Read and store the prefix of one Chat Completions request."""
        text = "".join(strings(body.get("messages")))
        prompt = tokens(text)
        if prompt < OPENAI_MIN_TOKENS:
            return CacheUsage(prompt)
        key = json.dumps([body.get("model"), body.get("tools")], sort_keys=True)
        with self._lock:
            stored = self._openai.setdefault(key, {})
            for old in [t for t, expires in stored.items() if expires <= self.now]:
                del stored[old]
            best = max(stored, key=lambda t: _common_prefix(t, text), default="")
            chars = _common_prefix(best, text)
            read = min(chars // 4 // OPENAI_BLOCK * OPENAI_BLOCK, prompt)
            read = read if read >= OPENAI_MIN_TOKENS else 0
            if read:
                stored[best] = self.now + OPENAI_TTL
            return CacheUsage(prompt, read, self._openai_store(body, stored, text, prompt, read))

    def _openai_store(self, body: dict[str, Any], stored: dict[str, float], text: str, prompt: int, read: int) -> int:
        options = body.get("prompt_cache_options")
        explicit = isinstance(options, dict) and options.get("mode") == "explicit"
        billed = bills_cache_writes(str(body.get("model")))
        if billed and explicit:
            return 0
        whole = prompt // OPENAI_BLOCK * OPENAI_BLOCK
        stored[text[: whole * 4]] = self.now + OPENAI_TTL
        return max(0, whole - read) if billed else 0

    # -- Anthropic --------------------------------------------------------------

    def anthropic(self, body: dict[str, Any]) -> CacheUsage:
        """Read and write the breakpoints of one Messages request."""
        blocks = _anthropic_blocks(body)
        sizes = [tokens("".join(strings(b))) for _, b in blocks]
        marks = [i for i, (_, b) in enumerate(blocks) if isinstance(b, dict) and b.get("cache_control")]
        if not marks:
            return CacheUsage(tokens("".join(strings(body.get("system"))) + "".join(strings(body.get("messages")))))
        ids, total = _prefix_ids(body, blocks), [0]
        for size in sizes:
            total.append(total[-1] + size)
        with self._lock:
            hit = self._anthropic_read(ids, marks[:MAX_BREAKPOINTS])
            read = total[hit + 1] if hit >= 0 else 0
            written = 0
            for mark in marks[:MAX_BREAKPOINTS]:
                if mark > hit and total[mark + 1] >= ANTHROPIC_MIN_TOKENS:
                    self._anthropic[ids[mark]] = self.now + _ttl(blocks[mark][1])
                    written = total[mark + 1] - read
            return CacheUsage(total[-1], read, written)

    def _anthropic_read(self, ids: list[str], marks: list[int]) -> int:
        hit = -1
        for mark in marks:
            for i in range(mark, max(-1, mark - ANTHROPIC_LOOKBACK - 1), -1):
                expires = self._anthropic.get(ids[i])
                if expires is not None and expires > self.now:
                    if i > hit:
                        hit = i
                    break
        if hit >= 0:
            self._anthropic[ids[hit]] = max(self._anthropic[ids[hit]], self.now + ANTHROPIC_TTL["5m"])
        return hit


def _ttl(block: dict[str, Any]) -> float:
    control = block.get("cache_control")
    return ANTHROPIC_TTL.get(str(control.get("ttl", "5m")), 300.0) if isinstance(control, dict) else 300.0


def _anthropic_blocks(body: dict[str, Any]) -> list[tuple[str, Any]]:
    """``(where, block)`` for every tool, system block and message content block, in prompt order."""
    blocks: list[tuple[str, Any]] = [("tools", t) for t in body.get("tools") or []]
    system = body.get("system")
    blocks += [("system", b) for b in (system if isinstance(system, list) else [system] if system else [])]
    for message in body.get("messages") or []:
        content = message.get("content") if isinstance(message, dict) else None
        role = message.get("role") if isinstance(message, dict) else None
        for block in content if isinstance(content, list) else [content]:
            blocks.append((f"message:{role}", block))
    return blocks


def _prefix_ids(body: dict[str, Any], blocks: list[tuple[str, Any]]) -> list[str]:
    """The identity of the prefix ending at each block (see the module docstring)."""
    digest = hashlib.sha256(json.dumps(body.get("model")).encode())
    settings = json.dumps([body.get("tool_choice"), body.get("thinking")], sort_keys=True).encode()
    ids = []
    for where, block in blocks:
        plain = {k: v for k, v in block.items() if k != "cache_control"} if isinstance(block, dict) else block
        digest.update(json.dumps([where, plain], sort_keys=True).encode())
        mark = digest.copy()
        if where.startswith("message:"):
            mark.update(settings)
        ids.append(mark.hexdigest())
    return ids
