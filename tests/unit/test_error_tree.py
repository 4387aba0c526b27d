"""One exception tree (pi_sessiond.errors) and one place that turns reasons into codes (rpc/errors.py)."""

from __future__ import annotations

import ast
import importlib
import json
import pkgutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import pi_sessiond
from pi_protocol import errors as table
from pi_sessiond import errors
from pi_sessiond.errors import PiError
from pi_sessiond.rpc.errors import to_rpc_error
from pi_sessiond.store.errors import InvalidEntryError, ReadOnlySessionError, UnknownEntryError
from pi_sessiond.store.guard import ChangedUnderneathError, LockedError
from pi_sessiond.summarizers.errors import ContextLengthError, SummarizerError

SERVER = Path(pi_sessiond.__file__).resolve().parent
BOUNDARY = {"rpc/errors.py"}
"""The JSON-RPC boundary. The command line's (cli/dispatch.py) prints ``PiError.message`` and needs no code."""

FRAMING_CODES = {"PARSE_ERROR", "INVALID_REQUEST", "METHOD_NOT_FOUND", "INTERNAL_ERROR", "REQUEST_CANCELLED"}
"""Codes the rpc layer names itself; ``rpc/errors.py`` gives each its ``data.reason``."""

TABLE_NAMES = {"REASONS", "REASON_CODES", "code_for"}
REASON_CONSTANTS = {
    name for name, value in vars(table).items() if name.isupper() and isinstance(value, int)
} - FRAMING_CODES


def all_subclasses(cls: type[PiError]) -> set[type[PiError]]:
    found: set[type[PiError]] = set()
    for sub in cls.__subclasses__():
        found |= {sub, *all_subclasses(sub)}
    return found


def import_every_module() -> None:
    for info in pkgutil.walk_packages([str(SERVER)], "pi_sessiond."):
        if not info.name.endswith("__main__"):
            importlib.import_module(info.name)


def test_every_error_class_names_a_reason_of_the_table() -> None:
    import_every_module()
    classes = all_subclasses(PiError) | {PiError}
    assert len(classes) >= 20  # the wire classes and the store/summarizer ones below them
    assert {cls.__qualname__: cls.reason for cls in classes if cls.reason not in table.REASONS} == {}


WIRE_CLASSES = sorted(
    (cls for cls in vars(errors).values() if isinstance(cls, type) and issubclass(cls, PiError)),
    key=lambda cls: cls.__name__,
)


@pytest.mark.parametrize("cls", WIRE_CLASSES, ids=lambda cls: cls.__name__)
def test_a_wire_class_answers_the_code_of_its_reason(cls: type[PiError]) -> None:
    error = to_rpc_error(cls("it failed", data={"detail": 1}), "test")
    assert (error.code, error.message) == (table.REASONS[cls.reason].code, "it failed")
    assert error.data == {"reason": cls.reason, "detail": 1}


@pytest.mark.parametrize(
    ("exc", "code", "message", "data"),
    [
        (UnknownEntryError("e1"), -32002, "Entry e1 not found", {"entryId": "e1"}),
        (LockedError("held by pid 7"), -32003, "held by pid 7", {}),
        (ReadOnlySessionError("no header"), -32003, "the session cannot be written: no header", {}),
        (ChangedUnderneathError("shrank"), -32006, "shrank", {}),
        (InvalidEntryError("bad type"), -32602, "entries: bad type", {}),
        (
            SummarizerError("openai: HTTP 500: oops", status=500, retryable=True),
            -32005,
            "the summarizer failed: openai: HTTP 500: oops",
            {"status": 500, "message": "openai: HTTP 500: oops"},
        ),
        (ContextLengthError("too long", status=400), -32005, "the summarizer failed: too long",
         {"status": 400, "message": "too long"}),
    ],
    ids=lambda value: type(value).__name__ if isinstance(value, Exception) else None,
)
def test_lower_layers_raise_the_wire_classes_with_their_fields(
    exc: PiError, code: int, message: str, data: dict[str, Any]
) -> None:
    error = to_rpc_error(exc, "test")
    assert (error.code, error.message, error.data) == (code, message, {"reason": exc.reason, **data})
    assert str(exc) == message


def test_anything_else_is_a_short_internal_error(caplog: pytest.LogCaptureFixture) -> None:
    error = to_rpc_error(KeyError("secret detail"), "test")
    assert (error.code, error.message, error.data) == (-32603, "Internal error: KeyError", {"reason": "internal"})
    assert "secret detail" in caplog.text  # logged with its traceback, not sent


def test_the_error_module_depends_on_nothing() -> None:
    probe = (
        "import json, sys; before = set(sys.modules); import pi_sessiond.errors; "
        "print(json.dumps(sorted(set(sys.modules) - before)))"
    )
    out = subprocess.run([sys.executable, "-c", probe], check=True, capture_output=True, text=True)
    loaded = set(json.loads(out.stdout))
    ours = {m for m in loaded if m.split(".")[0] not in sys.stdlib_module_names}
    assert ours == {"pi_sessiond", "pi_sessiond.errors"}


# ------------------------------------------------------- reasons become codes in one place only


def problems(source: str) -> list[str]:
    """Where ``source`` pairs reasons with codes itself instead of leaving it to rpc/errors.py."""
    found = []
    for node in ast.walk(ast.parse(source)):
        name = node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else None
        if isinstance(node, ast.alias):
            name = node.name
        if name in TABLE_NAMES or name in REASON_CONSTANTS:
            found.append(f"line {getattr(node, 'lineno', '?')}: {name}")
        if isinstance(node, ast.Dict) and any(isinstance(k, ast.Constant) and k.value == "reason" for k in node.keys):
            found.append(f"line {node.lineno}: a hand-built {{'reason': ...}}")
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant):
            value = node.operand.value
            if isinstance(value, int) and 32000 <= value <= 32768:
                found.append(f"line {node.lineno}: the literal code -{value}")
    return found


def test_only_the_rpc_boundary_maps_reasons_to_codes() -> None:
    offenders = {}
    for path in sorted(SERVER.rglob("*.py")):
        relative = path.relative_to(SERVER).as_posix()
        if relative not in BOUNDARY and (found := problems(path.read_text())):
            offenders[relative] = found
    assert offenders == {}


@pytest.mark.parametrize(
    "source",
    [
        'error_reply(msg_id, codes.BUSY, "Too many requests", {"reason": "busy"})',
        "from pi_protocol.errors import REASON_CODES",
        "code = errors.code_for(exc.reason)",
        "raise JsonRpcException(message='x', code=-32004)",
    ],
)
def test_the_boundary_check_sees_a_second_mapping(source: str) -> None:
    assert problems(source)
