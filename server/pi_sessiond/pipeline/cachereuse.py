"""Cache-aware compaction: replay the agent's own request from the provider's prompt cache, when cheaper.

A compaction's history request has two shapes:

- **serialized** (Pi 1.6.0's): the old messages as one text under the
  summarization system prompt. It shares no prefix with anything the agent
  sent, so every input token is billed in full.
- **replay**: the agent's last provider request (system prompt, tools,
  messages, tool choice and thinking settings) exactly as it was sent, plus
  one final user message with the summary instruction. Its prefix is what
  the provider cached when the agent sent it, read at the cache-read price.

:meth:`ReplaySource.plan` chooses, per compaction, and says why
(``RequestPlan.reason``). Replay only when all hold:

1. the agent's request is known and in the summarizer's API (an OpenAI Chat
   Completions body for ``openai``, a Messages body for ``anthropic``: a
   top-level ``system`` or no ``stream_options``), for the summarizer's own model;
2. it was sent within the provider's cache lifetime (OpenAI 5 minutes;
   Anthropic 5 minutes, an hour when a breakpoint asks ``"ttl": "1h"``);
3. its tool choice lets the model answer in text (not ``required``/``any``
   or a named tool: changing it would void the cache, keeping it forces a tool call);
4. the replayed prompt plus an output budget of :data:`MIN_OUTPUT` tokens
   (above any thinking budget) fits the summarizer's window;
5. its estimate is below the serialized request's.

Estimates count 4 characters a token. The cached part is what the provider
would have stored: OpenAI the whole prompt in 128-token blocks from 1,024
tokens; Anthropic the prefix up to the body's last ``cache_control``
breakpoint (from 1,024 tokens). The rest is billed input. With a price the
estimate is dollars, else input-token equivalents (cache read 0.1, input 1).

The replayed body changes nothing the cache depends on: only the new user
message is added, ``stream`` (and OpenAI's ``stream_options``) set, and the
output limit is the larger of the agent's and the summary request's, lowered
to fit the window (neither provider's cache depends on it). Pure: no I/O.
"""

from __future__ import annotations

import copy
import json
import math
from typing import Any

import attrs

from pi_protocol import RequestPlan
from pi_protocol.base import JsonDict
from pi_sessiond.compaction.prompts import SUMMARIZATION_PROMPT
from pi_sessiond.summarizers.base import SummaryRequest
from pi_sessiond.summarizers.pricing import ModelPrice

MIN_OUTPUT = 4096
WINDOW_MARGIN = 1024
OPENAI_MIN, OPENAI_BLOCK, ANTHROPIC_MIN = 1024, 128, 1024
SHORT_TTL, LONG_TTL = 300.0, 3600.0
UNPRICED = ModelPrice(input=1.0, output=0.0, cache_read=0.1, cache_write=1.25)
REPLAY_PREAMBLE = (
    "Stop working on the task now. Do not call any tool and do not continue the conversation: "
    "your only job in this answer is the summary below, as plain text.\n\n"
)


@attrs.frozen(kw_only=True)
class AgentRequest:
    """An agent's provider request as it was sent: its model, the JSON body, when (seconds since the epoch)."""

    provider: str
    model: str
    body: JsonDict
    sent_at: float


def replay_instruction(custom_instructions: str | None = None) -> str:
    """The one user message a replay appends: stop, no tools, the structured summary's format."""
    text = REPLAY_PREAMBLE + SUMMARIZATION_PROMPT
    return f"{text}\n\nAdditional focus: {custom_instructions}" if custom_instructions else text


def body_api(body: JsonDict) -> str | None:
    """``openai`` or ``anthropic``: the API a request body is written for (``None``: neither)."""
    if not isinstance(body.get("messages"), list):
        return None
    if "system" in body or ("max_tokens" in body and "stream_options" not in body):
        return "anthropic"
    return "openai"


def tokens_of(value: Any) -> int:
    """Estimated tokens of every string the model reads in ``value`` (4 characters a token)."""
    return math.ceil(sum(len(s) for s in _strings(value)) / 4)


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() if k not in ("type", "role", "cache_control") for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def cache_lifetime(api: str, body: JsonDict) -> float:
    """Seconds the provider keeps what ``body`` cached (see the module docstring)."""
    return LONG_TTL if api == "anthropic" and '"ttl": "1h"' in json.dumps(body) else SHORT_TTL


def cached_tokens(api: str, body: JsonDict) -> int:
    """Tokens of ``body``'s prompt the provider cached when it was sent (see the module docstring)."""
    if api == "openai":
        whole = tokens_of(body.get("messages"))
        return whole // OPENAI_BLOCK * OPENAI_BLOCK if whole >= OPENAI_MIN else 0
    blocks = _anthropic_blocks(body)
    marks = [i for i, block in enumerate(blocks) if isinstance(block, dict) and block.get("cache_control")]
    if not marks:
        return 0
    prefix = sum(tokens_of(block) for block in blocks[: marks[-1] + 1])
    return prefix if prefix >= ANTHROPIC_MIN else 0


