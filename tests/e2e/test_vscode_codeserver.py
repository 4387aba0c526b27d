"""The VS Code extension in a real VS Code: the packaged ``.vsix`` in code-server, driven in headless Chromium.

code-server (npm ``code-server@4.139.1``, run with Node 24: ``scripts/install-tools.sh codeserver``)
serves VS Code's workbench on loopback; Playwright for Python drives Debian's ``chromium``
(``executable_path``, no browser download). A code-server window is a *remote* window: the
``pi.*`` machine-scoped settings come from its Remote settings (``<user-data-dir>/Machine/settings.json``),
which is where this test puts the daemon's interpreter and the summarizer (the loopback provider,
whose first request stalls so Cancel has something to cancel). Every wait is on a DOM state with a
generous deadline; screenshots go to the artifacts directory (``$PI_SESSIOND_ARTIFACTS`` or the
test's tmp).
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import REPO, require
from tests.e2e.test_nvim_plugin import loopback_provider
from tests.e2e.test_nvim_tmux import artifacts_dir

EXTENSION = REPO / "editors" / "vscode"
CHROMIUM = "/usr/bin/chromium"
TOAST_MS = 15_000  # a toast for what the status bar already shows done
WAIT_MS = 60_000


def _tool(flag: str) -> Path:
    done = subprocess.run(
        ["bash", str(REPO / "scripts" / "install-tools.sh"), flag], capture_output=True, text=True, timeout=30
    )
    return Path(done.stdout.strip())


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="module")
def vsix() -> Path:
    """The extension built and packaged as ``npm run package`` does."""
    require(shutil.which("npm") is not None, "npm is needed")
    env = {**os.environ, "NO_COLOR": "1"}
    steps = ([["npm", "ci", "--no-audit", "--no-fund"]] if not (EXTENSION / "node_modules").is_dir() else []) + [
        ["npm", "run", "package"]
    ]
    for step in steps:
        done = subprocess.run(step, cwd=EXTENSION, env=env, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    version = json.loads((EXTENSION / "package.json").read_text())["version"]
    return EXTENSION / f"pi-sessiond-{version}.vsix"


@contextlib.contextmanager
def _code_server(tmp_path: Path, vsix: Path, real_session: Path, *provider: str) -> Iterator[tuple[str, Path]]:
    """code-server on a loopback port with the ``.vsix`` installed; yields (url, session copy)."""
    node, entry = _tool("--print-node24"), _tool("--print-code-server")
    require(node.is_file() and entry.is_file(), "code-server is not installed (scripts/install-tools.sh codeserver)")
    require(Path(CHROMIUM).is_file(), "chromium is not installed (scripts/install-tools.sh browser)")
    require(importlib.util.find_spec("playwright") is not None, "playwright is not installed (pip install -e .[dev])")
    data, extensions, work = tmp_path / "cs-data", tmp_path / "cs-extensions", tmp_path / "work"
    session = work / "sessions" / real_session.name
    session.parent.mkdir(parents=True)
    shutil.copyfile(real_session, session)
    with loopback_provider(*provider) as url:
        _write_settings(data, url)
        env = _environment(tmp_path)
        base = [str(node), str(entry), "--user-data-dir", str(data), "--extensions-dir", str(extensions)]
        done = subprocess.run(
            [*base, "--install-extension", str(vsix)], env=env, capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 0 and "successfully installed" in done.stdout, done.stdout + done.stderr
        port = _free_port()
        log = (tmp_path / "code-server.log").open("w")
        flags = ["--auth", "none", "--bind-addr", f"127.0.0.1:{port}", "--disable-telemetry"]
        flags += ["--disable-update-check", "--disable-workspace-trust", str(work)]
        server = subprocess.Popen([*base, *flags], env=env, stdout=log, stderr=subprocess.STDOUT, cwd=work)
        try:
            yield f"http://127.0.0.1:{port}/?folder={work}", session
        finally:
            server.terminate()
            try:
                server.wait(timeout=20)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()
            log.close()


@pytest.fixture
def code_server(tmp_path: Path, vsix: Path, real_session: Path) -> Iterator[tuple[str, Path]]:
    """code-server whose summarizer stalls on its first request (so Cancel has something to cancel)."""
    with _code_server(tmp_path, vsix, real_session, "ok", "--script", "stall") as served:
        yield served


def _write_settings(data: Path, provider: str) -> None:
    """User settings for a quiet workbench; the ``pi.*`` machine settings in Remote settings."""
    user = {
        "workbench.startupEditor": "none",
        "workbench.tips.enabled": False,
        "chat.disableAIFeatures": True,
        "workbench.secondarySideBar.defaultVisibility": "hidden",
        "extensions.autoCheckUpdates": False,
        "window.restoreWindows": "none",
    }
    machine = {
        "pi.daemon.python": sys.executable,
        "pi.summarizer.provider": "openai",
        "pi.summarizer.baseUrl": f"{provider}/v1",
        "pi.summarizer.model": "m",
        "pi.summarizer.apiKeyEnv": "LOOPBACK_KEY",
        "pi.compaction.keepRecentTokens": 2000,
    }
    for folder, values in (("User", user), ("Machine", machine)):
        (data / folder).mkdir(parents=True, exist_ok=True)
        (data / folder / "settings.json").write_text(json.dumps(values, indent=2))


def _environment(root: Path) -> dict[str, str]:
    home = root / "home"
    (home / ".pi" / "agent").mkdir(parents=True)
    (root / "run").mkdir(mode=0o700)
    keep = {k: v for k, v in os.environ.items() if k in ("PATH", "PYTHONPATH", "LANG", "TZ")}
    return {
        **keep,
        "HOME": str(home),
        "XDG_RUNTIME_DIR": str(root / "run"),
        "PI_CODING_AGENT_DIR": str(home / ".pi" / "agent"),
        "LOOPBACK_KEY": "loopback-test-key",
    }


class Workbench:
    """The code-server page, driven through the command palette, quick inputs and notifications."""

    def __init__(self, page: Any, shots: Path) -> None:
        self.page, self.shots = page, shots

    def shot(self, name: str) -> None:
        self.page.screenshot(path=str(self.shots / f"vscode-{name}.png"))

    def run(self, title: str) -> None:
        """Run a command by its palette title (exact match of the highlighted row)."""
        self.page.keyboard.press("F1")
        box = self.page.locator(".quick-input-widget input")
        box.wait_for(state="visible", timeout=WAIT_MS)
        box.fill(">" + title.rstrip("\u2026"))
        row = self.page.locator(".quick-input-list .monaco-list-row", has_text=title).first
        row.wait_for(state="visible", timeout=WAIT_MS)
        box.press("Enter")

    def pick(self, text: str) -> None:
        """Choose the quick-pick row showing ``text``."""
        row = self.page.locator(".quick-input-list .monaco-list-row", has_text=text).first
        row.wait_for(state="visible", timeout=WAIT_MS)
        row.click()

    def type_in_input(self, text: str) -> None:
        box = self.page.locator(".quick-input-widget input")
        box.wait_for(state="visible", timeout=WAIT_MS)
        box.fill(text)
        box.press("Enter")

    def type_path(self, path: str, done: Any) -> None:
        """Answer the simple file dialog with ``path`` until ``done`` (a locator) shows.

        The dialog loads its folder asynchronously and may reset the input after it was typed
        in; so: wait for its first listing (the file's parent folder as a row), type the path,
        wait for the listing of the file, accept, and type again if the dialog is still open.
        """
        box = self.page.locator(".quick-input-widget input")
        rows = self.page.locator(".quick-input-list .monaco-list-row")
        parent, name = path.rsplit("/", 2)[-2:]
        rows.filter(has_text=parent).first.wait_for(timeout=WAIT_MS)
        deadline = time.monotonic() + WAIT_MS / 1000
        while time.monotonic() < deadline:
            if box.is_visible():
                box.fill(path)
                rows.filter(has_text=name).first.wait_for(timeout=WAIT_MS)
                if box.input_value() == path:
                    box.press("Enter")
            with contextlib.suppress(Exception):
                done.wait_for(state="visible", timeout=5000)
                return
        pytest.fail(f"the file dialog did not accept {path}")

    def notification(self, pattern: str, timeout: float = WAIT_MS) -> Any:
        toast = self.page.locator(".notification-toast", has_text=re.compile(pattern)).first
        toast.wait_for(state="visible", timeout=timeout)
        return toast

    def shown_message(self, pattern: str) -> None:
        """A message the user was shown: as a toast, or in the notification center (VS Code hides a toast
        after a while, and may show it only there while other toasts are on screen)."""
        with contextlib.suppress(Exception):
            self.notification(pattern, TOAST_MS)
            return
        self.run("Notifications: Show Notifications")
        listed = self.page.locator(".notifications-center .notification-list-item", has_text=re.compile(pattern))
        listed.first.wait_for(state="visible", timeout=WAIT_MS)
        self.run("Notifications: Hide Notifications")  # while the center is open, no toast is shown

    def status(self, pattern: str) -> str:
        item = self.page.locator(".statusbar-item", has_text=re.compile(pattern)).first
        item.wait_for(state="visible", timeout=WAIT_MS)
        return str(item.inner_text())

    def widen_side_bar(self, width: int) -> None:
        """Drag the side bar's edge so the tree's rows are readable in the screenshots."""
        box = self.page.locator(".part.sidebar").bounding_box()
        assert box is not None
        edge, middle = box["x"] + box["width"] + 1, box["y"] + box["height"] / 2
        self.page.mouse.move(edge, middle)
        self.page.mouse.down()
        self.page.mouse.move(box["x"] + width, middle, steps=5)
        self.page.mouse.up()

    def expand_row(self, text: str, child: str) -> None:
        """Select the tree row showing ``text`` and expand it (→ only expands) until ``child`` shows.

        Again while it does not: a refresh of the tree (the session reloads after a compaction)
        can land between the click and the expansion.
        """
        target = self.tree_rows().filter(has_text=child).first
        deadline = time.monotonic() + WAIT_MS / 1000
        while time.monotonic() < deadline:
            self.tree_rows().filter(has_text=text).first.click()
            self.page.keyboard.press("ArrowRight")
            with contextlib.suppress(Exception):
                target.wait_for(state="visible", timeout=5000)
                return
        pytest.fail(f"the tree row {text!r} did not open to show {child!r}")

    def tree_rows(self) -> Any:
        return self.page.locator('.pane-body [role="treeitem"]')


def test_the_vsix_in_code_server(code_server: tuple[str, Path], tmp_path: Path) -> None:
    _in_browser(code_server, tmp_path, _walk, "last")


def _in_browser(served: tuple[str, Path], tmp_path: Path, walk: Any, last: str) -> None:
    from playwright.sync_api import sync_playwright

    url, session = served
    shots = artifacts_dir(tmp_path)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 860})
            _goto(page, url)
            bench = Workbench(page, shots)
            try:
                walk(bench, session)
            finally:
                with contextlib.suppress(Exception):
                    bench.shot(last)
        finally:
            browser.close()


def _goto(page: Any, url: str) -> None:
    deadline = time.monotonic() + WAIT_MS / 1000
    while True:
        try:
            page.goto(url)
            break
        except Exception:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)
    page.locator(".monaco-workbench .statusbar").wait_for(state="visible", timeout=WAIT_MS)
    # The palette lists what was registered when it opened: wait for the extension's contributions.
    page.locator('.activitybar [aria-label^="Pi Sessions"]').first.wait_for(state="visible", timeout=WAIT_MS)


def _open(bench: Workbench, session: Path) -> str:
    """Pi: Open Session… → the file dialog; returns the status bar's text once it shows the session."""
    bench.run("Pi: Open Session…")
    bench.pick("Open a session file…")
    opened = bench.page.locator(".statusbar-item", has_text=re.compile(r"^Pi \d+%")).first
    bench.type_path(str(session), opened)
    return bench.status(r"^Pi \d+%")


def _walk(bench: Workbench, session: Path) -> None:
    status = _open(bench, session)
    bench.run("Pi Sessions: Focus on Session Tree View")
    bench.tree_rows().first.wait_for(state="visible", timeout=WAIT_MS)
    bench.widen_side_bar(620)
    bench.shot("opened")

    before = session.read_bytes()
    bench.run("Pi: Compact Session")
    bench.type_in_input("")  # no custom instructions
    toast = bench.notification(r"Pi: compacting.*tokens streamed")
    bench.shot("compacting")
    toast.get_by_role("button", name="Cancel").click()
    bench.notification(r"cancelled; nothing was written")
    bench.page.mouse.move(5, 5)  # off the toasts: a hovered toast stays and holds the others back
    assert session.read_bytes() == before

    bench.run("Pi: Compact Session")
    bench.type_in_input("")
    after = bench.status(r"^Pi ~\d+%")  # the estimate until real usage: the compaction was written
    bench.shown_message(r"Pi: compacted \(")
    assert after != status
    # A turn opens: the assistant's tool calls show with their targets.
    bench.expand_row("ok, create a branch refactor", "⟨bash cd ")
    bench.shot("compacted")
    _navigate_and_summarize(bench)
    _rendered_documents(bench)


def _navigate_and_summarize(bench: Workbench) -> None:
    """Navigate Tree to an early user message with a summary: the new leaf is revealed and selected."""
    bench.run("Pi: Navigate Tree…")
    bench.type_in_input("ok, create a branch refactor")
    bench.pick("Write a summary of the branch left")
    bench.notification(r"Pi: moved; a branch summary of the path you left was written")
    selected = bench.page.locator('.pane-body [role="treeitem"][aria-selected="true"]')
    selected.wait_for(state="visible", timeout=WAIT_MS)
    assert "Branch summary" in selected.inner_text()
    bench.shot("tree")


def _webview_text(bench: Workbench, text: str) -> None:
    """Wait for ``text`` inside the active webview (VS Code nests the content in a second frame)."""
    frame = bench.page.frame_locator("iframe.webview.ready").last.frame_locator("iframe#active-frame")
    frame.get_by_text(text).first.wait_for(state="visible", timeout=WAIT_MS)


def _rendered_documents(bench: Workbench) -> None:
    """Stats and the settings sources open as rendered Markdown (the preview), not as source."""
    bench.run("Pi: Show Stats")
    tab = bench.page.locator(".tabs-container .tab", has_text=re.compile(r"^Preview "))
    tab.first.wait_for(state="visible", timeout=WAIT_MS)
    _webview_text(bench, "Input tokens")
    bench.shot("stats")
    bench.run("Pi: Show Settings Sources")
    _webview_text(bench, "Remote settings")
    bench.shot("settings")

