"""The Neovim plugin (``editors/nvim``) in a real headless Neovim against the real daemon.

``editors/nvim/tests/headless.lua`` drives it: it starts ``python -m pi_sessiond serve``
through Neovim's LSP client, with the loopback provider as the summarizer, opens a
copy of the real Pi fixture, runs ``:PiCompact``, ``:PiTree`` and a navigation with a
branch summary, and exits non-zero on any failed check or Lua error.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.conftest import REPO, require

from pi_sessiond.examples.generator import generate, write

PLUGIN = REPO / "editors" / "nvim"
SCRIPT = PLUGIN / "tests" / "headless.lua"
TIMEOUT_S = 180


@pytest.fixture
def nvim() -> str:
    """The ``nvim`` executable; skipped when missing, except in CI (``require``)."""
    path = shutil.which("nvim")
    require(path is not None, "nvim is not installed (apt-get install -y neovim)")
    assert path is not None
    return path


@contextlib.contextmanager
def loopback_provider(mode: str, *extra: str) -> Iterator[str]:
    """``python -m tests.loopback_provider --mode MODE [EXTRA...]``; it stops when its stdin closes."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.loopback_provider", "--port", "0", "--mode", mode, *extra],
        cwd=REPO,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stdin is not None
    try:
        url = proc.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:"), f"loopback provider printed {url!r}"
        yield url
    finally:
        proc.stdin.close()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.fixture
def provider_url() -> Iterator[str]:
    with loopback_provider("ok") as url:
        yield url


def test_plugin_compacts_renders_tree_and_navigates(
    nvim: str, real_session: Path, provider_url: str, tmp_path: Path
) -> None:
    fixture_digest = _digest(real_session)
    session = tmp_path / "sessions" / real_session.name
    session.parent.mkdir()
    shutil.copyfile(real_session, session)
    env = {
        **os.environ,
        "LOOPBACK_KEY": "loopback-test-key",
        "PI_TEST_SESSION": str(session),
        "PI_TEST_SESSIONS_DIR": str(session.parent),
        "PI_TEST_PROVIDER_URL": provider_url,
        "PI_TEST_PYTHON": sys.executable,
        "PI_TEST_TIMEOUT_MS": str((TIMEOUT_S - 30) * 1000),
        "XDG_CONFIG_HOME": str(tmp_path / "xdg-config"),
        "XDG_DATA_HOME": str(tmp_path / "xdg-data"),
        "XDG_STATE_HOME": str(tmp_path / "xdg-state"),
        "XDG_CACHE_HOME": str(tmp_path / "xdg-cache"),
    }
    done, output = _run_nvim(nvim, SCRIPT, tmp_path, env)
    assert done.returncode == 0, output
    assert done.stdout.rstrip().endswith("PASS"), output
    assert _digest(real_session) == fixture_digest, "the shared fixture must never be written"


def _support_env(session: Path, tmp_path: Path) -> dict[str, str]:
    """The environment of a script on ``editors/nvim/tests/support.lua``: its session file, this Python, a
    timeout inside the test's, and Pi's agent folder and the XDG folders under ``tmp_path``."""
    return {**os.environ, "PI_TEST_SESSION": str(session), "PI_TEST_PYTHON": sys.executable,
            "PI_TEST_TIMEOUT_MS": str((TIMEOUT_S - 30) * 1000), "PI_CODING_AGENT_DIR": str(tmp_path / "agent"),
            "XDG_STATE_HOME": str(tmp_path / "xdg-state"), "XDG_CACHE_HOME": str(tmp_path / "xdg-cache")}


def _run_nvim(nvim: str, script: Path, cwd: Path, env: dict[str, str],
              timeout: int = TIMEOUT_S) -> tuple[subprocess.CompletedProcess[str], str]:
    """Run ``script`` in a headless Neovim with the plugin on its runtimepath; the result and a report of it."""
    command = [nvim, "--headless", "-u", "NONE", "-i", "NONE", "-c", f"set rtp+={PLUGIN}", "-c", f"luafile {script}"]
    try:
        done = subprocess.run(command, cwd=cwd, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                              timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        streams = f"stdout:\n{_text(exc.stdout)}\nstderr:\n{_text(exc.stderr)}"
        pytest.fail(f"nvim did not exit within {timeout} s\n{streams}")
    return done, f"exit code {done.returncode}\nstdout:\n{done.stdout}\nstderr:\n{done.stderr}{_lsp_log(cwd)}"


def _lsp_log(root: Path) -> str:
    """Neovim's LSP log (it holds the daemon's stderr), wherever this version keeps it."""
    logs = sorted(root.glob("xdg-*/nvim/lsp.log"))
    return "".join(f"\n{log}:\n{log.read_text(errors='replace')[-20000:]}" for log in logs)


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _text(data: str | bytes | None) -> str:
    return data.decode(errors="replace") if isinstance(data, bytes) else data or ""


def test_readme_setup_with_an_empty_table_starts_the_daemon(nvim: str, tmp_path: Path) -> None:
    """``require('pi_sessiond').setup({})``, the daemon as ``pi-sessiond`` on ``$PATH`` (the README's install)."""
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
           "XDG_STATE_HOME": str(tmp_path / "xdg-state"), "XDG_CACHE_HOME": str(tmp_path / "xdg-cache")}
    script = PLUGIN / "tests" / "setup_empty.lua"
    done, output = _run_nvim(nvim, script, tmp_path, env)
    assert done.returncode == 0 and "ok   setup({}) started the daemon" in done.stdout, output


