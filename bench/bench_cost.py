"""What a compaction's history request costs: Pi's serialized request vs replaying the agent's cached one.

    .venv/bin/python bench/bench_cost.py                       # the fixture + generated sessions (~10 s)
    .venv/bin/python bench/bench_cost.py --fixture PATH --entries 150,400 --json bench/out/cost.json

For every session (the real Claude fixture, ``../shared/fixtures/pi/before-compaction.jsonl``, read
in place, and sessions of ``pi_sessiond.examples.generator``) and both providers' rules, the leaf's
compaction is prepared as the daemon does, and three requests go over real HTTP through the
daemon's own providers to the loopback server (``tests/loopback_provider.py``), whose prompt
caches bill as each API does (``tests/loopback_cache.py``):

* **serialized**: the daemon's history request (Pi 1.6.0's shape: the old messages as one text);
* **replay, warm**: the agent's last request (the leaf's context in the provider's wire format,
  with Pi's cache breakpoints for Anthropic: the system prompt and the last user message), sent
  first as the agent would, then replayed with the summary instruction (``pipeline/cachereuse.py``);
* **replay, cold**: the same replay on an empty cache (the agent's request expired or was evicted).

Columns: prompt tokens (the loopback counts 4 characters a token), the share read from the cache,
billed input in input-token equivalents (uncached 1, cache read 0.1, cache write 1.25; OpenAI
GPT-5 bills no writes), that as a ratio of the serialized request's, the cost in dollars at the
stated prices (output included, the loopback's answer), and what the daemon's planner chooses
for that cache state (warm: sent 10 s ago; cold: 10 minutes ago).
Prices: OpenAI rules at GPT-5's ($1.25 / $10 / $0.125 per million input / output / cache read),
Anthropic rules at Claude Opus 4.5's ($5 / $25 / $0.50 read / $6.25 write).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from pi_protocol import Usage
from pi_protocol.settings import CompactionSettings
from pi_sessiond.examples import generator
from pi_sessiond.pipeline.cachereuse import AgentRequest, ReplaySource
from pi_sessiond.pipeline.compaction import prepare_or_refuse
from pi_sessiond.pipeline.requests import OutputLimit, compaction_jobs
from pi_sessiond.store.session import Session
from pi_sessiond.summarizers.anthropic import AnthropicSummarizer
from pi_sessiond.summarizers.base import SummaryRequest
from pi_sessiond.summarizers.config import SummarizerSettings
from pi_sessiond.summarizers.http import HttpSummarizer
from pi_sessiond.summarizers.openai import OpenAISummarizer
from pi_sessiond.summarizers.pricing import ModelPrice, cost_of

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = ROOT.parent / "shared" / "fixtures" / "pi" / "before-compaction.jsonl"
WINDOW = 200_000
SYSTEM = "You are an expert coding assistant operating inside pi, a coding agent harness. " * 40
RULES = {
    "openai": ("gpt-5", ModelPrice(input=1.25, output=10, cache_read=0.125)),
    "anthropic": ("claude-opus-4-5", ModelPrice(input=5, output=25, cache_read=0.5, cache_write=6.25)),
}
WEIGHTS = ModelPrice(input=1, output=0, cache_read=0.1, cache_write=1.25)


def text_of(message: dict[str, Any]) -> str:
    """A message's text, its tool calls as JSON (what the model reads of it)."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    parts: list[str] = []
    for block in content if isinstance(content, list) else []:
        if isinstance(block, dict) and block.get("type") == "text":
            parts.append(str(block.get("text") or ""))
        elif isinstance(block, dict) and block.get("type") == "toolCall":
            parts.append(json.dumps({"tool": block.get("name"), "arguments": block.get("arguments")}))
    return "\n".join(parts) or str(message.get("summary") or "") or "(empty)"


def agent_body(provider: str, model: str, messages: list[dict[str, Any]]) -> dict[str, Any]:
    """The agent's last request for ``messages`` in ``provider``'s wire format (Pi's breakpoints for Anthropic)."""
    turns = [("assistant" if m.get("role") == "assistant" else "user", text_of(m)) for m in messages]
    if provider == "openai":
        chat = [{"role": "system", "content": SYSTEM}] + [{"role": r, "content": t} for r, t in turns]
        return {"model": model, "messages": chat, "stream": True, "stream_options": {"include_usage": True},
                "max_completion_tokens": 32000}
    control = {"type": "ephemeral"}
    blocks = [{"role": r, "content": [{"type": "text", "text": t}]} for r, t in turns]
    last_user = max(i for i, m in enumerate(blocks) if m["role"] == "user")
    blocks[last_user]["content"][-1]["cache_control"] = control
    return {"model": model, "max_tokens": 32000, "stream": True, "messages": blocks,
            "system": [{"type": "text", "text": SYSTEM, "cache_control": control}]}


