"""The pieces of :mod:`pi_sessiond.wire.auth` the e2e attacks cannot reach: loopback names, the peer's uid."""

from __future__ import annotations

import os
import socket
import sys

import pytest

from pi_sessiond.wire.auth import ConnectionGuard, is_loopback, peer_uid


def reply(msg_id: object, reason: str, message: str) -> bytes:
    return f"{msg_id}|{reason}|{message}".encode()


@pytest.mark.parametrize(("host", "loopback"), [
    ("127.0.0.1", True), ("127.1.2.3", True), ("::1", True), ("localhost", True),
    ("0.0.0.0", False), ("::", False), ("10.0.0.1", False), ("no-such-host.invalid", False),
])
def test_only_loopback_addresses_count_as_loopback(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="SO_PEERCRED is Linux's")
def test_the_peer_uid_of_a_unix_socket_is_read_and_checked() -> None:
    a, b = socket.socketpair(socket.AF_UNIX)
    with a, b:
        assert peer_uid(a) == os.getuid()
        assert ConnectionGuard(None, 1, 1.0, reply, same_user_only=True).peer_ok(a)


def test_the_first_message_gives_the_secret_up_or_is_refused() -> None:
    gate = ConnectionGuard("s" * 43, 2, 1.0, reply)
    body, refusal = gate.check_first(b'{"id": 4, "method": "initialize", "params": {"initializationOptions": '
                                     b'{"secret": "' + b"s" * 43 + b'", "sessionsDir": "/x"}}}')
    assert refusal is None and body is not None and b"secret" not in body and b"sessionsDir" in body
    body, refusal = gate.check_first(b'{"id": 4, "method": "initialize"}')
    assert body is None and refusal is not None
    assert refusal.startswith(b"4|unauthorized|") and b"initializationOptions.secret" in refusal
    assert gate.check_first(b"not json")[1].startswith(b"None|unauthorized|")  # type: ignore[union-attr]
    assert gate.admit() and gate.admit() and not gate.admit()
    gate.release()
    assert gate.admit()
