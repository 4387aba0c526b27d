"""Who may talk to a listening daemon: the per-daemon secret, loopback only, the private runtime dir.

Contract:

- A TCP or WebSocket listener has a secret (:func:`new_secret`, or the
  launching client's ``PI_SESSIOND_SECRET``), written ``0600`` to
  :func:`secret_path` of its port while it listens, in :func:`runtime_dir`
  (``$XDG_RUNTIME_DIR/pi-sessiond``, else ``/tmp/pi-sessiond-<uid>``; mode
  ``0700``, owned by this user or refused). The same user's clients read it
  there (:func:`read_secret`); nobody else can.
- A connection's first message must be ``initialize`` carrying it in
  ``initializationOptions.secret`` (:meth:`ConnectionGuard.check_first`), or — WebSocket
  only — the handshake carries it (``?token=`` in the URL or
  ``Authorization: Bearer``); otherwise it is answered ``-32014 unauthorized``
  and closed. The secret is removed before the message goes further: it is
  never logged, stored or echoed.
- A Unix socket listener needs no secret: its directory is ``0700``, the socket
  ``0600``, and the peer's uid is checked where the OS says it (Linux).
- :class:`ConnectionGuard` also counts connections (``daemon.maxConnections``) and holds
  the idle timeout (``daemon.idleConnectionSeconds``).

Imports nothing of ours (a transport module): the error replies come from
the ``reply(id, reason, message)`` the caller gives (the rpc boundary's codes).
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import os
import secrets
import socket
import stat
import struct
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

from pi_sessiond.store.layout import runtime_dir

SECRET_ENV = "PI_SESSIOND_SECRET"
SOCKET_NAME = "daemon.sock"


class WireSetupError(Exception):
    """A listener cannot be set up safely (a clear sentence for the command line)."""


def default_socket_path() -> Path:
    """The Unix socket of ``serve --unix`` without a path."""
    return runtime_dir() / SOCKET_NAME


def ensure_private_dir(path: Path) -> Path:
    """``path`` as a directory of ours with mode 0700 (created so); :class:`WireSetupError` if it cannot be."""
    try:
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        st = os.lstat(path)
    except OSError as exc:
        raise WireSetupError(f"cannot create {path}: {exc.strerror or exc}") from None
    if not stat.S_ISDIR(st.st_mode):
        raise WireSetupError(f"{path} is not a directory (a symlink or file is not trusted)")
    if st.st_uid != os.getuid():
        raise WireSetupError(f"{path} belongs to uid {st.st_uid}, not to this user: refusing to use it")
    if st.st_mode & 0o077:
        os.chmod(path, 0o700)
    return path


def secret_path(port: int) -> Path:
    """Where the secret of the listener on ``port`` is kept."""
    return runtime_dir() / f"port-{port}.secret"


def new_secret() -> str:
    """The launching client's ``PI_SESSIOND_SECRET`` when set, else 32 random bytes (URL-safe)."""
    return os.environ.get(SECRET_ENV) or secrets.token_urlsafe(32)


def write_secret(port: int, secret: str) -> Path:
    """Write ``secret`` for ``port`` with mode 0600 (atomically: never readable by others, never half-written)."""
    ensure_private_dir(runtime_dir())
    path = secret_path(port)
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(secret + "\n")
    os.replace(tmp, path)
    return path


def read_secret(port: int) -> str | None:
    """The secret of the same user's listener on ``port``, or ``None`` (missing, or not a private file of ours)."""
    path = secret_path(port)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None
    with os.fdopen(fd) as f:
        st = os.fstat(f.fileno())
        if st.st_uid != os.getuid() or st.st_mode & 0o077 or not stat.S_ISREG(st.st_mode):
            return None
        return f.read().strip() or None


@contextmanager
def published_secret(port: int, secret: str) -> Iterator[Path]:
    """The secret file of ``port`` for as long as the listener runs (removed after)."""
    path = write_secret(port, secret)
    try:
        yield path
    finally:
        with suppress(OSError):
            if read_secret(port) == secret:
                path.unlink()


