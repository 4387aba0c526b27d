"""Masked tool output in a real VS Code (code-server + Chromium): mask, see it, show the original, unmask.

The set-up of ``test_vscode_codeserver.py`` (its ``_code_server``, ``Workbench`` and helpers) on a
copy of the real Pi fixture with the default ``compaction.masking`` rule. **Pi: Mask Old Tool
Output…** asks first with the dry run's count and tokens; the tree then marks the edits and the
masked results; clicking an edit opens the stored original (the full output, not the placeholder);
**Pi: Unmask All Tool Output** restores them, and the context computed from the file by the CLI (as
Pi would load it) is the one from before.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.e2e.test_vscode_codeserver import WAIT_MS, Workbench, _code_server, _in_browser, _open
from tests.e2e.test_vscode_codeserver import vsix as vsix  # the packaged extension (a fixture)
from tests.e2e.test_vscode_drafts import _context, _entries


@pytest.fixture
def code_server_masking(tmp_path: Path, vsix: Path, real_session: Path) -> Iterator[tuple[str, Path]]:
    with _code_server(tmp_path, vsix, real_session, "ok") as served:
        yield served


def test_mask_show_original_unmask_in_code_server(code_server_masking: tuple[str, Path], tmp_path: Path) -> None:
    _in_browser(code_server_masking, tmp_path, _masking_walk, "masking-last")


def _text_of(entry: dict[str, Any]) -> str:
    return "\n".join(b.get("text", "") for b in entry["message"]["content"] if b.get("type") == "text")


def _masking_walk(bench: Workbench, session: Path) -> None:
    _open(bench, session)
    bench.run("Pi Sessions: Focus on Session Tree View")
    bench.tree_rows().first.wait_for(state="visible", timeout=WAIT_MS)
    bench.widen_side_bar(620)
    before, context_before = session.read_bytes(), _context(session)

    bench.run("Pi: Mask Old Tool Output…")
    question = re.compile(r"Mask \d+ tool results, frees ~[\d.]+k tokens")
    dialog = bench.page.locator(".monaco-dialog-box", has_text=question)
    dialog.wait_for(state="visible", timeout=WAIT_MS)
    found = re.search(r"Mask (\d+) tool results", dialog.inner_text())
    assert found is not None
    count = int(found[1])
    assert session.read_bytes() == before, "the question comes from a dry run: nothing is written yet"
    bench.shot("mask-question")
    dialog.get_by_role("button", name="Mask", exact=True).click()
    bench.notification(rf"Pi: masked {count} tool results \([\d.]+k → ~[\d.]+k tokens\)")
    edits = [e for e in _entries(session) if e["type"] == "context_edit"]
    assert len(edits) == count and all(e["replacement"]["content"][0]["text"].startswith("[masked tool output")
                                       for e in edits)

    # The turn holding the leaf is open: its context edits read as what they do.
    row = bench.tree_rows().filter(has_text=re.compile(r"masked (bash|read) ")).last
    row.wait_for(state="visible", timeout=WAIT_MS)
    bench.shot("masked-tree")
    target = edits[-1]["targetId"]
    original = next(e for e in _entries(session) if e["id"] == target)
    bench.tree_rows().filter(has_text=re.compile(rf"→ {target}\b")).first.click()
    editor = bench.page.locator(".editor-instance .monaco-editor", has_text="Original tool result").first
    editor.wait_for(state="visible", timeout=WAIT_MS)
    shown = editor.inner_text().replace("\xa0", " ")  # monaco draws spaces as no-break spaces
    assert f"Original tool result {target}" in shown and "Masked in the context" in shown
    placeholder = edits[-1]["replacement"]["content"][0]["text"]
    lines = [line.strip() for line in _text_of(original).splitlines() if len(line.strip()) > 8]
    # A line the placeholder left out (it keeps a few first and last lines): the document is the full output.
    hidden = next(line for line in lines if line[:40] not in placeholder)
    bench.page.locator(".editor-instance .view-lines", has_text=hidden[:40]).first.wait_for(timeout=WAIT_MS)
    bench.shot("original")

    bench.run("Pi: Unmask All Tool Output")
    bench.notification(rf"Pi: restored {count} tool results")
    restores = [e for e in _entries(session) if e["type"] == "context_edit"][count:]
    assert {e["targetId"] for e in restores} == {e["targetId"] for e in edits}
    assert _context(session) == context_before
    bench.tree_rows().filter(has_text=re.compile(r"restored (bash|read) ")).last.wait_for(timeout=WAIT_MS)
    bench.shot("unmasked-tree")
    assert json.loads(session.read_text().splitlines()[0])["type"] == "session"