def summarizer_for(provider: str, model: str, base_url: str) -> HttpSummarizer:
    if provider == "openai":
        settings = SummarizerSettings(provider="openai", model=model, base_url=base_url + "/v1")
        return OpenAISummarizer(settings, "k")
    return AnthropicSummarizer(SummarizerSettings(provider="anthropic", model=model, base_url=base_url), "k")


def row(label: str, usage: Usage, price: ModelPrice, plan: str) -> dict[str, Any]:
    prompt = usage.input + usage.cache_read + usage.cache_write
    return {"shape": label, "prompt": prompt, "cached": usage.cache_read / prompt if prompt else 0.0,
            "billed": cost_of(usage, WEIGHTS).total * 1e6, "cost": cost_of(usage, price).total, "plan": plan}


async def measure(name: str, path: Path, provider: str, loopback: Any) -> list[dict[str, Any]]:
    """The three requests for one session and one provider's rules."""
    model, price = RULES[provider]
    session = Session.open(path)
    prep = prepare_or_refuse(session, CompactionSettings())
    history = compaction_jobs(prep, limit=OutputLimit(context_window=WINDOW)).history
    assert history is not None
    serialized: SummaryRequest = history.request()
    body = agent_body(provider, model, list(session.context().messages))
    now = time.time()

    def planner(age: float) -> ReplaySource:
        agent = AgentRequest(provider=provider, model=model, body=body, sent_at=now - age)
        return ReplaySource(agent=agent, provider=provider, model=model, window=WINDOW, price=price, now=now)

    warm_plan, cold_plan = planner(10).plan(serialized), planner(600).plan(serialized)
    replay = attrs_evolve(serialized, planner(10).body(serialized, warm_plan, None))
    summarizer = summarizer_for(provider, model, loopback.base_url)
    try:
        loopback.cache.clear()
        plain = (await summarizer.summarize(serialized)).usage
        loopback.cache.clear()
        await summarizer.summarize(attrs_evolve(serialized, body))  # the agent's own request fills the cache
        warm = (await summarizer.summarize(replay)).usage
        loopback.cache.clear()
        cold = (await summarizer.summarize(replay)).usage
    finally:
        await summarizer.aclose()
    rows = [row("serialized", plain, price, "-"), row("replay, warm", warm, price, warm_plan.shape),
            row("replay, cold", cold, price, cold_plan.shape)]
    base = rows[0]["billed"]
    for each in rows:
        each.update(session=name, provider=provider, ratio=each["billed"] / base if base else 0.0)
    return rows


def attrs_evolve(request: SummaryRequest, body: dict[str, Any]) -> SummaryRequest:
    import attrs

    return attrs.evolve(request, body=body)


def sessions(fixture: Path, entries: list[int], scratch: Path) -> list[tuple[str, Path]]:
    found = [("fixture", fixture)] if fixture.is_file() else []
    for n in entries:
        path = scratch / f"generated-{n}.jsonl"
        generator.write(path, generator.generate(seed=7, entries=n))
        found.append((f"generated {n}", path))
    return found


def table(rows: list[dict[str, Any]]) -> str:
    lines = ["| session | rules | request | prompt tokens | cached | billed input | vs serialized | cost | planner |",
             "|---|---|---|---:|---:|---:|---:|---:|---|"]
    for r in rows:
        lines.append(f"| {r['session']} | {r['provider']} | {r['shape']} | {r['prompt']:,} | {r['cached']:.1%} | "
                     f"{r['billed']:,.0f} | {r['ratio']:.2f}x | ${r['cost']:.4f} | {r['plan']} |")
    return "\n".join(lines)


async def run(args: argparse.Namespace) -> list[dict[str, Any]]:
    sys.path.insert(0, str(ROOT))
    from tests.loopback_provider import LoopbackProvider

    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as scratch:
        async with LoopbackProvider() as loopback:
            for name, path in sessions(Path(args.fixture), args.entries, Path(scratch)):
                for provider in ("openai", "anthropic"):
                    rows += await measure(name, path, provider, loopback)
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--fixture", default=str(FIXTURE), help="a real session file (read, never written)")
    parser.add_argument("--entries", type=lambda s: [int(n) for n in s.split(",") if n], default=[150, 400],
                        help="generated session sizes, comma-separated")
    parser.add_argument("--json", metavar="OUT", help="write the rows as JSON")
    args = parser.parse_args(argv)
    rows = asyncio.run(run(args))
    print("    .venv/bin/python bench/bench_cost.py " + " ".join(argv if argv is not None else sys.argv[1:]))
    print()
    print(table(rows))
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
