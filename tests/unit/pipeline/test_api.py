"""The library API works from one import, as the README shows."""

from __future__ import annotations

import shutil
from pathlib import Path

import pi_sessiond.api as api


async def test_readme_example_and_functions(real_session: Path, tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    shutil.copyfile(real_session, path)
    session = api.Session.open(path)
    prep = api.prepare_compaction(session.path_to(), api.CompactionSettings())
    assert prep is not None and len(prep.messages_to_summarize) == 383
    text = api.serialize_messages(prep.messages_to_summarize)
    assert text.startswith("[User]: ")
    summary = await api.generate_summary(prep.messages_to_summarize, api.OfflineSummarizer())
    assert summary.startswith("## Goal")
    with_usage = await api.generate_summary_with_usage(prep.messages_to_summarize, api.OfflineSummarizer())
    assert with_usage.text == summary and with_usage.usage.total_tokens == 0
    result = await api.compact(session, api.OfflineSummarizer())
    assert result.tokens_before == 180820 > result.tokens_after
    branch = await api.generate_branch_summary(session.path_to()[-40:], api.OfflineSummarizer())
    assert branch.summary.startswith("The user explored a different conversation branch")
    assert set(api.__all__) <= set(dir(api))
