"""Compacts and navigates planted sessions as a user would: the real command line or the real daemon.

* :class:`Cli` runs ``python -m pi_sessiond compact|navigate FILE --json`` as a
  subprocess with an empty agent dir, so the summarizer is the offline one.
* :class:`Daemon` runs ``python -m pi_sessiond serve`` (stdio) with the summarizer
  routed to a :class:`~tests.loopback_provider.LoopbackProvider`; the session is
  opened afresh for every request, since the file grew behind the daemon's back.

Both return an :class:`Outcome`: the written entry, or the error's code and reason.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.loopback_provider import Fault, LoopbackProvider

from pi_sessiond.cli.rpcclient import RpcClient, RpcError

KEY_ENV = "FIDELITY_LOOPBACK_KEY"
TIMEOUT = 600


@dataclass(frozen=True)
class Outcome:
    """What one summarizing request did: ``entry`` when written, else ``code``/``reason``/``message``."""

    entry: dict[str, Any] | None
    result: dict[str, Any] | None = None
    code: int | None = None
    reason: str = ""
    message: str = ""


class Cli:
    """The offline summarizer through ``pi-sessiond compact`` / ``navigate``."""

    name = "offline"

    def __init__(self, agent_dir: Path, keep: int, window: int | None = None) -> None:
        agent_dir.mkdir(parents=True, exist_ok=True)
        if window is not None:  # the summarizer's context window (its output limit follows from it)
            (agent_dir / "settings.json").write_text(json.dumps({"summarizer": {"contextWindow": window}}))
        self.env = {**os.environ, "PI_CODING_AGENT_DIR": str(agent_dir)}
        self.keep = keep

    def _run(self, *args: str) -> Outcome:
        done = subprocess.run([sys.executable, "-m", "pi_sessiond", *args, "--json"], capture_output=True,
                              text=True, timeout=TIMEOUT, env=self.env)
        if done.returncode != 0:
            return Outcome(None, code=done.returncode, message=done.stderr.strip()[-500:])
        result = json.loads(done.stdout)
        return Outcome(result.get("entry"), result)

    def compact(self, path: Path) -> Outcome:
        """Compact the leaf of ``path`` keeping ``keep`` recent tokens."""
        return self._run("compact", str(path), "--keep-recent-tokens", str(self.keep), "--force")

    def navigate(self, path: Path, target: str) -> Outcome:
        """Navigate to ``target`` with a branch summary."""
        return self._run("navigate", str(path), target, "--summarize", "--force")

    def close(self) -> None:
        """Nothing to stop."""


class Daemon:
    """One daemon subprocess whose summarizer is a loopback model answering with ``reply``."""

    name = "loopback"

    def __init__(self, agent_dir: Path, keep: int, fault: Fault, loopback: LoopbackProvider,
                 window: int | None = None) -> None:
        agent_dir.mkdir(parents=True, exist_ok=True)
        self.loopback = loopback
        loopback.set_default(fault)
        env = {**os.environ, "PI_CODING_AGENT_DIR": str(agent_dir), KEY_ENV: "sk-fidelity-loopback"}
        self.proc = subprocess.Popen([sys.executable, "-m", "pi_sessiond", "serve"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, env=env)
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.rpc = RpcClient(self.proc.stdout, self.proc.stdin)
        summarizer = {"provider": "openai", "baseUrl": loopback.base_url + "/v1", "model": "loopback",
                      "apiKeyEnv": KEY_ENV} | ({"contextWindow": window} if window is not None else {})
        settings = {"summarizer": summarizer,
                    "retry": {"baseDelayMs": 1}, "compaction": {"keepRecentTokens": keep}}
        self.rpc.request("initialize", {"processId": os.getpid(), "capabilities": {},
                                        "initializationOptions": {"settings": settings}})
        self.rpc.notify("initialized", {})

    def _with_session(self, path: Path, method: str, params: dict[str, Any]) -> Outcome:
        sid = self.rpc.request("pi/openSession", {"path": str(path.resolve())})["sessionId"]
        try:
            result = self.rpc.request(method, {"sessionId": sid, **params})
        except RpcError as exc:
            data = exc.error.get("data") or {}
            return Outcome(None, code=exc.error.get("code"), reason=str(data.get("reason", "")),
                           message=str(exc.error.get("message", "")))
        finally:
            self.rpc.request("pi/closeSession", {"sessionId": sid})
        return Outcome(result.get("entry"), result)

    def compact(self, path: Path) -> Outcome:
        """``pi/compact`` on the leaf of ``path``."""
        # force: the suite itself grew the file a moment ago (as a Pi that has since exited would);
        # the liveWriter guard is not what this suite measures (tests/e2e/test_live_writers.py is)
        return self._with_session(path, "pi/compact", {"force": True})

    def navigate(self, path: Path, target: str) -> Outcome:
        """``pi/navigateTree`` to ``target`` with a branch summary."""
        return self._with_session(path, "pi/navigateTree", {"targetId": target, "summarize": True, "force": True})

    def close(self) -> None:
        """Shut the daemon down (killed if it does not exit in 10 s)."""
        try:
            self.rpc.request("shutdown")
            self.rpc.notify("exit")
            self.proc.wait(timeout=10)
        except (OSError, EOFError, subprocess.TimeoutExpired):
            pass
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait(timeout=10)
