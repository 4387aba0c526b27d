"""Python client for the Pi differential-testing oracles.

``PiOracle(version)`` starts ``node tests/parity/<script>`` once and sends it one
JSON request per line; each request gets exactly one JSON line back. Two
published packages are pinned in ``package-lock.json`` (installed with
``npm ci --prefix tests/parity``); nothing from them is copied here:

* ``"1.6.0"`` (:data:`PI16`): ``@earendil-works/pi-coding-agent@1.6.0`` behind
  ``oracle16.mjs``, the parity target. Its ops are listed at the top of that file.
* ``"0.73.1"`` (the default, :data:`PI073`): ``@mariozechner/pi-coding-agent@0.73.1``
  behind ``oracle.mjs``; it stays to check that files we write still open in old
  Pi. Ops: ``docs/history/pi-0.73.1.md`` and the top of ``oracle.mjs``. Pass ``UNDEFINED``
as a leaf id to make the oracle call Pi with JavaScript ``undefined`` (``None`` becomes ``null``).
"""

from __future__ import annotations

import collections
import json
import queue
import shutil
import subprocess
import threading
from pathlib import Path
from types import TracebackType
from typing import Any

from pi_sessiond.jsonio.jsontext import dumps, loads

PARITY_DIR = Path(__file__).resolve().parent
PI073 = "0.73.1"
PI16 = "1.6.0"
_ORACLES = {
    PI073: (PARITY_DIR / "oracle.mjs", PARITY_DIR / "node_modules" / "@mariozechner" / "pi-coding-agent"),
    PI16: (PARITY_DIR / "oracle16.mjs", PARITY_DIR / "node_modules" / "@earendil-works" / "pi-coding-agent"),
}
INSTALL_HINT = "run `npm ci --prefix tests/parity`"
UNDEFINED = "__undefined__"
DEFAULT_TIMEOUT = 120.0


class OracleError(RuntimeError):
    """The oracle answered ``ok: false``, died, or did not answer in time."""


def node24() -> str | None:
    """Node 24 as ``scripts/install-tools.sh node24`` installs it (Pi's agent modules need >= 22.19), or ``None``."""
    script = PARITY_DIR.parents[1] / "scripts" / "install-tools.sh"
    found = subprocess.run(["bash", str(script), "--print-node24"], capture_output=True, text=True, check=False)
    path = Path(found.stdout.strip())
    return str(path) if found.returncode == 0 and path.is_file() else None


def oracle_available(version: str = PI073) -> str | None:
    """Return why the oracle of ``version`` cannot run (node or its npm package missing), else ``None``."""
    if shutil.which("node") is None:
        return "node is not on PATH (needed for the Pi parity oracle)"
    package_json = _ORACLES[version][1] / "package.json"
    if not package_json.is_file():
        return f"{package_json.parent.parent.name}/pi-coding-agent is not installed; {INSTALL_HINT}"
    installed = json.loads(package_json.read_text(encoding="utf-8")).get("version")
    if installed != version:
        return f"installed Pi is {installed}, parity needs {version}; {INSTALL_HINT}"
    return None


class PiOracle:
    """A long-lived ``oracle.mjs`` process; use as a context manager.

    ``call(op, **params)`` returns the op's ``result`` or raises ``OracleError``.
    Calls are serialized by a lock. If the process dies or a call times out,
    the process is discarded and the next call starts a fresh one.
    """

    def __init__(self, timeout: float = DEFAULT_TIMEOUT, version: str = PI073, node: str = "node") -> None:
        if version not in _ORACLES:
            raise ValueError(f"no oracle for Pi {version}; known: {sorted(_ORACLES)}")
        self.version = version
        self._script = _ORACLES[version][0]
        self._timeout = timeout
        self._node = node
        self._proc: subprocess.Popen[str] | None = None
        self._lines: queue.Queue[str | None] = queue.Queue()
        self._stderr: collections.deque[str] = collections.deque(maxlen=50)
        self._lock = threading.Lock()

    def __enter__(self) -> PiOracle:
        self._start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def call(self, op: str, **params: Any) -> Any:
        """Send one request and return its result; raise ``OracleError`` on ``ok: false``."""
        with self._lock:
            if self._proc is None or self._proc.poll() is not None:
                self._start()
            reply = self._roundtrip(_encode({"op": op, **params}))
        if not reply.get("ok"):
            raise OracleError(f"{op}: {reply.get('error')}")
        return reply.get("result")

    def close(self) -> None:
        """Stop the process (closing stdin lets it exit on its own)."""
        proc, self._proc = self._proc, None
        if proc is None:
            return
        if proc.stdin is not None:
            proc.stdin.close()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()

    def _kill(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None:
            proc.kill()
            proc.wait()

    def _start(self) -> None:
        reason = oracle_available(self.version)
        if reason is not None:
            raise OracleError(reason)
        self.close()
        self._lines = queue.Queue()
        self._proc = subprocess.Popen(
            [self._node, str(self._script)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            encoding="utf-8",
            bufsize=1,
        )
        pump = (self._proc.stdout, self._lines)
        threading.Thread(target=self._pump, args=pump, daemon=True).start()
        threading.Thread(target=self._drain, args=(self._proc.stderr,), daemon=True).start()

    def _roundtrip(self, request: str) -> dict[str, Any]:
        assert self._proc is not None and self._proc.stdin is not None
        try:
            self._proc.stdin.write(request + "\n")
            self._proc.stdin.flush()
            line = self._lines.get(timeout=self._timeout)
        except (BrokenPipeError, queue.Empty) as exc:
            self._kill()
            tail = self._stderr_tail()
            raise OracleError(f"oracle did not answer: {exc!r}; stderr: {tail}") from exc
        if line is None:
            self._kill()
            raise OracleError(f"oracle exited; stderr: {self._stderr_tail()}")
        try:
            reply: dict[str, Any] = json.loads(line)
        except RecursionError:  # nested deeper than the stdlib reads
            reply = loads(line)
        return reply

    def _stderr_tail(self) -> str:
        return "".join(self._stderr).strip() or "(empty)"

    @staticmethod
    def _pump(stream: Any, lines: queue.Queue[str | None]) -> None:
        for line in stream:
            lines.put(line)
        lines.put(None)

    def _drain(self, stream: Any) -> None:
        for line in stream:
            self._stderr.append(line)


def _encode(request: dict[str, Any]) -> str:
    try:
        return json.dumps(request, ensure_ascii=False)
    except RecursionError:  # nested deeper than the stdlib writes
        return dumps(request).decode("utf-8")
