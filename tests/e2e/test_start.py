"""The real daemon's way to its ``initialize`` answer: what it has imported then, and the code it reuses.

Each test runs the daemon as a subprocess on stdio, writes all its frames at once
(the requests arrive right behind ``initialize``) and reads the answers after
stdin's end, when the daemon has answered everything and exited.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

from tests.e2e.test_transport import DEBUG_ENV, frame, req, serve_command

from pi_sessiond.examples import example_path

INIT = req(1, "initialize", {"processId": None, "capabilities": {"window": {"workDoneProgress": True}}})
SERVICES = ("pi_sessiond.service.daemon", "pi_sessiond.pipeline.compaction", "pi_sessiond.summarizers.facts",
            "pi_sessiond.store.session", "httpx")

# The daemon, run as ``python -m pi_sessiond serve`` is, with one line on stderr as the
# ``initialize`` answer is handed to stdout: which of SERVICES (and lsprotocol's types, which
# must be there) are imported at that moment.
OBSERVED = textwrap.dedent(f"""
    import runpy, sys
    from pi_sessiond.wire import transport

    send = transport.StreamSink.send

    def observed(self, body):
        if b'"serverInfo"' in body:
            loaded = [m for m in {(*SERVICES, "lsprotocol.types")!r} if m in sys.modules]
            print("imported at the answer:", *loaded, file=sys.stderr, flush=True)
        send(self, body)

    transport.StreamSink.send = observed
    sys.argv = ["pi-sessiond", "serve"]
    runpy.run_module("pi_sessiond", run_name="__main__", alter_sys=True)
""")


def run(argv: list[str], messages: list[dict[str, Any]], env: dict[str, str]) -> tuple[dict[Any, Any], str]:
    """The answers by id, and stderr."""
    done = subprocess.run(argv, input=b"".join(map(frame, messages)), capture_output=True, timeout=120,
                          env={**os.environ, **DEBUG_ENV, **env})
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    answers, out = {}, done.stdout
    while out:
        header, _, out = out.partition(b"\r\n\r\n")
        length = int(header.split(b":")[1])
        message = json.loads(out[:length])
        out = out[length:]
        if "id" in message and "method" not in message:
            answers[message["id"]] = message
    return answers, done.stderr.decode(errors="replace")


def test_initialize_is_answered_before_the_services_are_imported_and_a_request_right_behind_works(
        tmp_path: Path) -> None:
    session = tmp_path / "example.jsonl"
    session.write_bytes(example_path().read_bytes())
    session_id = json.loads(session.read_text().splitlines()[0])["id"]
    messages = [INIT, req(2, "pi/openSession", {"path": str(session)}),
                req(3, "pi/getContext", {"sessionId": session_id}), req(4, "pi/getContext", {"sessionId": "none"})]
    answers, log = run([sys.executable, "-c", OBSERVED], messages, {})
    (line,) = [line for line in log.splitlines() if line.startswith("imported at the answer:")]
    assert line.split(":")[1].split() == ["lsprotocol.types"]
    assert "serverInfo" in answers[1]["result"]
    assert answers[2]["result"]["sessionId"] == session_id
    assert answers[3]["result"]["messages"]
    assert answers[4]["error"]["data"]["reason"] == "unknownSession"


def test_a_second_start_reuses_the_code_the_first_compiled(tmp_path: Path) -> None:
    env = {"XDG_CACHE_HOME": str(tmp_path / "cache")}
    messages = [INIT, req(2, "debug/stats")]
    first, _ = run(serve_command(), messages, env)
    (kept,) = (tmp_path / "cache" / "pi-sessiond" / "generated-code").iterdir()
    assert kept.stat().st_mode & 0o777 == 0o600
    second, _ = run(serve_command(), messages, env)
    assert first[2]["result"]["codeCache"]["reused"] == 0
    assert second[2]["result"]["codeCache"]["reused"] >= 500  # lsprotocol's types alone make ~550
    assert second[1]["result"] == first[1]["result"]
