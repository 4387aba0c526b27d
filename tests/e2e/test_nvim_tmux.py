"""The Neovim plugin as a user meets it: installed as ``editors/nvim/README.md`` says, in a real terminal.

The plugin folder is linked into ``$XDG_DATA_HOME/nvim/site/pack/pi/start/pi-sessiond`` (the
README's "without a plugin manager"), ``init.lua`` calls ``require('pi_sessiond').setup({})``
and sets the README's statusline, and ``pi-sessiond`` comes from ``$PATH``. The summarizer is
configured where a user would put it, Pi's global ``settings.json`` (here the loopback provider,
whose first request stalls so ``:PiCancel`` has something to cancel). Neovim runs in tmux and
is driven with ``send-keys``; every check reads ``capture-pane``. Waits poll the screen with
generous deadlines (never fixed sleeps). The last screen is saved as ``nvim-last.txt`` (and
``nvim-last.ansi`` with colours) under the artifacts directory.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from tests.conftest import REPO, require
from tests.e2e.terminal_png import ansi_to_html, screenshot
from tests.e2e.test_nvim_plugin import loopback_provider

PLUGIN = REPO / "editors" / "nvim"
WAIT_S = 60.0
CHROMIUM = "/usr/bin/chromium"


class Tmux:
    """One private tmux server (``-L``) running one window; the screen is read with capture-pane."""

    def __init__(self, socket: str, env: dict[str, str], cwd: Path, shots: Path) -> None:
        self.socket, self.env, self.cwd, self.shots = socket, env, cwd, shots

    def run(self, *args: str) -> str:
        done = subprocess.run(
            ["tmux", "-L", self.socket, "-f", "/dev/null", *args],
            env=self.env,
            cwd=self.cwd,
            capture_output=True,
            text=True,
            timeout=30,
            stdin=subprocess.DEVNULL,
        )
        assert done.returncode == 0, f"tmux {args}: {done.stderr}"
        return done.stdout

    def start(self, *command: str) -> None:
        self.run("new-session", "-d", "-s", "pi", "-x", "160", "-y", "45", *command)

    def keys(self, *keys: str) -> None:
        self.run("send-keys", "-t", "pi", *keys)

    def literal(self, text: str) -> None:
        self.run("send-keys", "-t", "pi", "-l", text)

    def command(self, text: str) -> None:
        """Type an Ex command and press Enter (Escape first: from any mode)."""
        self.keys("Escape")
        self.literal(f":{text}")
        self.keys("Enter")

    def screen(self, ansi: bool = False) -> str:
        return self.run("capture-pane", "-p", "-t", "pi", *(["-e"] if ansi else []))

    def wait(self, check: Callable[[str], object], what: str, timeout: float = WAIT_S) -> str:
        """Poll the screen until ``check(screen)`` is truthy; fail with the last screen."""
        deadline = time.monotonic() + timeout
        while True:
            screen = self.screen()
            if check(screen):
                return screen
            if time.monotonic() > deadline:
                pytest.fail(f"waited {timeout:.0f} s for {what}; the screen:\n{screen}")
            time.sleep(0.1)

    def wait_text(self, pattern: str, timeout: float = WAIT_S) -> str:
        return self.wait(lambda s: re.search(pattern, s), repr(pattern), timeout)

    def shot(self, name: str) -> None:
        """Save the screen as ``nvim-NAME.txt`` and ``.ansi``, and as ``.png`` where chromium and Playwright are."""
        ansi = self.screen(ansi=True)
        (self.shots / f"nvim-{name}.txt").write_text(self.screen())
        (self.shots / f"nvim-{name}.ansi").write_text(ansi)
        if Path(CHROMIUM).is_file() and importlib.util.find_spec("playwright") is not None:
            screenshot(ansi, self.shots / f"nvim-{name}.png", CHROMIUM)

    def kill(self) -> None:
        subprocess.run(["tmux", "-L", self.socket, "kill-server"], env=self.env, capture_output=True, timeout=30)


def artifacts_dir(tmp_path: Path) -> Path:
    """``$PI_SESSIOND_ARTIFACTS`` when set (CI keeps it), else a folder under the test's tmp."""
    base = os.environ.get("PI_SESSIOND_ARTIFACTS")
    out = Path(base) if base else tmp_path / "artifacts"
    out.mkdir(parents=True, exist_ok=True)
    return out


@pytest.fixture
def stalling_once() -> Iterator[str]:
    """The loopback provider: the first request stalls (until cancelled), the rest answer."""
    with loopback_provider("ok", "--script", "stall") as url:
        yield url


