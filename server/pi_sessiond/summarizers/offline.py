"""The offline summarizer: Pi's structured summary formats, filled without a model.

Deterministic, instant, no network: the sections are built from the messages
themselves (:mod:`offline_extract`) and, for an update, merged with the
previous summary. It is the embedded default when no provider is configured.

Invariants:

* The output has every heading of the requested format (history, turn
  prefix or branch, exactly as in :mod:`pi_sessiond.compaction.prompts`), in
  order, and nothing else at heading level: item text never starts a line
  with ``#`` (continuation lines are indented by two spaces).
* Same request => same bytes. Usage is all zeros.
* Update merge (:mod:`.offline_merge`): the items of a structured previous
  summary are kept, but for the one-of-a-kind ones the new range replaces and
  superseded marks; an unstructured previous summary is kept whole, quoted,
  under Critical Context. ``<read-files>``/``<modified-files>`` blocks are
  not written (the compaction pipeline appends them) and are dropped from the previous
  summary for the same reason.
* ``max_tokens`` (4 chars a token) and half the input (:func:`_budget_tokens`):
  the longest section loses its oldest item first, items matching the custom
  instructions last; goals, constraints, open TODOs, the last error and the
  latest request go only when no narrative is left (the first goal last);
  headings stay.
* Carry-forward (:mod:`.carry`): goals, constraints and open TODOs an
  earlier summary carried (its split-turn part, an earlier latest request, a
  branch summary inside the range) are put back where the merge lost them.
* Iterative: an update follows :mod:`.offline_merge` (one last error, one
  latest request, restated constraints and decisions marked superseded).
* Long sessions keep their beginning: the first request stays first in Goal
  and every user direction is kept, old and new, within the size bound of
  :func:`~.facts.bounded` (uncued ones go first; a last item counts them).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import orjson

from pi_protocol import Usage
from pi_sessiond.compaction.tokens import estimate_tokens
from pi_sessiond.jsonio.jsontext import dumps_chunked
from pi_sessiond.summarizers import workers
from pi_sessiond.summarizers.base import ProgressCallback, SummaryRequest, SummaryResult
from pi_sessiond.summarizers.carry import carry_forward, earlier_summaries
from pi_sessiond.summarizers.facts import SUPERSEDED, Facts, bounded
from pi_sessiond.summarizers.gate import error_present, flat, present
from pi_sessiond.summarizers.offline_extract import Extraction, extract, message_text, trim_block
from pi_sessiond.summarizers.offline_merge import CURRENT, merge
from pi_sessiond.summarizers.offline_sections import (
    CHARS_PER_TOKEN,
    Section,
    fit,
    focus_words,
    matches,
    render,
    take_counts,
)
from pi_sessiond.summarizers.offline_text import task_of
from pi_sessiond.summarizers.revise import key, revised_within
from pi_sessiond.summarizers.summary_parse import SPLIT_TURN_TITLE, parse_sections, parse_summary

_LIMITS = {"goal": 12, "done": 40, "decisions": 10, "next": 8, "ids": 20}
IDS_KEPT = 30  # identifiers of the range and carried ones, in one line
_IDS_LABEL = "Identifiers in recent use: "
_REQUEST_ITEMS = ("Last user request", "Latest user request")
_CURRENT = CURRENT

_HISTORY = ("goal", "constraints", "done", "in_progress", "blocked", "decisions", "next", "critical")
_BRANCH = _HISTORY[:-1]
_TURN_PREFIX = ("request", "early", "suffix")


class OfflineSummarizer:
    """The :class:`~pi_sessiond.summarizers.base.Summarizer` that needs no model."""

    @property
    def name(self) -> str:
        """Always ``offline``."""
        return "offline"

    @property
    def context_window(self) -> int:
        """No input limit of its own; large enough that callers never trim for it."""
        return 1_000_000

    @property
    def reads_prompt(self) -> bool:
        """Never: the summary is built from the request's messages (:func:`~.base.reads_prompt`)."""
        return False

    async def summarize(self, request: SummaryRequest, *, progress: ProgressCallback | None = None) -> SummaryResult:
        """The structured summary of ``request.messages`` for ``request.purpose``, built in a worker process
        (:mod:`.workers`); ``progress`` hears 1, then the size in tokens of each section once it is built."""
        if progress is not None:
            progress(1)
        text = await _built_elsewhere(request)
        if progress is not None:
            _sections_done(text, progress)
        return SummaryResult(text=text, usage=Usage(), provider="offline", model="offline")

    async def aclose(self) -> None:
        """Nothing to release."""


async def _built_elsewhere(request: SummaryRequest) -> str:
    """:func:`build_summary` in a worker process when the daemon has them (the request sent as JSON bytes),
    else, or for messages nested deeper than orjson writes, in a worker thread from the objects."""
    return await workers.elsewhere(build_summary, _payload, build_from_payload, request)


