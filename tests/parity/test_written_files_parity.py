"""Files we write open in Pi 0.73.1 exactly as we read them.

After our ``compact`` (offline summarizer) on a copy of Pi's fixture and on
generated ``long`` (v3 and v1) and ``branchy`` sessions, Pi's ``load`` has the
same entries as ours, and Pi's ``buildSessionContext`` from the leaf starts
with a ``compactionSummary`` carrying our summary, followed by the same
messages as our context. After our ``navigate_tree(..., summarize=True,
label=...)``, Pi's context from the leaf has our ``branchSummary`` and Pi's
labels are ours.

Files of v1 origin are rewritten as v3 by us right before the first append,
so Pi opens a v3 file and both sides see the same (our ``%08x``) ids.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from tests.parity.oracle import PiOracle

from pi_sessiond.compaction.tokens import CompactionSettings
from pi_sessiond.examples.generator import generate, write
from pi_sessiond.pipeline.compaction import compact
from pi_sessiond.pipeline.navigation import navigate_tree
from pi_sessiond.store.entry import Entry
from pi_sessiond.store.session import Session
from pi_sessiond.summarizers.offline import OfflineSummarizer

pytestmark = pytest.mark.parity

Json = dict[str, Any]
FIXTURE = "pi-fixture"
GENERATED = {
    "long-v3": {"seed": 21, "entries": 1200, "shape": "long", "compaction_every": 400},
    "long-v1": {"seed": 22, "entries": 800, "shape": "long", "version": 1},
    "branchy": {"seed": 23, "entries": 600, "shape": "branchy"},
}
SOURCES = [FIXTURE, *GENERATED]
KEEP_RECENT = {"branchy": 2000}  # the leaf's path of a branchy session is short: keep less to have a history


def as_json(value: Any) -> Any:
    """Our data as it comes back through JSON (JS prints 1.0 as 1; Python compares 1 == 1.0)."""
    return json.loads(json.dumps(value, ensure_ascii=False))


@pytest.fixture
def source(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    """A fresh copy of the named session in ``tmp_path``."""
    name: str = request.param
    path = tmp_path / f"{name}.jsonl"
    if name == FIXTURE:
        shutil.copyfile(request.getfixturevalue("pi_fixture_path"), path)
    else:
        write(path, generate(**GENERATED[name]))
    return path


def pi_context(pi: PiOracle, path: Path, leaf_id: str | None) -> Json:
    [context] = pi.call("context", file=str(path), leafIds=[leaf_id])
    result: Json = context
    return result


def assert_pi_loads_our_entries(pi: PiOracle, path: Path) -> Json:
    ours = Session.open(path)
    loaded: Json = pi.call("load", file=str(path))
    assert loaded["header"]["version"] == 3
    assert loaded["entries"] == as_json([e.data for e in ours.entries])
    assert loaded["leafId"] == ours.leaf_id
    assert loaded["fileTextAfterLoad"] == path.read_text(encoding="utf-8")  # Pi had nothing to migrate
    return loaded


@pytest.mark.parametrize("source", SOURCES, indirect=True)
async def test_pi_opens_our_compacted_file(pi: PiOracle, source: Path) -> None:
    session = Session.open(source)
    settings = CompactionSettings(keep_recent_tokens=KEEP_RECENT.get(source.stem, 20000))
    result = await compact(session, OfflineSummarizer(), settings=settings)
    assert session.leaf_id == result.entry.id
    assert_pi_loads_our_entries(pi, source)
    context = pi_context(pi, source, result.entry.id)
    messages = context["messages"]
    assert messages[0]["role"] == "compactionSummary"
    assert messages[0]["summary"] == result.entry.data["summary"]
    assert messages[0]["tokensBefore"] == result.tokens_before
    ours = Session.open(source).context()
    assert messages == as_json(list(ours.messages))
    assert context["thinkingLevel"] == ours.thinking_level


def navigation_target(session: Session) -> Entry:
    """An assistant message halfway along the leaf's path: a long branch is left."""
    path = session.path_to()
    return next(e for e in path[len(path) // 2:] if e.type == "message" and e.role == "assistant")


@pytest.mark.parametrize("source", SOURCES, indirect=True)
async def test_pi_reads_our_branch_summary_and_label(pi: PiOracle, source: Path) -> None:
    session = Session.open(source)
    target = navigation_target(session)
    result = await navigate_tree(session, target.id, summarizer=OfflineSummarizer(), summarize=True,
                                 label="parity-check")
    assert result.entry is not None and result.entry.parent_id == target.id
    loaded = assert_pi_loads_our_entries(pi, source)
    assert loaded["labels"] == session.tree.labels
    assert loaded["labels"][result.entry.id] == "parity-check"
    messages = pi_context(pi, source, session.leaf_id)["messages"]
    summaries = [m for m in messages if m["role"] == "branchSummary"]
    assert summaries[-1]["summary"] == result.entry.data["summary"]
    assert summaries[-1]["fromId"] == result.old_leaf_id
    assert messages[-1] == summaries[-1]  # the label entry adds no message
    assert messages == as_json(list(Session.open(source).context().messages))


@pytest.mark.parametrize("source", ["branchy"], indirect=True)
async def test_pi_reads_a_label_written_without_summary(pi: PiOracle, source: Path) -> None:
    session = Session.open(source)
    target = navigation_target(session)
    await navigate_tree(session, target.id, label="no-summary")
    loaded = assert_pi_loads_our_entries(pi, source)
    assert loaded["labels"] == session.tree.labels and loaded["labels"][target.id] == "no-summary"
    assert pi_context(pi, source, session.leaf_id)["messages"] == as_json(
        list(Session.open(source).context().messages)
    )