@pytest.fixture
def installed(tmp_path: Path, stalling_once: str, real_session: Path) -> tuple[dict[str, str], Path]:
    """A home as the README leaves it: the plugin linked, ``setup({})``, the daemon on PATH."""
    require(shutil.which("nvim") is not None, "nvim is not installed (scripts/install-tools.sh nvim)")
    require(shutil.which("tmux") is not None, "tmux is not installed (scripts/install-tools.sh tmux)")
    home = tmp_path / "home"
    data, config, agent = home / ".local/share", home / ".config", home / ".pi/agent"
    pack = data / "nvim/site/pack/pi/start"
    pack.mkdir(parents=True)
    (pack / "pi-sessiond").symlink_to(PLUGIN, target_is_directory=True)
    (config / "nvim").mkdir(parents=True)
    (config / "nvim/init.lua").write_text(
        "require('pi_sessiond').setup({})\n"
        "vim.o.laststatus = 2\n"
        "vim.o.statusline = '%f %=%{v:lua.require(\"pi_sessiond\").statusline()} '\n"
    )
    agent.mkdir(parents=True)
    summarizer = {"provider": "openai", "baseUrl": f"{stalling_once}/v1", "model": "m", "apiKeyEnv": "LOOPBACK_KEY"}
    settings = {"summarizer": summarizer, "compaction": {"keepRecentTokens": 2000}}
    (agent / "settings.json").write_text(json.dumps(settings))
    session = tmp_path / "work" / real_session.name
    session.parent.mkdir()
    shutil.copyfile(real_session, session)
    env = {
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "HOME": str(home),
        "TERM": "xterm-256color",
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "XDG_DATA_HOME": str(data),
        "XDG_CONFIG_HOME": str(config),
        "XDG_STATE_HOME": str(home / ".local/state"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "XDG_RUNTIME_DIR": str(tmp_path / "run"),
        "PI_CODING_AGENT_DIR": str(agent),
        "LOOPBACK_KEY": "loopback-test-key",
    }
    if "PYTHONPATH" in os.environ:  # the daemon runs the same code as the test
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    (tmp_path / "run").mkdir(mode=0o700)
    return env, session


def test_readme_install_walks_the_commands_in_a_terminal(
    installed: tuple[dict[str, str], Path], tmp_path: Path
) -> None:
    env, session = installed
    tmux = Tmux(f"pi-sessiond-{os.getpid()}", env, session.parent, artifacts_dir(tmp_path))
    tmux.start("nvim", "-i", "NONE")
    try:
        _walk(tmux, session)
    finally:
        with contextlib.suppress(Exception):
            tmux.shot("last")
        tmux.kill()


def test_terminal_colours_become_styled_html() -> None:
    page = ansi_to_html("\x1b[1;38;5;196mred\x1b[0m plain \x1b[7mrev\x1b[m <&>")
    assert '<span style="color:#ff0000;background:#1e1e1e;font-weight:bold">red</span>' in page
    assert '<span style="color:#1e1e1e;background:#d4d4d4">rev</span>' in page
    assert "&lt;&amp;&gt;" in page and "\x1b" not in page


def _dismiss(tmux: Tmux) -> None:
    """Leave a hit-enter prompt (a multi-line message) if one is showing."""
    if "Press ENTER" in tmux.screen():
        tmux.keys("Enter")
        tmux.wait(lambda s: "Press ENTER" not in s, "the hit-enter prompt to go")


def _walk(tmux: Tmux, session: Path) -> None:
    tmux.wait(lambda s: s.count("~") > 5, "nvim to start")
    tmux.command(f"PiOpen {session}")
    tmux.wait_text(r"opened .*\(\d+ entries\)")
    tmux.wait_text(r"π \d+%")  # the statusline gauge from the first stats
    tmux.command("PiStats")
    found = re.search(r"compactions: (\d+), branch summaries: (\d+)", tmux.wait_text(r"compactions: \d+"))
    assert found is not None
    compactions, summaries = int(found[1]), int(found[2])
    _dismiss(tmux)

    before = session.read_bytes()
    tmux.command("PiCompact")  # the first provider request stalls
    tmux.wait_text(r"π .*tokens streamed")  # the stream has begun, then stalls
    tmux.command("PiCancel")
    tmux.wait_text(r"pi-sessiond: cancelled\s*$|pi-sessiond: cancelled\n")
    tmux.command("PiStats")
    tmux.wait_text(rf"compactions: {compactions},")
    _dismiss(tmux)
    assert session.read_bytes() == before

    tmux.command("PiCompact")
    tmux.wait_text(r"compacted: \d+ → \d+ tokens")
    tmux.wait_text(r"π ~\d+%")  # the estimate after a compaction
    tmux.shot("compacted")
    tmux.command("PiStats")
    tmux.wait_text(rf"compactions: {compactions + 1}, branch summaries: {summaries}\n")
    _dismiss(tmux)
    _undo_preview_commit(tmux, session, compactions, summaries)

    tmux.command("PiTree")
    # Turns fold under their user line, summed up; compactions show their size.
    tmux.wait_text(r"▸ user \(→ \d+ steps? · \w+")
    screen = tmux.wait_text(r"compaction \(\d+(\.\d)?k tokens\)")
    width = int(tmux.run("display", "-p", "-t", "pi", "#{pane_width}"))
    assert all(len(line) <= width for line in screen.splitlines())
    _navigate_with_summary(tmux)
    tmux.command("PiStats")
    # The stats follow the new path (from the first user message): its one branch summary, no compaction.
    tmux.wait_text(r"compactions: 0, branch summaries: 1\n")
    _dismiss(tmux)
    tmux.command("PiTree")
    tmux.wait_text(r"branch_summary|Branch summary")
    tmux.shot("tree")


def _last_entry(session: Path) -> dict[str, object]:
    return dict(json.loads(session.read_text().splitlines()[-1]))


def _undo_preview_commit(tmux: Tmux, session: Path, compactions: int, summaries: int) -> None:
    """``:PiUndo`` takes the compaction back; a ``:PiPreview`` closed with ``:q!`` writes nothing;
    one edited and written with ``:w`` writes the edited summary."""
    tmux.command("PiUndo")
    tmux.wait_text(r"undid the compaction; the leaf is back at [0-9a-f]+")
    assert _last_entry(session)["customType"] == "pi-sessiond.undo"
    tmux.command("PiStats")
    tmux.wait_text(rf"compactions: {compactions}, branch summaries: {summaries}\n")
    _dismiss(tmux)

    before = session.read_bytes()
    tmux.command("PiPreview")
    tmux.wait_text(r"<!-- pi-sessiond draft .*\(compaction\)")
    tmux.wait_text(r"Replaces: \d+ messages")
    tmux.shot("draft")
    tmux.command("quit!")
    tmux.wait_text(r"draft discarded; nothing was written")
    assert session.read_bytes() == before

    tmux.command("PiPreview")
    tmux.wait_text(r"Tokens: [\d.]+k → ~[\d.]+k")
    tmux.keys("Escape", "G", "o")
    tmux.literal("Reviewer note: keep the retry logic as it is.")
    tmux.keys("Escape")
    tmux.command("w")
    tmux.wait_text(r"compacted: \d+ → \d+ tokens; your edited summary was written")
    entry = _last_entry(session)
    assert entry["type"] == "compaction"
    assert str(entry["summary"]).endswith("Reviewer note: keep the retry logic as it is.")
    tmux.command("PiStats")
    tmux.wait_text(rf"compactions: {compactions + 1}, branch summaries: {summaries}\n")
    _dismiss(tmux)


def _navigate_with_summary(tmux: Tmux) -> None:
    """In the tree: go to the first user message, Enter, choose "Summarize"."""
    tmux.keys("g", "g")
    tmux.command("call search('user', 'cW')")
    tmux.keys("Enter")  # <CR> on the line: "Summarize the branch you leave?"
    tmux.wait_text(r"Summarize the branch you leave\?")
    tmux.wait_text(r"2: Summarize")
    tmux.literal("2")
    tmux.keys("Enter")
    tmux.wait_text(r"moved to [0-9a-f]+")


def _context(session: Path) -> object:
    """The session's context as the CLI computes it from the file (what Pi would load)."""
    done = subprocess.run([sys.executable, "-m", "pi_sessiond", "context", str(session), "--json"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)["messages"]


def test_masking_walk_in_a_terminal(installed: tuple[dict[str, str], Path], tmp_path: Path) -> None:
    """``:PiMask`` asks (the dry run's count and tokens), the tree marks the edits, ``K`` on one
    shows its placeholder, ``o`` the stored original, ``:PiUnmask!`` brings the context back."""
    env, session = installed
    tmux = Tmux(f"pi-sessiond-mask-{os.getpid()}", env, session.parent, artifacts_dir(tmp_path))
    tmux.start("nvim", "-i", "NONE")
    try:
        tmux.wait(lambda s: s.count("~") > 5, "nvim to start")
        tmux.command(f"PiOpen {session}")
        tmux.wait_text(r"opened .*\(\d+ entries\)")
        before = _context(session)
        tmux.command("PiMask")
        count = re.search(r"mask (\d+) tool results, frees ~[\d.]+k tokens\?", tmux.wait_text(r"1: Mask"))
        assert count is not None
        tmux.shot("mask-question")
        tmux.literal("1")
        tmux.keys("Enter")
        tmux.wait_text(rf"masked {count[1]} tool results \([\d.]+k → ~[\d.]+k tokens\)")
        _dismiss(tmux)
        tmux.command("PiTree")
        tmux.wait_text(r"● masked \w+ .*\(→ [0-9a-f]+")  # the leaf: the last edit, read as what it does
        tmux.shot("masked-tree")
        target = json.loads(session.read_text().splitlines()[-1])["targetId"]
        tmux.keys("K")  # the entry in detail: the whole placeholder
        tmux.wait_text(rf"\[masked tool output: \w+ — the original is entry {target}")
        tmux.keys("o")
        tmux.wait_text(rf"Original tool result {target} \(\w+\)")  # (the split is narrow: the header wraps)
        tmux.wait_text(r"Masked in the context")
        tmux.shot("original")
        tmux.command("PiUnmask!")
        tmux.wait_text(rf"restored {count[1]} tool results")
        assert _context(session) == before
    finally:
        with contextlib.suppress(Exception):
            tmux.shot("masking-last")
        tmux.kill()
