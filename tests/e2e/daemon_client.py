"""Shared helpers for end-to-end tests of the ``pi/*`` methods against the real daemon.

The daemon runs as a subprocess (``python -m pi_sessiond serve``) driven by a
pytest-lsp ``LanguageClient`` with the dict-preserving converter. Hang traps
avoided:

* every wait has a deadline (:func:`call`, :func:`wait_event`, :func:`settle`);
* requests that may be cancelled are sent at once with
  ``protocol.send_request`` (:func:`send`), never the lazy ``send_request_async``;
* notifications are recorded by registered features into ``client.events``
  as they arrive, so a waiter can never miss one that came first;
* the environment is read when the daemon starts, so the subprocess inherits
  the ``PI_CODING_AGENT_DIR`` of the autouse fixture in ``tests/conftest.py``.

Hooks: the client answers ``pi/beforeCompact``, ``pi/beforeTree`` and
``pi/reviewSummary`` with the callables in ``client.hook_impl`` (sync or
async, ``params -> answer``; absent means ``null``) and records every call in
``client.hook_calls`` as ``(method, params)``.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
import os
import subprocess
import sys
import time
import warnings
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from lsprotocol import types
from pytest_lsp import LanguageClient, LspSpecificationWarning
from pytest_lsp.client import register_lsp_features

from pi_sessiond.examples import generator
from pi_sessiond.rpc.converter import raw_converter

TIMEOUT = 60.0
LOOPBACK_KEY = "sk-loopback-secret-do-not-leak"
NOTIFICATIONS = (
    "pi/compactionStarted",
    "pi/compactionEnded",
    "pi/compacted",
    "pi/compactionFailed",
    "pi/treeNavigated",
    "pi/sessionChanged",
    "pi/sessionLive",
    "pi/sessionLoaded",
)
HOOKS = {"pi/beforeCompact": "beforeCompact", "pi/beforeTree": "beforeTree", "pi/reviewSummary": "reviewSummary"}


def serve_command() -> list[str]:
    """``python -m pi_sessiond serve``."""
    return [sys.executable, "-m", "pi_sessiond", "serve"]


def loopback_settings(base_url: str, **summarizer: Any) -> dict[str, Any]:
    """Settings that send summaries to the loopback provider at ``base_url``."""
    return {
        "summarizer": {
            "provider": "openai",
            "baseUrl": base_url + "/v1",
            "model": "loopback",
            "apiKeyEnv": "LOOPBACK_KEY",
            **summarizer,
        }
    }


def make_client() -> LanguageClient:
    """A pytest-lsp client with the dict converter, event recording and scriptable hooks."""
    client = LanguageClient(converter_factory=raw_converter)
    register_lsp_features(client)
    client.events: list[tuple[str, Any]] = []  # type: ignore[misc]
    client.hook_calls: list[tuple[str, Any]] = []  # type: ignore[misc]
    client.hook_impl: dict[str, Callable[[Any], Any]] = {}  # type: ignore[misc]

    def recorder(method: str) -> Callable[[Any], None]:
        def record(params: Any) -> None:
            client.events.append((method, params))  # type: ignore[attr-defined]

        return record

    for method in NOTIFICATIONS:
        client.feature(method)(recorder(method))

    def hook(method: str) -> Callable[[Any], Any]:
        async def answer(params: Any) -> Any:
            client.hook_calls.append((method, params))  # type: ignore[attr-defined]
            impl = client.hook_impl.get(HOOKS[method])  # type: ignore[attr-defined]
            if impl is None:
                return None
            result = impl(params)
            return await result if inspect.isawaitable(result) else result

        return answer

    for method in HOOKS:
        client.feature(method)(hook(method))
    return client


def capabilities(*, progress: bool = True, hooks: list[str] | None = None) -> types.ClientCapabilities:
    return types.ClientCapabilities(
        window=types.WindowClientCapabilities(work_done_progress=progress),
        experimental={"pi": {"hooks": hooks or []}},
    )


class Daemons:
    """Starts initialized daemons for one test and stops them all afterwards."""

    def __init__(self, tmp_path: Path) -> None:
        self.tmp_path = tmp_path
        self.sessions_dir = tmp_path / "sessions"
        self.clients: list[LanguageClient] = []

    async def start(
        self,
        settings: dict[str, Any] | None = None,
        *,
        hooks: list[str] | None = None,
        progress: bool = True,
        sessions_dir: Path | None = None,
        env: dict[str, str] | None = None,
    ) -> LanguageClient:
        client = make_client()
        full_env = {**os.environ, "LOOPBACK_KEY": LOOPBACK_KEY, **(env or {})}
        await asyncio.wait_for(client.start_io(*serve_command(), env=full_env), TIMEOUT)
        self.clients.append(client)
        options: dict[str, Any] = {"sessionsDir": str(sessions_dir or self.sessions_dir)}
        if settings is not None:
            options["settings"] = settings
        result = await asyncio.wait_for(
            client.initialize_session(
                types.InitializeParams(
                    capabilities=capabilities(progress=progress, hooks=hooks), initialization_options=options
                )
            ),
            TIMEOUT,
        )
        client.init_result = result  # type: ignore[attr-defined]
        return client

    async def stop_all(self) -> None:
        for client in self.clients:
            with contextlib.suppress(Exception):
                if not client.stopped and client._server is not None and client._server.returncode is None:
                    await asyncio.wait_for(client.shutdown_session(), 5)
            with contextlib.suppress(Exception):
                await asyncio.wait_for(client.stop(), 5)
            server = client._server
            if server is not None and server.returncode is None:
                server.kill()
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(server.wait(), 5)


@pytest_asyncio.fixture(name="daemons")
async def daemons_fixture(tmp_path: Path, isolated_agent_dir: Path) -> AsyncIterator[Daemons]:
    """``daemons``: a factory of initialized daemons (``await daemons.start(settings, hooks=[...])``).

    Import it into a test module as ``daemons_fixture``; tests ask for ``daemons``.
    """
    started = Daemons(tmp_path)
    try:
        yield started
    finally:
        await started.stop_all()


# --------------------------------------------------------------------------- requests


async def call(client: LanguageClient, method: str, params: Any = None, timeout: float = TIMEOUT) -> Any:
    """One request, with a deadline."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LspSpecificationWarning)
        return await asyncio.wait_for(client.protocol.send_request_async(method, params), timeout)


