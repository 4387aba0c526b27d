"""The VS Code extension (editors/vscode) builds, passes its node tests and packages into a .vsix.

``npm test`` there runs ``tsc --noEmit``, biome lint, the esbuild bundle and
``node --test``: the unit tests of everything that runs without VS Code and the
integration test that drives the real daemon (this interpreter, via
``PI_SESSIOND_PYTHON``) through ``vscode-jsonrpc`` as the extension's client
does. VS Code itself cannot run here; see editors/vscode/README.md.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from tests.conftest import require

REPO = Path(__file__).resolve().parents[2]
EXTENSION = REPO / "editors" / "vscode"


def npm(*args: str, timeout: float) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PI_SESSIOND_PYTHON": sys.executable, "NO_COLOR": "1"}
    return subprocess.run(
        ["npm", *args],
        cwd=EXTENSION,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


@pytest.fixture(scope="module")
def built() -> Path:
    require(shutil.which("node") is not None and shutil.which("npm") is not None, "node and npm are needed")
    if not (EXTENSION / "node_modules").is_dir():
        done = npm("ci", "--no-audit", "--no-fund", timeout=600)
        assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    done = npm("run", "build", timeout=120)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    return EXTENSION


def test_npm_test_passes(built: Path) -> None:
    done = npm("test", timeout=600)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-8000:]
    assert "# fail 0" in output
    # The daemon tests skip themselves when `python -m pi_sessiond serve` cannot run (and fail under CI=true).
    require("# SKIP" not in output, "the extension's daemon tests were skipped: pi_sessiond serve is not runnable")


def test_vsix_is_packaged(built: Path) -> None:
    version = json.loads((built / "package.json").read_text())["version"]
    vsix = built / f"pi-sessiond-{version}.vsix"
    vsix.unlink(missing_ok=True)
    done = npm("run", "package", timeout=300)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    assert vsix.is_file()
    assert zipfile.is_zipfile(vsix)
    with zipfile.ZipFile(vsix) as archive:
        names = set(archive.namelist())
        assert {"extension/package.json", "extension/dist/extension.js", "extension.vsixmanifest"} <= names
        shipped_sources = ("extension/src/", "extension/node_modules/", "extension/test/")
        assert not any(name.startswith(shipped_sources) for name in names)
        bundle = archive.read("extension/dist/extension.js").decode()
    assert "pi/reviewSummary" in bundle  # the protocol glue is bundled, not left to node_modules