def test_cancel_ends_a_stalled_compaction_within_half_a_second(nvim: str, real_session: Path, tmp_path: Path) -> None:
    session = tmp_path / real_session.name
    shutil.copyfile(real_session, session)
    with loopback_provider("stall") as url:
        env = {**os.environ, "LOOPBACK_KEY": "loopback-test-key", "PI_TEST_SESSION": str(session),
               "PI_TEST_PROVIDER_URL": url, "PI_TEST_PYTHON": sys.executable,
               "XDG_STATE_HOME": str(tmp_path / "xdg-state"), "XDG_CACHE_HOME": str(tmp_path / "xdg-cache")}
        script = PLUGIN / "tests" / "cancel.lua"
        done, output = _run_nvim(nvim, script, tmp_path, env)
    assert done.returncode == 0 and done.stdout.rstrip().endswith("PASS"), output


def test_preview_edit_commit_discard_and_undo(nvim: str, real_session: Path, tmp_path: Path) -> None:
    """``:PiPreview`` → edit → ``:w`` writes the edited summary, ``:q!`` writes nothing, ``:PiUndo``
    restores the context from before (``editors/nvim/tests/drafts.lua``, offline summarizer)."""
    session = tmp_path / real_session.name
    shutil.copyfile(real_session, session)
    env = _support_env(session, tmp_path)
    script = PLUGIN / "tests" / "drafts.lua"
    done, output = _run_nvim(nvim, script, tmp_path, env)
    assert done.returncode == 0 and done.stdout.rstrip().endswith("PASS"), output


GAUGE = """
local session = require('pi_sessiond.session')
local plugin = require('pi_sessiond')
plugin.setup({})
session.current = function() return { sessionId = 's' } end
local shown = {}
for _, stats in ipairs({
  { contextTokens = 142000, contextPercent = 71, contextWindow = 200000 },
  { contextTokens = vim.NIL, estimatedContextTokens = 31000, contextWindow = 200000 },
  { contextTokens = vim.NIL, contextWindow = 200000 },
}) do
  session.stats = function() return stats end
  table.insert(shown, plugin.statusline())
end
session.set_live('s', { pid = 4242, program = 'pi' })  -- pi/sessionLive: a live Pi holds it
session.stats = function() return { contextTokens = 142000, contextPercent = 71, contextWindow = 200000 } end
table.insert(shown, plugin.statusline())
io.stdout:write(table.concat(shown, '|') .. '\\n')
vim.cmd('qall!')
"""


def test_the_statusline_shows_the_estimate_after_a_compaction(nvim: str, tmp_path: Path) -> None:
    """Pi's ``contextTokens`` is ``null`` right after a compaction: the gauge shows ``~N%``."""
    script = tmp_path / "gauge.lua"
    script.write_text(GAUGE)
    done, _ = _run_nvim(nvim, script, tmp_path, {**os.environ, "XDG_STATE_HOME": str(tmp_path / "state")}, timeout=60)
    assert done.stdout.strip() == "π 71%|π ~16%|π|π[Pi] 71%", done.stdout + done.stderr


def test_mask_show_original_and_unmask(nvim: str, real_session: Path, tmp_path: Path) -> None:
    """``:PiMask`` asks with the dry run's numbers, then masks; ``:PiTree`` marks the edits;
    ``:PiOriginal`` shows the stored output; ``:PiUnmask`` / ``:PiUnmask!`` restore the context
    from before (``editors/nvim/tests/masking.lua``; no summarizer is needed)."""
    session = tmp_path / real_session.name
    shutil.copyfile(real_session, session)
    env = _support_env(session, tmp_path)
    script = PLUGIN / "tests" / "masking.lua"
    done, output = _run_nvim(nvim, script, tmp_path, env)
    assert done.returncode == 0 and done.stdout.rstrip().endswith("PASS"), output


def test_a_big_session_opens_from_its_end_and_its_warnings_follow(nvim: str, tmp_path: Path) -> None:
    """``daemon.tailOpenBytes: 1`` opens the file tail-first: the open says the rest is being read,
    the context is there at once, and the broken line's warning arrives with ``pi/sessionLoaded``
    (``editors/nvim/tests/loading.lua``)."""
    session = tmp_path / "big.jsonl"
    write(session, generate(seed=8, entries=3000, shape="long", compaction_every=1000))
    lines = session.read_bytes().splitlines(keepends=True)
    lines.insert(len(lines) // 3, b"{broken\n")
    session.write_bytes(b"".join(lines))
    env = _support_env(session, tmp_path)
    done, output = _run_nvim(nvim, PLUGIN / "tests" / "loading.lua", tmp_path, env)
    assert done.returncode == 0 and done.stdout.rstrip().endswith("PASS"), output