def send(client: LanguageClient, method: str, params: Any, msg_id: str) -> asyncio.Future[Any]:
    """Send a request now (cancellable by ``msg_id``); await the returned future with a deadline."""
    return asyncio.wrap_future(client.protocol.send_request(method, params, msg_id=msg_id))


def cancel(client: LanguageClient, msg_id: str) -> None:
    client.protocol.notify("$/cancelRequest", types.CancelParams(id=msg_id))


def cancel_progress(client: LanguageClient, token: str | int) -> None:
    client.protocol.notify(types.WINDOW_WORK_DONE_PROGRESS_CANCEL, types.WorkDoneProgressCancelParams(token=token))


async def settle(predicate: Callable[[], Any], timeout: float = TIMEOUT, what: str = "condition") -> Any:
    """Poll ``predicate`` until it is truthy; fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout}s waiting for {what}")
        await asyncio.sleep(0.01)


def events(client: LanguageClient, method: str | None = None) -> list[Any]:
    """Recorded notifications (params), optionally of one method."""
    recorded: list[tuple[str, Any]] = client.events  # type: ignore[attr-defined]
    return [p for m, p in recorded if method is None or m == method]


async def wait_event(
    client: LanguageClient, method: str, predicate: Callable[[Any], bool] = lambda p: True, timeout: float = TIMEOUT
) -> Any:
    """The first recorded ``method`` notification matching ``predicate`` (recorded before or after the call)."""

    def found() -> Any:
        return next((p for p in events(client, method) if predicate(p)), None)

    return await settle(found, timeout, method)


def progress_kinds(client: LanguageClient, token: Any) -> list[str]:
    return [type(v).__name__.removeprefix("WorkDoneProgress") for v in client.progress_reports.get(token, [])]


# --------------------------------------------------------------------------- session files


def user_msg(text: str) -> dict[str, Any]:
    return {"type": "message", "message": {"role": "user", "content": text, "timestamp": 1}}


def assistant_msg(
    text: str,
    *,
    input_tokens: int = 10,
    output: int = 5,
    stop: str = "stop",
    provider: str = "anthropic",
    model: str = "claude-sonnet-4-5",
) -> dict[str, Any]:
    return {
        "type": "message",
        "message": {
            "role": "assistant",
            "content": [{"type": "text", "text": text}],
            "api": "anthropic-messages",
            "provider": provider,
            "model": model,
            "usage": {
                "input": input_tokens,
                "output": output,
                "cacheRead": 0,
                "cacheWrite": 0,
                "totalTokens": input_tokens + output,
                "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
            },
            "stopReason": stop,
            "timestamp": 2,
        },
    }


def generated(path: Path, *, entries: int = 60, shape: str = "linear", seed: int = 1) -> Path:
    """A generated session file (``pi_sessiond.examples.generator``)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    generator.write(path, generator.generate(seed=seed, entries=entries, shape=shape))
    return path


def read_lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def cli_json(*args: str) -> Any:
    """``python -m pi_sessiond ARGS`` (inherits the test's environment) → parsed stdout."""
    done = subprocess.run([sys.executable, "-m", "pi_sessiond", *args], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)
