"""A key is masked before any text is cut, and a redirect says so.

A real loopback HTTP server answers with the key placed across every cut the
error path makes (the 1,000-character message limit, the 64 KiB body limit),
in JSON and in plain text; a header key (``summarizer.headers``) too.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import AsyncIterator

import attrs
import pytest

from pi_sessiond.summarizers.base import SummaryRequest
from pi_sessiond.summarizers.config import SummarizerSettings
from pi_sessiond.summarizers.errors import SummarizerError, redact
from pi_sessiond.summarizers.http import MAX_ERROR_BODY, MAX_ERROR_TEXT, HttpSummarizer
from pi_sessiond.summarizers.openai import OpenAISummarizer

KEY = "sk-mask-0123456789abcdefghijklmnopqrstuv"
HEADER_KEY = "hdr-secret-ABCDEFGHIJKLMNOPQRSTUVWXYZ"
REQUEST = SummaryRequest(system_prompt="s", prompt="<conversation>\n[User]: hi\n</conversation>", max_tokens=64)


@contextlib.asynccontextmanager
async def raw_server(status: int, body: bytes, headers: str = "") -> AsyncIterator[tuple[str, list[str]]]:
    """A one-answer-per-request HTTP server on 127.0.0.1; yields its URL and the request lines it saw."""
    seen: list[str] = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1")
        seen.append(head.split("\r\n", 1)[0])
        length = int(head.lower().split("content-length:", 1)[1].split("\r\n", 1)[0])
        await reader.readexactly(length)
        writer.write(f"HTTP/1.1 {status} X\r\ncontent-length: {len(body)}\r\n{headers}connection: close\r\n\r\n"
                     .encode() + body)
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    async with server:
        yield f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/v1", seen


def summarizer(base_url: str) -> HttpSummarizer:
    settings = SummarizerSettings(provider="openai", model="m", base_url=base_url, timeout_seconds=5.0)
    return OpenAISummarizer(attrs.evolve(settings, headers={"X-Team-Token": HEADER_KEY}), KEY)


async def failure(status: int, body: bytes, headers: str = "") -> SummarizerError:
    async with raw_server(status, body, headers) as (url, _):
        client = summarizer(url)
        try:
            with pytest.raises(SummarizerError) as info:
                await client.summarize(REQUEST)
        finally:
            await client.aclose()
    return info.value


def leaks(text: str, secret: str) -> list[str]:
    """Every piece of ``secret`` of 6 characters or more that ``text`` shows."""
    return [secret[i:i + 6] for i in range(len(secret) - 5) if secret[i:i + 6] in text]


def cases() -> list[tuple[str, bytes]]:
    out = []
    for secret in (KEY, HEADER_KEY):
        for offset in (3, len(secret) // 2, len(secret) - 4):
            pad = "x" * (MAX_ERROR_TEXT - offset)  # the secret straddles the 1,000-character cut
            out.append((f"json-{offset}", json.dumps({"error": {"message": pad + secret + " tail"}}).encode()))
            out.append((f"text-{offset}", (pad + secret + " tail").encode()))
            body = "y" * (MAX_ERROR_BODY - offset)  # ... and the 64 KiB read limit
            out.append((f"body-{offset}", (body + secret + "z" * 70_000).encode()))
    return out


@pytest.mark.parametrize(("name", "body"), cases(), ids=[c[0] for c in cases()])
async def test_a_key_across_a_cut_is_masked_before_truncation(
    name: str, body: bytes, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    error = await failure(401, body)
    shown = f"{error} {error.detail} {error.data}"
    assert leaks(shown, KEY) == [] and leaks(shown, HEADER_KEY) == []
    assert leaks(caplog.text, KEY) == [] and leaks(caplog.text, HEADER_KEY) == []


def test_redact_masks_a_secret_s_beginning_only_at_a_cut() -> None:
    assert redact("abc sk-mask-01", [KEY], cut=True) == "abc ***"
    assert redact("abc sk-mask-01", [KEY]) == "abc sk-mask-01"  # not cut: an ordinary word stays
    assert redact("abc", [KEY], cut=True) == "abc"


async def test_a_redirect_is_reported_as_a_redirect_and_not_followed() -> None:
    async with raw_server(200, b"should never be asked") as (target, seen_there):
        error = await failure(307, b"", f"location: {target}/chat/completions\r\n")
    assert "redirect" in str(error) and "truncated" not in str(error) and error.status == 307
    assert "summarizer.baseUrl" in str(error)
    assert seen_there == []  # the key never went to the other address