def _sections_done(text: str, progress: ProgressCallback) -> None:
    """The counts :func:`_render` reports while it writes ``text``: the size after each section."""
    ends = [m.start() for m in re.finditer(r"\n\n(?=#)", text)] + [len(text)]  # items never start a line with #
    for end in ends:
        progress(max(2, end // CHARS_PER_TOKEN))


def _payload(request: SummaryRequest) -> bytes:
    """What :func:`build_summary` reads of ``request``, as JSON bytes; the prompts stay behind. ``TypeError``
    for a value orjson cannot write."""
    fields = orjson.dumps({"maxTokens": request.max_tokens, "purpose": request.purpose,
                           "previousSummary": request.previous_summary,
                           "customInstructions": request.custom_instructions,
                           "replaceInstructions": request.replace_instructions})
    return fields + b"\n" + dumps_chunked(request.messages)


def build_from_payload(payload: bytes) -> str:
    """:func:`build_summary` of a request made by :func:`_payload` (runs in a worker process)."""
    head, _, body = payload.partition(b"\n")
    fields = orjson.loads(head)
    request = SummaryRequest(
        system_prompt="", prompt="", max_tokens=fields["maxTokens"], purpose=fields["purpose"],
        messages=tuple(orjson.loads(body)), previous_summary=fields["previousSummary"],
        custom_instructions=fields["customInstructions"], replace_instructions=fields["replaceInstructions"])
    return build_summary(request)


def build_summary(request: SummaryRequest, *, progress: ProgressCallback | None = None) -> str:
    """The summary text (pure; ``progress`` gets growing output-token counts)."""
    focus = focus_words(request.custom_instructions)
    found = extract(request.messages, focus)
    if progress is not None:
        progress(1)
    if request.purpose == "turnPrefix":
        sections = _turn_prefix_sections(request.messages, found)
    else:
        sections = _history_sections(found, request, focus)
    take_counts(sections)
    budget = _budget_tokens(request) * CHARS_PER_TOKEN
    if budget > 0:
        fit(sections, budget, focus, spare=True)
    if request.max_tokens > 0:
        fit(sections, request.max_tokens * CHARS_PER_TOKEN, focus, spare=False)
    return render(sections, progress)


MIN_BUDGET_TOKENS = 600
HISTORY_CAP_TOKENS = 8000
SHARE_OF_SOURCE = 0.5
BRANCH_FLOOR_TOKENS = 1000


def _budget_tokens(request: SummaryRequest) -> int:
    """``max_tokens``, but never more than half of what is summarized (a summary must shrink it).

    A model is told the cap and writes less on its own; this summarizer has no
    such judgement, so it stays within half its input (plus the previous
    summary it carries), with a small floor for the headings; a history
    summary within ``HISTORY_CAP_TOKENS`` (so that, with the capped file
    lists, repeated compactions stay under 12k tokens), a branch summary
    within 0.8 of its bound ``max(1,000, 0.5 × input)`` (room for the
    preamble and the file lists).
    """
    source = sum(estimate_tokens(m) for m in request.messages)
    if request.previous_summary:
        source += len(request.previous_summary) // CHARS_PER_TOKEN
    limit = max(int(source * SHARE_OF_SOURCE), MIN_BUDGET_TOKENS)
    if request.purpose == "history":
        limit = min(limit, HISTORY_CAP_TOKENS)
    elif request.purpose == "branch":
        limit = int(0.8 * max(BRANCH_FLOOR_TOKENS, source * SHARE_OF_SOURCE))
    return min(request.max_tokens, limit) if request.max_tokens > 0 else limit


def _select(items: Sequence[str], limit: int, focus: frozenset[str], *, oldest: bool = False) -> list[str]:
    """At most ``limit`` items, order kept: the first one always, focus matches, then the newest
    (``oldest``: the oldest — earlier hard requirements are not pushed out by later ones)."""
    if len(items) <= limit:
        return list(items)
    ranked = sorted(range(1, len(items)), key=lambda i: (not matches(items[i], focus), i if oldest else -i))
    return [items[i] for i in sorted([0, *ranked[: limit - 1]])]


def _history_sections(found: Extraction, request: SummaryRequest, focus: frozenset[str]) -> list[Section]:
    goals = [task_of(found.first_request)] if found.first_request else []
    critical = _critical(found, request, focus)
    new = {
        "goal": goals,
        "constraints": list(found.constraints),
        "done": list(found.done),
        "in_progress": list(found.in_progress),
        "blocked": list(found.blocked),
        "decisions": _select(found.decisions, _LIMITS["decisions"], focus) + _left(found, request),
        "next": _select(found.next_steps, _LIMITS["next"], focus),
        "critical": critical,
    }
    if request.purpose == "branch" and request.custom_instructions and request.custom_instructions.strip():
        # Branch summaries have no Critical Context: the requested focus leads the Goal.
        new["goal"].insert(0, "Additional focus: " + request.custom_instructions.strip())
    if request.purpose == "history" and request.previous_summary:
        previous = parse_summary(request.previous_summary)
        if previous.get("goal") or _quoted_request(previous):  # the task was set before this range
            new["goal"] = [task_of(_quoted_request(previous))] if not previous.get("goal") else []
        new = merge(previous, new, found.done_paths)
    new["constraints"] = revised_within(found.constraints)
    _carried_in(new, found, request)
    requested = [i for i in new["critical"] if i.startswith(_REQUEST_ITEMS)]
    said = [key(g) for g in [*new["goal"], *requested]]  # a direction the task or the request names: once
    new["constraints"] = bounded([c for c in new["constraints"] if not any(key(c) in g for g in said)])
    keys = _HISTORY if request.purpose == "history" else _BRANCH
    return [Section(k, new[k], newest_first=k == "next") for k in keys]


def _quoted_request(previous: dict[str, list[str]]) -> str:
    """The user's words a split-turn part of ``previous`` quotes as its Original Request (``""``: none)."""
    for item in previous.get("critical", []):
        if item.startswith(SPLIT_TURN_TITLE):
            turn = parse_sections("\n".join(ln.removeprefix(">").removeprefix(" ") for ln in item.splitlines()[1:]))
            quoted = [ln.removeprefix(">").strip() for i in turn.get("request", []) for ln in i.splitlines()
                      if ln.startswith(">")]
            if quoted:
                return "\n".join(quoted)
    return ""


def _carried_in(sections: dict[str, list[str]], found: Extraction, request: SummaryRequest) -> None:
    """The goals, constraints and open TODOs the earlier summaries carried (:mod:`.carry`), where the merge
    lost them: a split-turn part, an earlier latest request, a branch summary inside the range."""
    previous = request.previous_summary if request.purpose == "history" else None
    if not earlier_summaries(previous, request.messages):
        return
    range_facts = Facts(constraints=found.constraints, modified_files=found.done_paths,
                        last_request=found.last_request, last_error=found.errors[-1] if found.errors else "",
                        identifiers=found.identifiers[-_LIMITS["ids"] :])
    carried = carry_forward(range_facts, previous, request.messages)

    def missing(key: str, items: Sequence[str]) -> list[str]:
        have = flat("\n".join(sections[key]))
        return [i for i in items if not present(i.removesuffix(SUPERSEDED), have)]

    sections["goal"] += missing("goal", carried.goals)
    if not found.last_request and not carried.last_request:  # its sentences are all listed as directions
        sections["critical"] = [i for i in sections["critical"] if not i.startswith(_REQUEST_ITEMS)]
    if carried.identifiers:
        line = _IDS_LABEL + ", ".join(f"`{i}`" for i in carried.identifiers[:IDS_KEPT])
        kept = [i for i in sections["critical"] if not i.startswith("Identifiers")]
        sections["critical"] = [*kept, line]
    if carried.last_error and not error_present(carried.last_error, flat("\n".join(sections["critical"]))):
        at = next((n for n, i in enumerate(sections["critical"]) if i.startswith("Last error:")), None)
        kept = [i for i in sections["critical"] if not i.startswith("Last error:")]
        at = len(kept) if at is None else at
        sections["critical"] = [*kept[:at], f"Last error: {carried.last_error}", *kept[at:]]
    sections["constraints"] = list(carried.constraints)
    gone = {key(i) for i in carried.replaced}
    sections["decisions"] = [d for d in sections["decisions"] if key(d) not in gone]
    sections["next"] += missing("next", carried.todos)


def _critical(found: Extraction, request: SummaryRequest, focus: frozenset[str]) -> list[str]:
    items = list(found.notes)
    if request.custom_instructions:
        items.append("Additional focus: " + request.custom_instructions.strip())
    items += [f"Last error: {e}" for e in found.errors[-1:]]
    ids = _select(found.identifiers, _LIMITS["ids"], focus)
    if ids:
        items.append(_IDS_LABEL + ", ".join(f"`{i}`" for i in ids))
    if found.last_request:
        items.append("Last user request (verbatim):\n" + found.last_request)
    return items


def _left(found: Extraction, request: SummaryRequest) -> list[str]:
    """For a branch summary: why the branch was left (blocked, unfinished, or where it stood)."""
    if request.purpose != "branch":
        return []
    if found.blocked:
        return [f"**Branch left while blocked**: {found.blocked[-1]}"]
    if found.in_progress:
        return [f"**Branch left unfinished**: {found.in_progress[0]}"]
    return [f"**Branch left after**: {found.last_said}"] if found.last_said else []


def _turn_prefix_sections(messages: Sequence[dict[str, object]], found: Extraction) -> list[Section]:
    first_user = next((m for m in messages if m.get("role") == "user"), None)
    original = trim_block(message_text(first_user), 2000) if first_user else ""
    early = list(found.done) + [d.replace("**", "") for d in found.decisions]
    suffix = list(found.notes) + [f"Error: {e}" for e in found.errors] + list(found.in_progress[1:])
    if found.identifiers:
        suffix.append("Identifiers: " + ", ".join(f"`{i}`" for i in found.identifiers[-_LIMITS["ids"] :]))
    return [
        Section("request", [original or "(not in the summarized prefix)"]),
        Section("early", _select(early, _LIMITS["done"], frozenset())),
        Section("suffix", suffix),
    ]