def _anthropic_blocks(body: JsonDict) -> list[Any]:
    system = body.get("system")
    blocks: list[Any] = list(body.get("tools") or [])
    blocks += system if isinstance(system, list) else [system] if system else []
    for message in body.get("messages") or []:
        content = message.get("content") if isinstance(message, dict) else None
        blocks += content if isinstance(content, list) else [content]
    return blocks


def cost(price: ModelPrice, *, uncached: int, cached: int = 0) -> float:
    """What ``uncached`` input and ``cached`` cache-read tokens cost at ``price`` (per million)."""
    return (uncached * price.input + cached * price.cache_read) / 1_000_000


@attrs.frozen(kw_only=True)
class ReplaySource:
    """What the planner needs beside the serialized request: the agent's request and the summarizer."""

    agent: AgentRequest | None
    provider: str
    model: str
    window: int
    price: ModelPrice | None
    now: float

    def plan(self, request: SummaryRequest) -> RequestPlan:
        """The shape of the history request ``request`` stands for (see the module docstring)."""
        price = self.price or UNPRICED
        serialized = math.ceil((len(request.system_prompt) + len(request.prompt)) / 4)
        base = RequestPlan(reason="", serialized_tokens=serialized, priced=self.price is not None,
                           serialized_cost=cost(price, uncached=serialized))
        refusal = self._refusal()
        if refusal is not None or self.agent is None:
            return attrs.evolve(base, reason=refusal or "no recorded request")
        api = body_api(self.agent.body) or ""
        total = tokens_of(self.agent.body.get("tools")) + tokens_of(self.agent.body.get("system"))
        total += tokens_of(self.agent.body.get("messages")) + tokens_of(replay_instruction())
        cached = min(cached_tokens(api, self.agent.body), total)
        plan = attrs.evolve(base, replay_tokens=total, replay_cached_tokens=cached,
                            replay_cost=cost(price, uncached=total - cached, cached=cached))
        if total + MIN_OUTPUT + _thinking_budget(self.agent.body) + WINDOW_MARGIN > self.window:
            return attrs.evolve(plan, reason="the replayed request does not fit the window")
        if plan.replay_cost is None or plan.replay_cost >= plan.serialized_cost:
            return attrs.evolve(plan, reason="replay is not cheaper (cold or small cache)")
        return attrs.evolve(plan, shape="replay", reason="the agent's cached request is cheaper")

    def _refusal(self) -> str | None:
        agent = self.agent
        if agent is None:
            return "no recorded request"
        api = body_api(agent.body)
        if api is None or api != self.provider:
            return "the recorded request is not in the summarizer's API"
        if agent.model != self.model:
            return "the summarizer is not the agent's model"
        if self.now - agent.sent_at > cache_lifetime(api, agent.body):
            return "the provider's cache has expired"
        if forces_tool(agent.body.get("tool_choice")):
            return "the recorded request forces a tool call"
        return None

    def body(self, request: SummaryRequest, plan: RequestPlan, custom_instructions: str | None) -> JsonDict:
        """The replayed body: the agent's request, one user message more, an output limit that fits."""
        assert self.agent is not None
        body = copy.deepcopy(self.agent.body)
        instruction = replay_instruction(custom_instructions)
        if self.provider == "anthropic":
            body["messages"].append({"role": "user", "content": [{"type": "text", "text": instruction}]})
        else:
            body["messages"].append({"role": "user", "content": instruction})
            body["stream_options"] = {"include_usage": True}
        body["stream"] = True
        room = max(MIN_OUTPUT, self.window - plan.replay_tokens - WINDOW_MARGIN)
        field = next((f for f in ("max_completion_tokens", "max_tokens") if f in body), None)
        field = field or ("max_tokens" if self.provider == "anthropic" else "max_completion_tokens")
        given = body.get(field)
        wanted = max(given, request.max_tokens) if isinstance(given, int) else request.max_tokens
        body[field] = min(wanted, room)
        return body


def forces_tool(choice: Any) -> bool:
    """Whether a ``tool_choice`` makes the model call a tool (OpenAI ``required`` or a named function,
    Anthropic ``any`` or a named tool)."""
    if choice == "required":
        return True
    return isinstance(choice, dict) and choice.get("type") in ("any", "tool", "function")


def _thinking_budget(body: JsonDict) -> int:
    thinking = body.get("thinking")
    budget = thinking.get("budget_tokens") if isinstance(thinking, dict) else None
    return budget if isinstance(budget, int) and budget > 0 else 0


def describe(plan: RequestPlan) -> str:
    """The plan as one line of progress text."""
    unit = "$" if plan.priced else "~"
    if plan.shape == "replay":
        share = plan.replay_cached_tokens / plan.replay_tokens if plan.replay_tokens else 0.0
        return (f"replaying the agent's cached request ({share:.0%} cached; estimate {unit}{plan.replay_cost:.4g} "
                f"vs {unit}{plan.serialized_cost:.4g} serialized)")
    return f"serialized request ({plan.reason})"
