"""The method table (pi_protocol.methods) is the daemon's: every row served, nothing served outside it."""

from __future__ import annotations

import inspect
import typing

import attrs
import pytest

from pi_protocol import errors, methods
from pi_sessiond.app import make_server
from pi_sessiond.service.daemon import HANDLERS


def _registered(debug: bool) -> set[str]:
    server = make_server(debug_methods=debug)
    return set(server.protocol.fm.features)


def test_the_table_is_exactly_the_registered_pi_methods() -> None:
    registered = {name for name in _registered(debug=False) if name.startswith("pi/")}
    assert registered == {spec.name for spec in methods.METHODS}
    assert len(methods.METHODS) == len(methods.METHODS_BY_NAME)  # no name twice
    assert set(HANDLERS) == set(methods.METHODS_BY_NAME)  # a handler for each row, none outside the table


def test_debug_methods_stay_outside_the_table() -> None:
    names = _registered(debug=True)
    assert "debug/echo" in names and not any(name.startswith("debug/") for name in methods.METHODS_BY_NAME)


@pytest.mark.parametrize("spec", methods.METHODS, ids=lambda s: s.name)
def test_each_row_has_a_daemon_method_with_its_params_and_result(spec: methods.MethodSpec) -> None:
    service = HANDLERS[spec.name]
    hints = typing.get_type_hints(service)
    parameters = list(inspect.signature(service).parameters)[1:]  # without self
    assert hints[parameters[0]] is spec.params
    assert len(parameters) == (2 if spec.progress else 1)
    assert hints["return"] == (type(None) if spec.result is None else spec.result)  # a union: equal, not the same
    if spec.progress:
        assert inspect.iscoroutinefunction(service)


@pytest.mark.parametrize("spec", methods.METHODS, ids=lambda s: s.name)
def test_each_row_is_well_formed(spec: methods.MethodSpec) -> None:
    assert spec.name.startswith("pi/") and spec.doc
    assert set(spec.errors) <= set(errors.REASON_CODES), spec.errors
    assert attrs.has(spec.params) and all(attrs.has(cls) for cls in methods.result_classes(spec.result))
    assert spec.result is None or methods.result_classes(spec.result)
    has_token = "work_done_token" in attrs.fields_dict(spec.params)
    assert has_token == spec.progress


def test_notification_and_hook_tables_match_the_names() -> None:
    assert tuple(h.hook for h in methods.HOOKS) == methods.HOOK_NAMES
    assert {s.name for s in methods.NOTIFICATIONS} == {
        methods.COMPACTION_STARTED, methods.COMPACTION_ENDED, methods.COMPACTED, methods.COMPACTION_FAILED,
        methods.TREE_NAVIGATED, methods.SESSION_CHANGED, methods.SESSION_LIVE, methods.SESSION_LOADED,
    }
    assert all(attrs.has(s.payload) for s in methods.NOTIFICATIONS)
    assert all(attrs.has(h.params) and attrs.has(h.answer) for h in methods.HOOKS)


def test_a_new_server_has_not_imported_the_services_yet() -> None:
    """The daemon is created after the ``initialize`` reply: building the server imports no service."""
    import subprocess
    import sys

    services = ("pi_sessiond.service.daemon", "pi_sessiond.pipeline.compaction", "httpx")
    code = (f"import sys; from pi_sessiond.app import make_server; make_server(); "
            f"print(sorted(m for m in {services!r} if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_a_new_server_builds_only_the_wire_classes_initialize_needs() -> None:
    """Reading the method table builds no params or result class; the first request of a row does."""
    import subprocess
    import sys

    later = ("pi_protocol.content", "pi_protocol.messages", "pi_protocol.entries", "pi_protocol.params",
             "pi_protocol.results", "pi_protocol.live", "pi_protocol.compaction", "pi_protocol.session",
             "pi_sessiond.summarizers.workers", "pi_sessiond.wire.auth")
    code = (f"import sys; from pi_sessiond.app import make_server; from pi_sessiond.wire import stdio; "
            f"import pi_sessiond.cli.serve; make_server(); print(sorted(m for m in {later!r} if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_every_row_names_wire_classes() -> None:
    """Each name a row of the table gives resolves to an attrs class of the wire modules."""
    import attrs

    from pi_protocol.methods import HOOKS, METHODS, NOTIFICATIONS, result_classes

    for spec in METHODS:
        assert attrs.has(spec.params), spec.name
        assert all(attrs.has(cls) for cls in result_classes(spec.result)), spec.name
    for note in NOTIFICATIONS:
        assert attrs.has(note.payload), note.name
    for hook in HOOKS:
        assert attrs.has(hook.params) and attrs.has(hook.answer), hook.name