def is_loopback(host: str) -> bool:
    """Whether every address ``host`` names is a loopback one (``localhost``, 127.0.0.0/8, ``::1``)."""
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        pass
    try:
        infos = socket.getaddrinfo(host, None)
    except OSError:
        return False
    return bool(infos) and all(ipaddress.ip_address(info[4][0]).is_loopback for info in infos)


def peer_uid(sock: socket.socket) -> int | None:
    """The uid of a Unix socket's peer where the OS tells it (Linux ``SO_PEERCRED``), else ``None``."""
    option = getattr(socket, "SO_PEERCRED", None)
    if option is None or not sys.platform.startswith("linux"):
        return None
    creds = sock.getsockopt(socket.SOL_SOCKET, option, struct.calcsize("3i"))
    return int(struct.unpack("3i", creds)[1])


def prepare_socket_path(path: Path) -> Path:
    """Make ``path``'s directory private (0700) and remove a stale socket; refuse when a daemon answers there."""
    ensure_private_dir(path.parent)
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return path
    if not stat.S_ISSOCK(st.st_mode):
        raise WireSetupError(f"{path} exists and is not a socket: refusing to replace it")
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.connect(str(path))
    except OSError:
        path.unlink()  # nobody listens: a stale socket of a daemon that died
        return path
    finally:
        probe.close()
    raise WireSetupError(f"another daemon is listening on {path}")


ErrorReply = Callable[[Any, str, str], bytes]
"""``reply(id, reason, message)``: one encoded JSON-RPC error reply."""


class ConnectionGuard:
    """One listener's admission rules: the secret (``None``: none needed), the connection cap, the idle timeout."""

    def __init__(self, secret: str | None, max_connections: int, idle_seconds: float, reply: ErrorReply,
                 *, same_user_only: bool = False) -> None:
        self.secret = secret
        self.reply = reply
        self.max_connections = max_connections
        self.idle_seconds = idle_seconds
        self.same_user_only = same_user_only
        self.open = 0

    @property
    def needs_secret(self) -> bool:
        return self.secret is not None

    def peer_ok(self, sock: socket.socket | None) -> bool:
        """For a Unix socket listener: the peer is this user (or the OS cannot say; the 0700 dir still holds)."""
        if not self.same_user_only or sock is None:
            return True
        uid = peer_uid(sock)
        return uid is None or uid == os.getuid()

    def admit(self) -> bool:
        """Count a new connection; ``False`` (not counted) when ``max_connections`` are open."""
        if self.open >= self.max_connections:
            return False
        self.open += 1
        return True

    def release(self) -> None:
        self.open -= 1

    def refusal(self) -> bytes:
        """The reply to a connection above the cap."""
        message = f"Too many connections: {self.open} are open (daemon.maxConnections is {self.max_connections})"
        return self.reply(None, "busy", message)

    def token_ok(self, token: str | None) -> bool:
        """Whether ``token`` is the secret (constant time); always true without a secret."""
        if self.secret is None:
            return True
        return token is not None and hmac.compare_digest(token.encode(), self.secret.encode())

    def check_first(self, body: bytes) -> tuple[bytes | None, bytes | None]:
        """The first message: ``(body to pass on, None)`` when it authenticates, else ``(None, the error reply)``.

        The pass-on body is ``initialize`` without ``initializationOptions.secret``.
        """
        try:
            message = json.loads(body)
        except ValueError:
            message = None
        msg_id = message.get("id") if isinstance(message, dict) else None
        options = _options(message)
        token = options.get("secret") if options is not None else None
        if not isinstance(token, str) or not self.token_ok(token):
            text = ("Unauthorized: the first message must be initialize with initializationOptions.secret "
                    f"(the daemon's secret, in {runtime_dir()}/port-<port>.secret)")
            return None, self.reply(msg_id if isinstance(msg_id, str | int) else None, "unauthorized", text)
        assert options is not None
        del options["secret"]
        return json.dumps(message).encode(), None


def _options(message: Any) -> dict[str, Any] | None:
    if not isinstance(message, dict) or message.get("method") != "initialize":
        return None
    params = message.get("params")
    options = params.get("initializationOptions") if isinstance(params, dict) else None
    return options if isinstance(options, dict) else None
