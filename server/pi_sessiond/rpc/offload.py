"""Heavy calls off the event loop, one session at a time, so no client waits for another's big file.

Opening a big file, listing a folder of them and building a tree, a context
or stats over a million lines take seconds; on the one event loop every other
client would wait. So the methods in :data:`OFFLOADED` run their (synchronous)
service call in a worker thread, and the loop keeps serving everyone else.

Consistency rules:

- Requests naming the same ``sessionId`` that are in :data:`GATED` run one at a
  time, in arrival order (an ``asyncio.Lock`` per session id, held while the
  thread works): an append waits for a ``getTree`` of its session to finish
  instead of changing the tree under it, without blocking the loop.
- A summary's commit (compaction, branch summary) is not a request of its
  own; :class:`~pi_sessiond.store.session.Session` serializes it with the
  threaded reads by its ``lock``.
- Two opens of one file load it once (``Registry.open_path`` holds a lock per
  resolved path), and an open by id waits for an open by path of the same file.
- A request naming a session id that is not open while opens are in flight
  waits for them (:meth:`SessionGates.after_opens`): pipelined
  ``openSession`` + ``compact`` work as when opens were inline.
- The thread also turns the result into JSON text (:class:`Ready` holding an
  ``orjson.Fragment``), so a big answer is neither converted nor encoded on the loop.
- A session opened tail-first (``service/sessions/loading.py``) is read in full in a
  worker thread before any request on it runs, except those in :data:`EARLY`
  (``pi/getContext`` of its leaf is answered from the tail; of another leaf,
  its worker thread waits for the read; ``pi/closeSession`` drops it unread):
  the loop never waits for a whole file.
- A cancelled request cannot stop its thread: an open that was cancelled may
  still finish and register the session (reopening it returns that session).
"""

from __future__ import annotations

import asyncio
import inspect
import sys
from collections.abc import Awaitable, Callable
from typing import Any

import orjson

from pi_protocol import methods, unstructure
from pi_sessiond.jsonio.deepjson import deep_dumps
from pi_sessiond.jsonio.jsontext import CHUNK, dumps_chunked

OFFLOADED: frozenset[str] = frozenset({
    methods.OPEN_SESSION, methods.LIST_SESSIONS, methods.GET_TREE, methods.GET_CONTEXT, methods.GET_ENTRIES,
    methods.GET_STATS, methods.ESTIMATE_TOKENS, methods.FORK,
})
"""Methods whose service call runs in a worker thread."""
GATED: frozenset[str] = OFFLOADED | {
    methods.APPEND, methods.SET_LABEL, methods.MASK, methods.UNMASK, methods.UNDO, methods.CLOSE_SESSION,
    methods.COMMIT_DRAFT,
}
"""Methods that wait for the other gated requests of their session."""
EARLY: frozenset[str] = frozenset({methods.GET_CONTEXT, methods.OPEN_SESSION, methods.CLOSE_SESSION})
"""Methods that do not wait for a session opened tail-first to be read in full before they start."""


def after_load(fn: Callable[..., Any],
               pending: Callable[[str | None], Callable[[], object] | None]) -> Callable[..., Any]:
    """``fn``, started only once the session its params name is read in full (in a worker thread).

    ``pending(key)``: what reads session ``key`` in full, or ``None`` when there is nothing to wait for.
    """

    def call(*args: Any) -> Any:
        load = pending(gate_key(args[0]))
        return fn(*args) if load is None else _loaded_then(load, lambda: fn(*args))

    call.__name__, call.__doc__ = fn.__name__, fn.__doc__
    return call


async def _loaded_then(load: Callable[[], object], call: Callable[[], Any]) -> Any:
    await asyncio.to_thread(load)
    result = call()
    return await result if inspect.isawaitable(result) else result


class SessionGates:
    """One ``asyncio.Lock`` per session id (dropped when nobody holds or waits for it), and the opens in flight."""

    def __init__(self) -> None:
        self._locks: dict[str, asyncio.Lock] = {}
        self._users: dict[str, int] = {}
        self._opens: set[asyncio.Future[Any]] = set()

    def opening(self, work: Awaitable[Any]) -> asyncio.Future[Any]:
        """Run an open as a task that :meth:`after_opens` can wait for."""
        task = asyncio.ensure_future(work)
        self._opens.add(task)
        task.add_done_callback(self._opens.discard)
        return task

    def after_opens(self, key: str | None, known: Callable[[str], bool], call: Callable[[], Any]) -> Any:
        """``call()`` now, or, when ``key`` is not open yet but opens are in flight, once they finished.

        A client may send ``pi/openSession`` and, without waiting, a request
        naming the id it knows from the file; that request waits for the open
        instead of failing with ``unknownSession``. Requests for sessions that
        are open never wait.
        """
        if key is None or not self._opens or known(key):
            return call()
        return self._after(set(self._opens), call)

    async def _after(self, opens: set[asyncio.Future[Any]], call: Callable[[], Any]) -> Any:
        await asyncio.wait(opens)
        result = call()
        return await result if inspect.isawaitable(result) else result

    async def run(self, key: str | None, call: Callable[[], Any], *, thread: bool) -> Any:
        """``call()`` (in a worker thread when ``thread``) while holding the gate of ``key`` (none for ``None``)."""
        if key is None:
            return await _run(call, thread)
        lock = self._locks.setdefault(key, asyncio.Lock())
        self._users[key] = self._users.get(key, 0) + 1
        try:
            async with lock:
                return await _run(call, thread)
        finally:
            self._users[key] -= 1
            if not self._users[key]:
                del self._users[key], self._locks[key]

    def __len__(self) -> int:
        return len(self._locks)


SWITCH_INTERVAL = 0.001
"""Seconds a worker thread holds the GIL before the loop may take it (Python's default 5 ms adds up per request)."""


def prefer_the_loop() -> None:
    """Let the event loop thread take the GIL back from a busy worker within :data:`SWITCH_INTERVAL`."""
    if sys.getswitchinterval() > SWITCH_INTERVAL:
        sys.setswitchinterval(SWITCH_INTERVAL)


class Ready:
    """A result already encoded as JSON (in the worker thread: a million-line context is big)."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value


def _encoded(result: Any) -> Ready:
    """``result`` as JSON text ready to be embedded in the reply (``orjson.Fragment``), made in the thread."""
    return Ready(orjson.Fragment(encode(unstructure(result))))


def encode(value: Any) -> bytes:
    """``orjson.dumps(value)``, long lists a chunk at a time so the loop thread gets the GIL in between.

    The bytes equal ``orjson.dumps(value, option=OPT_NON_STR_KEYS)``; a value too deep for orjson is
    written by :func:`~pi_sessiond.jsonio.deepjson.deep_dumps`.
    """
    if isinstance(value, list) and len(value) > CHUNK:
        return dumps_chunked(value)
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        return b"{" + b",".join(orjson.dumps(k) + b":" + encode(v) for k, v in value.items()) + b"}"
    try:
        return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS)
    except TypeError:  # nested deeper than orjson writes (255): the iterative writer (jsonio.deepjson)
        return deep_dumps(value).encode("utf-8")


async def _run(call: Callable[[], Any], thread: bool) -> Any:
    if thread:
        return await asyncio.to_thread(lambda: _encoded(call()))
    result = call()
    if inspect.isawaitable(result):
        result = await result
    return result


def gate_key(params: Any) -> str | None:
    """The session a request's typed params name (``sessionId``), else ``None``."""
    session_id = getattr(params, "session_id", None)
    return session_id if isinstance(session_id, str) else None
