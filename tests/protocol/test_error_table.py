"""pi_protocol.errors: one table of reasons, codes and descriptions, as ``docs/protocol.md`` "Errors" lists them."""

from __future__ import annotations

from pi_protocol import errors

DOCUMENTED = {
    "parseError": -32700,
    "invalidRequest": -32600,
    "methodNotFound": -32601,
    "invalidParams": -32602,
    "internal": -32603,
    "cancelled": -32800,
    "notInitialized": -32002,
    "unknownSession": -32001,
    "unknownEntry": -32002,
    "locked": -32003,
    "nothingToCompact": -32004,
    "summarizerFailed": -32005,
    "conflict": -32006,
    "busy": -32007,
    "tooLarge": -32008,
    "liveWriter": -32009,
    "notASession": -32010,
    "writeFailed": -32011,
    "notShrinking": -32012,
    "summaryIncomplete": -32013,
    "unauthorized": -32014,
}
"""Every reason and its code, copied by hand: a changed code must be a deliberate change here too."""


def test_the_table_is_the_documented_one() -> None:
    assert dict(errors.REASON_CODES) == DOCUMENTED
    assert {reason: row.code for reason, row in errors.REASONS.items()} == DOCUMENTED


def test_every_reason_has_its_own_code_but_lsp_s_not_initialized() -> None:
    codes = [row.code for reason, row in errors.REASONS.items() if reason != "notInitialized"]
    assert len(codes) == len(set(codes))
    assert errors.REASONS["notInitialized"].code == errors.REASONS["unknownEntry"].code == -32002


def test_every_reason_has_a_one_line_description() -> None:
    for reason, row in errors.REASONS.items():
        assert row.description.strip() == row.description and row.description, reason
        assert "\n" not in row.description and len(row.description) <= 100, reason


def test_the_named_constants_are_the_table_codes() -> None:
    constants = {name: value for name, value in vars(errors).items() if name.isupper() and isinstance(value, int)}
    assert sorted(constants.values()) == sorted(DOCUMENTED.values())
    assert (errors.REASONS["busy"].code, errors.REASONS["unauthorized"].code) == (errors.BUSY, errors.UNAUTHORIZED)


def test_an_unknown_reason_is_an_internal_error() -> None:
    assert errors.code_for("busy") == -32007
    assert errors.code_for("noSuchReason") == errors.INTERNAL_ERROR == -32603
