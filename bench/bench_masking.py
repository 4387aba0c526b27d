"""Masking tier vs summary: tokens freed, model tokens spent, hard facts kept.

    .venv/bin/python bench/bench_masking.py                 # the real fixture + generated 2k/10k sessions
    .venv/bin/python bench/bench_masking.py --json bench/out/masking.json

For each session, on fresh copies, through the daemon's service in-process
(the same ``Daemon`` the JSON-RPC server runs; offline summarizer, default
settings except ``keepRecentTokens``):

* **masking alone**: ``pi/mask`` with the default ``compaction.masking`` rule
  (tools read/bash/grep/find/ls, >= 500 tokens, >= 40k tokens of context after);
* **summary alone**: ``pi/compact``;
* **both**: ``pi/mask``, then ``pi/compact`` (the preparation honours the edits,
  so the summary request is smaller).

Reported: the context estimate before and after (the estimate without usage
figures, which is Pi 1.6.0's projected estimate once an edit or a compaction is
on the path, so before and after compare like with like), the tokens a model summarizer would be sent (the dry run's
``requests``, chars / 4), and whether the hard facts are still in the context
after masking: every file path the context's ``edit``/``write`` tool calls
modify and the last line of the context's newest failed tool result (``None``:
the context has none).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
FIXTURE = ROOT.parent / "shared" / "fixtures" / "pi" / "before-compaction.jsonl"
KEEP = 20000


def _sessions(out: Path) -> list[tuple[str, Path]]:
    from pi_sessiond.examples.generator import write_stream

    found: list[tuple[str, Path]] = []
    if FIXTURE.is_file():
        found.append(("real fixture", FIXTURE))
    else:
        print(f"note: {FIXTURE} not found; generated sessions only", file=sys.stderr)
    for shape, entries in (("long", 2000), ("pi16", 2000), ("long", 10000)):
        path = out / f"{shape}-{entries}.jsonl"
        write_stream(path, seed=11, entries=entries, shape=shape, compaction_every=entries * 2)
        found.append((f"generated {shape} {entries}", path))
    return found


def _facts(messages: list[dict[str, Any]]) -> tuple[set[str], str | None]:
    """Modified file paths (tool calls in the context) and the last line of the newest failed tool result."""
    modified: set[str] = set()
    last_error: str | None = None
    for message in messages:
        for block in message.get("content") or [] if message.get("role") == "assistant" else []:
            if isinstance(block, dict) and block.get("type") == "toolCall" and block.get("name") in ("edit", "write"):
                path = (block.get("arguments") or {}).get("path")
                if isinstance(path, str):
                    modified.add(path)
        if message.get("role") == "toolResult" and message.get("isError"):
            text = "\n".join(b.get("text", "") for b in message.get("content") or [] if isinstance(b, dict))
            tail = [line for line in text.splitlines() if line.strip()]
            last_error = tail[-1] if tail else last_error
    return modified, last_error


async def _measure(source: Path, work: Path) -> dict[str, Any]:
    from pi_protocol.params import CompactParams, GetContextParams, MaskParams
    from pi_sessiond.cli.local import running_daemon
    from pi_sessiond.cli.progress import StderrProgress
    from pi_sessiond.compaction.tokens import pure_estimate

    def copy(name: str) -> Path:
        target = work / f"{name}-{source.name}"
        shutil.copyfile(source, target)
        return target

    settings = {"compaction": {"keepRecentTokens": KEEP}}
    progress = StderrProgress(quiet=True)
    row: dict[str, Any] = {}
    for mode in ("mask", "summary", "both"):
        async with running_daemon(settings, progress) as local:
            sid = local.open(copy(mode)).session_id
            service = local.service
            context = service.get_context(GetContextParams(session_id=sid)).messages
            row["before"] = pure_estimate(context)  # the same estimate as after any edit: no usage figures
            shown_before = json.dumps(context)
            modified, last_error = _facts(list(context))
            after = row["before"]
            if mode in ("mask", "both"):
                masked = service.mask(MaskParams(session_id=sid))
                after = masked.tokens_after
                if mode == "mask":
                    shown = json.dumps(service.get_context(GetContextParams(session_id=sid)).messages)
                    row["masked_results"] = len(masked.edits)
                    present = [p for p in modified if json.dumps(p)[1:-1] in shown_before]
                    row["files_kept"] = f"{sum(json.dumps(p)[1:-1] in shown for p in present)}/{len(present)}"
                    kept = last_error is not None and json.dumps(last_error)[1:-1] in shown_before
                    row["last_error_kept"] = (json.dumps(last_error)[1:-1] in shown) if kept else None
            if mode in ("summary", "both"):
                preview = service.preview_compaction(CompactParams(session_id=sid))
                row[f"model_tokens_{mode}"] = sum(len(r.system_prompt) + len(r.prompt) for r in preview.requests) // 4
                after = (await service.compact(CompactParams(session_id=sid), progress)).estimated_tokens_after
            row[f"after_{mode}"] = after
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, help="also write the rows here")
    args = parser.parse_args(argv)
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="bench-masking-") as tmp:
        work = Path(tmp)
        for name, path in _sessions(work):
            row = {"session": name, **asyncio.run(_measure(path, work))}
            rows.append(row)
    header = ("session", "before", "mask alone", "summary alone", "both", "model tok (summary)",
              "model tok (both)", "masked", "files kept", "last error kept")
    print(" | ".join(header))
    print(" | ".join("---" for _ in header))
    for r in rows:
        print(" | ".join(str(x) for x in (
            r["session"], r["before"], r["after_mask"], r["after_summary"], r["after_both"],
            r["model_tokens_summary"], r["model_tokens_both"], r["masked_results"], r["files_kept"],
            r["last_error_kept"])))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(rows, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
