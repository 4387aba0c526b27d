"""Requests on a session a live Pi holds: carried out by Pi, or refused with what to type in Pi.

Contracts:
- A session is *held by a live Pi* when its lock body names ``program: "pi"``
  with a forwarding ``socket`` and that pid still runs (``livewriter.live_pi``).
- ``pi/compact`` for such a session is forwarded to the socket (JSON-RPC with
  LSP framing, one connection per request) with a fresh ``forRequest`` id;
  Pi runs ``ctx.compact()`` and writes the entry itself, and the
  ``pi/summarize`` its compaction sends back with that id reuses this
  request's job slot and progress bar (``Forwarding.forwarded``). Cancelling the
  request sends ``$/cancelRequest`` to Pi (which then cancels its
  compaction) and re-raises. The result is read back from the file: the
  entry Pi wrote, and ``estimatedTokensAfter`` of a fresh read of it.
- Operations Pi's extension API cannot carry out (tree navigation outside a
  command, undo) are :class:`LiveWriter` with ``data.piCommand`` (``livewriter.refuse``).
- Every await on the socket has a deadline; nothing here writes the session.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import uuid
from typing import Any

import attrs

from pi_protocol import CompactResult, methods
from pi_protocol.base import JsonDict
from pi_protocol.live import LockBody
from pi_protocol.params import CompactParams
from pi_protocol.results import Compacted, SessionChanged
from pi_sessiond.errors import NothingToCompact, PiError, Rejected, SummarizerFailed
from pi_sessiond.pipeline.compaction import estimated_tokens_after
from pi_sessiond.service.interface import Notify, ProgressFactory
from pi_sessiond.service.jobs import JobManager
from pi_sessiond.service.progress import Report, with_progress
from pi_sessiond.service.sessions import livewriter
from pi_sessiond.service.sessions.scope import Scope
from pi_sessiond.store.session import Session

CONNECT_SECONDS = 10.0
FORWARD_SECONDS = 900.0  # a forwarded compaction runs a whole summary in Pi
CANCEL_GRACE_SECONDS = 10.0
ERRORS: dict[str, type[PiError]] = {"nothingToCompact": NothingToCompact, "cancelled": Rejected}


@attrs.frozen
class Forwarding:
    """``pi/compact`` requests carried out by a live Pi; ``forwarded`` holds each one's progress report, by id,
    for the ``pi/summarize {forRequest}`` that Pi's half sends back."""

    notify: Notify
    jobs: JobManager
    forwarded: dict[str, Report] = attrs.field(factory=dict)

    async def compact_in_pi(
        self, scope: Scope, body: LockBody, params: CompactParams, progress: ProgressFactory
    ) -> CompactResult:
        """``pi/compact`` carried out by the live Pi ``body`` names: a job of the session, with a progress bar."""

        async def work() -> CompactResult:
            return await with_progress(progress, "Compacting session (in Pi)", params.work_done_token,
                                       lambda report: self._forwarded(scope, body, params, report))

        return await self.jobs.run(scope.key, "compaction", "manual", work)

    async def _forwarded(self, scope: Scope, body: LockBody, params: CompactParams, report: Report) -> CompactResult:
        request_id = uuid.uuid4().hex
        self.forwarded[request_id] = report
        report("compacting in Pi", 0)
        try:
            answer = await forward(body, methods.COMPACT,
                                   {"customInstructions": params.custom_instructions, "forRequest": request_id})
        finally:
            self.forwarded.pop(request_id, None)
        result = _result(scope, answer)
        self.notify(methods.COMPACTED, Compacted(session_id=scope.key, entry=result.entry, reason="manual"))
        self.notify(methods.SESSION_CHANGED, SessionChanged(session_id=scope.key, leaf_id=str(result.entry["id"]),
                                                            reason="compaction"))
        report("done", 100)
        return result


def _result(scope: Scope, answer: Any) -> CompactResult:
    entry = answer.get("entry") if isinstance(answer, dict) else None
    if not isinstance(entry, dict) or entry.get("type") != "compaction":
        raise SummarizerFailed("Pi answered the forwarded compaction without a compaction entry")
    path = scope.session.path
    assert path is not None
    fresh = Session.open(path)  # what Pi wrote, read back (read-only)
    after = estimated_tokens_after(fresh)
    fresh.close()
    before = int(entry.get("tokensBefore") or answer.get("tokensBefore") or 0)
    return CompactResult(entry=entry, tokens_before=before, tokens_after=after, estimated_tokens_after=after)


async def forward(body: LockBody, method: str, params: JsonDict) -> Any:
    """One request to the live Pi's socket; its error becomes a :class:`PiError`, a cancellation is passed on."""
    assert body.socket is not None
    try:
        reader, writer = await asyncio.wait_for(asyncio.open_unix_connection(body.socket), CONNECT_SECONDS)
    except (OSError, TimeoutError) as exc:
        raise livewriter.refuse(body, "compact it", "/compact") from exc
    try:
        _send(writer, {"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
        try:
            reply = await asyncio.wait_for(_read(reader), FORWARD_SECONDS)
        except asyncio.CancelledError:
            await _cancel(reader, writer)
            raise
    finally:
        writer.close()
        with contextlib.suppress(OSError):
            await asyncio.wait_for(writer.wait_closed(), CANCEL_GRACE_SECONDS)
    return _answer(reply)


async def _cancel(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Tell Pi the request is cancelled and give it a moment to answer (so it cancels its compaction)."""
    with contextlib.suppress(OSError, TimeoutError, asyncio.IncompleteReadError, ValueError):
        _send(writer, {"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": 1}})
        await asyncio.wait_for(_read(reader), CANCEL_GRACE_SECONDS)


def _answer(reply: JsonDict) -> Any:
    error = reply.get("error")
    if not isinstance(error, dict):
        return reply.get("result")
    data = error.get("data")
    reason = str(data.get("reason", "")) if isinstance(data, dict) else ""
    raise ERRORS.get(reason, SummarizerFailed)(f"Pi: {error.get('message', 'the forwarded request failed')}")


def _send(writer: asyncio.StreamWriter, message: JsonDict) -> None:
    payload = json.dumps(message, separators=(",", ":")).encode()
    writer.write(b"Content-Length: %d\r\n\r\n" % len(payload) + payload)


async def _read(reader: asyncio.StreamReader) -> JsonDict:
    """The next framed message that is a response (notifications from Pi are skipped)."""
    while True:
        head = await reader.readuntil(b"\r\n\r\n")
        length = next(int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")
                      if line.lower().startswith(b"content-length:"))
        message = json.loads(await reader.readexactly(length))
        if isinstance(message, dict) and "id" in message and "method" not in message:
            return message
