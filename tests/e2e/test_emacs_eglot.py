"""Emacs's eglot drives the daemon with the setup ``editors/emacs/README.md`` documents, verbatim.

The README's ``elisp`` blocks are extracted and loaded into Debian's Emacs with ``elpa-eglot``
(``scripts/install-tools.sh emacs``) in batch mode; ``editors/emacs/tests/batch.el`` opens a copy
of the real Pi fixture, connects eglot to ``pi-sessiond serve`` (from ``$PATH``), and runs the
README's commands: open, stats, compact (with the progress handler), stats again.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO, require

EMACS_DIR = REPO / "editors" / "emacs"
TIMEOUT_S = 180


def test_the_readme_eglot_setup_compacts(real_session: Path, tmp_path: Path) -> None:
    require(shutil.which("emacs") is not None, "emacs is not installed (scripts/install-tools.sh emacs)")
    readme = (EMACS_DIR / "README.md").read_text()
    blocks = re.findall(r"```elisp\n(.*?)```", readme, flags=re.S)
    assert len(blocks) == 2, "the README has the setup and the progress handler"
    snippets = tmp_path / "snippets.el"
    snippets.write_text("".join(blocks))
    session = tmp_path / "work" / real_session.name
    session.parent.mkdir()
    shutil.copyfile(real_session, session)
    home = tmp_path / "home"
    (home / ".pi" / "agent").mkdir(parents=True)
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "HOME": str(home),
        "PI_CODING_AGENT_DIR": str(home / ".pi" / "agent"),
        "XDG_RUNTIME_DIR": str(tmp_path / "run"),
        "PI_TEST_SNIPPETS": str(snippets),
        "PI_TEST_SESSION": str(session),
    }
    (tmp_path / "run").mkdir(mode=0o700)
    command = ["emacs", "--batch", "-l", str(EMACS_DIR / "tests" / "batch.el")]
    done = subprocess.run(
        command,
        cwd=session.parent,
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        stdin=subprocess.DEVNULL,
    )
    output = f"exit {done.returncode}\nstdout:\n{done.stdout}\nstderr:\n{done.stderr[-6000:]}"
    assert done.returncode == 0, output
    assert done.stdout.rstrip().endswith("PASS"), output
