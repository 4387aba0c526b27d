"""Plain stand-ins for the client side of the service seams, and session builders."""

from __future__ import annotations

import asyncio
import inspect
from pathlib import Path
from typing import Any

from pi_protocol.params import OpenSessionParams, UpdateSettingsParams
from pi_sessiond.examples.generator import generate, write
from pi_sessiond.service.daemon import Daemon
from pi_sessiond.summarizers.base import ProgressCallback, SummaryRequest, SummaryResult
from pi_sessiond.summarizers.config import SummarizerSettings
from pi_sessiond.summarizers.offline import OfflineSummarizer

HANG = "hang"


class Events:
    """Records notifications."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, Any]] = []

    def notify(self, method: str, payload: Any) -> None:
        self.sent.append((method, payload))

    def methods(self) -> list[str]:
        return [m for m, _ in self.sent]

    def of(self, method: str) -> list[Any]:
        return [p for m, p in self.sent if m == method]


class Hooks:
    """Declares the hooks given; each answers a value, a callable's result, an exception, or hangs."""

    def __init__(self, **answers: Any) -> None:
        self.answers = answers
        self.calls: list[tuple[str, Any, float | None]] = []

    def declared(self, hook: str) -> bool:
        return hook in self.answers

    async def request(self, method: str, payload: Any, timeout: float | None) -> Any:
        self.calls.append((method, payload, timeout))
        answer = self.answers[method.removeprefix("pi/")]
        if isinstance(answer, BaseException):
            raise answer
        if answer == HANG:
            await asyncio.Event().wait()
        if callable(answer):
            answer = answer(payload)
            if inspect.isawaitable(answer):
                answer = await answer
        return answer


class Bar:
    def __init__(self, title: str, token: int | str | None) -> None:
        self.title, self.token = title, token
        self.reports: list[tuple[str, int | None]] = []
        self.ends: list[str] = []

    def report(self, message: str, percentage: int | None = None) -> None:
        self.reports.append((message, percentage))

    def end(self, message: str) -> None:
        self.ends.append(message)


class Progress:
    def __init__(self) -> None:
        self.bars: list[Bar] = []

    async def begin(self, title: str, token: int | str | None) -> Bar:
        bar = Bar(title, token)
        self.bars.append(bar)
        return bar


class Gate(OfflineSummarizer):
    """The offline summarizer, held until ``release`` is set."""

    def __init__(self) -> None:
        self.started = asyncio.Event()
        self.release = asyncio.Event()
        self.calls = 0

    async def summarize(self, request: SummaryRequest, *, progress: ProgressCallback | None = None) -> SummaryResult:
        self.calls += 1
        self.started.set()
        await self.release.wait()
        return await super().summarize(request, progress=progress)


class Counting(OfflineSummarizer):
    """The offline summarizer, counting calls."""

    def __init__(self) -> None:
        self.calls = 0

    async def summarize(self, request: SummaryRequest, *, progress: ProgressCallback | None = None) -> SummaryResult:
        self.calls += 1
        return await super().summarize(request, progress=progress)


def factory_of(summarizer: OfflineSummarizer) -> Any:
    def make(settings: SummarizerSettings) -> OfflineSummarizer:
        return summarizer

    return make


def make_daemon(tmp_path: Path, hooks: Hooks | None = None, summarizer: OfflineSummarizer | None = None,
                **kwargs: Any) -> tuple[Daemon, Events]:
    events = Events()
    extra: dict[str, Any] = {"summarizer_factory": factory_of(summarizer)} if summarizer is not None else {}
    daemon = Daemon(events=events, hooks=hooks or Hooks(), sessions_dir=tmp_path / "sessions", **extra, **kwargs)
    daemon.update_settings(UpdateSettingsParams(settings={"compaction": {"keepRecentTokens": 2000}}))
    return daemon, events


def session_file(tmp_path: Path, name: str = "s.jsonl", seed: int = 3, entries: int = 60) -> Path:
    path = tmp_path / name
    write(path, generate(seed=seed, entries=entries, shape="linear"))
    return path


def open_file(daemon: Daemon, path: Path) -> str:
    return daemon.open_session(OpenSessionParams(path=str(path))).session_id


def user(text: str) -> dict[str, Any]:
    return {"type": "message", "message": {"role": "user", "content": text, "timestamp": 1}}


def assistant(text: str, total: int = 100, stop: str = "stop") -> dict[str, Any]:
    usage = {"input": total, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": total,
             "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0.5}}
    return {"type": "message", "message": {
        "role": "assistant", "content": [{"type": "text", "text": text}], "api": "anthropic-messages",
        "provider": "anthropic", "model": "claude-sonnet-4-5", "usage": usage, "stopReason": stop, "timestamp": 2}}
