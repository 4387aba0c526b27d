"""Preview, edit, commit, undo and discard of a compaction in a real VS Code (code-server + Chromium).

The same set-up as ``test_vscode_codeserver.py`` (its ``_code_server``, ``Workbench`` and
helpers), with a loopback summarizer that answers every request. The context before and after
Undo is computed from the file by the CLI, as Pi would load it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.e2e.test_vscode_codeserver import WAIT_MS, Workbench, _code_server, _in_browser, _open
from tests.e2e.test_vscode_codeserver import vsix as vsix  # the packaged extension (a fixture)


@pytest.fixture
def code_server_answering(tmp_path: Path, vsix: Path, real_session: Path) -> Iterator[tuple[str, Path]]:
    """code-server whose summarizer answers every request."""
    with _code_server(tmp_path, vsix, real_session, "ok") as served:
        yield served


def test_preview_edit_commit_undo_discard_in_code_server(
    code_server_answering: tuple[str, Path], tmp_path: Path
) -> None:
    _in_browser(code_server_answering, tmp_path, _preview_walk, "drafts-last")


def _entries(session: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in session.read_text().splitlines() if line.strip()]


def _context(session: Path) -> Any:
    """The session's context as the CLI computes it from the file (what Pi would load)."""
    done = subprocess.run([sys.executable, "-m", "pi_sessiond", "context", str(session), "--json"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)["messages"]


def _draft_editor(bench: Workbench) -> Any:
    """The editor showing a draft (its first line is the header comment)."""
    editor = bench.page.locator(".editor-instance .monaco-editor", has_text="pi-sessiond draft").first
    editor.wait_for(state="visible", timeout=WAIT_MS)
    return editor


def _preview_walk(bench: Workbench, session: Path) -> None:
    """Preview → edit → Commit (CodeLens) writes the edited summary; Undo (the message's button)
    restores the context from before; Preview → Discard writes nothing."""
    _open(bench, session)
    before, context_before = session.read_bytes(), _context(session)
    bench.run("Pi: Preview Compaction…")
    bench.type_in_input("")
    editor = _draft_editor(bench)
    bench.page.locator(".codelens-decoration", has_text="Commit").first.wait_for(timeout=WAIT_MS)
    assert "Replaces:" in editor.inner_text() and session.read_bytes() == before
    bench.shot("draft")
    editor.locator(".view-lines").click()
    bench.page.keyboard.press("Control+End")
    bench.page.keyboard.press("Enter")
    bench.page.keyboard.type("Reviewer note: keep the retry logic as it is.")
    bench.page.keyboard.press("Control+Home")  # the CodeLens sits above the first line
    bench.page.locator(".codelens-decoration a", has_text="Commit").first.click()
    toast = bench.notification(r"Pi: compacted \(.*your edited summary was written")
    last = _entries(session)[-1]
    assert last["type"] == "compaction"
    assert last["summary"].rstrip().endswith("Reviewer note: keep the retry logic as it is.")
    bench.shot("committed")
    # The leaf is a compaction: the tree's title offers Undo (the pi.canUndo context key).
    bench.run("Pi Sessions: Focus on Session Tree View")
    undo_action = bench.page.locator('.part.sidebar [aria-label^="Undo Compaction or Branch Summary"]').first
    undo_action.wait_for(state="visible", timeout=WAIT_MS)

    toast.get_by_role("button", name="Undo").click()
    bench.notification(r"Pi: undid the compaction; the leaf is back at")
    undo_action.wait_for(state="hidden", timeout=WAIT_MS)
    assert _entries(session)[-1]["customType"] == "pi-sessiond.undo"
    assert _context(session) == context_before

    after_undo = session.read_bytes()
    bench.run("Pi: Preview Compaction…")
    bench.type_in_input("")
    _draft_editor(bench)
    bench.run("Pi: Discard Draft")
    bench.notification(r"Pi: draft discarded; nothing was written")
    assert session.read_bytes() == after_undo
