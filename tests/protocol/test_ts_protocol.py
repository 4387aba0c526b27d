"""editors/vscode/src/protocol.ts is generated from pi_protocol and must not be stale."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_typescript_protocol_is_up_to_date() -> None:
    done = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "gen_protocol_ts.py"), "--check"], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr


def test_generated_types_cover_the_wire() -> None:
    text = (REPO / "editors" / "vscode" / "src" / "protocol.ts").read_text()
    for name in ("CompactParams", "NavigateTreeParams", "SessionInfo", "TreeNode", "CompactionEntry", "Usage"):
        assert f"export interface {name} " in text
    assert 'COMPACT: "pi/compact",' in text and "UNKNOWN_SESSION: -32001," in text
    assert "  firstKeptEntryId: string;" in text  # camelCase, required
    assert '  type: "compaction";' in text  # discriminators are required
