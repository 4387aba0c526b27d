"""The ``pi16`` shape: what Pi 1.6.0 writes beyond the v3 basics (our own example data).

A linear coding chain like ``long``, plus, as Pi 1.6.0 writes them
(system messages, ``context_edit`` and ``usage`` entries):

* a leading ``role: "system"`` message with prompt ``sections`` and ``toolsAdded``, then
  now and then a patch (a section changed or removed, a tool added or removed);
* ``context_edit`` replacements of bulky old tool results (a short placeholder);
* an overflow-recovery shape: an answer stopped at ``length`` with its tool result, both
  omitted by ``replacement: null`` edits;
* ``usage`` entries (usage outside the context);
* compactions carrying ``usage`` and the ``systemMessage`` checkpoint (the replay of the
  system messages the projection holds, stamped with the compaction's time), one of them
  retain-none (``firstKeptEntryId`` = its own id).

The builder keeps the system messages the current projection holds: after a
compaction that is the checkpoint alone, then every system message appended later.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from pi_protocol.base import JsonDict
from pi_sessiond.examples.builder import Builder
from pi_sessiond.store.system import current_system_message

_TOOLS: dict[str, JsonDict] = {
    name: {"name": name, "description": text, "parameters": {"type": "object", "properties": {
        "path" if name != "bash" else "command": {"type": "string"}}}}
    for name, text in (("read", "Read a file from the workspace"), ("bash", "Run a shell command"),
                       ("edit", "Replace text in a file"), ("write", "Write a whole file"),
                       ("grep", "Search file contents"))
}
_SECTIONS = {"identity": "You are a careful coding agent working in a TypeScript API repository.",
             "tools": "Prefer read and edit over bash for files; run the tests after each change.",
             "style": "Answer briefly; show diffs, not whole files."}
_PATCHES: tuple[JsonDict, ...] = (
    {"sections": {"cwd": "Working directory: /home/dev/projects/acme-api"}},
    {"toolsAdded": [_TOOLS["grep"]]},
    {"sections": {"style": "Answer in short paragraphs; quote the failing line of any error."}},
    {"toolsRemoved": [{"name": "write"}]},
    {"sections": {"cwd": None}, "content": "Tests run with `npm test -- --run`."},
)


class Pi16State:
    """What the shape tracks besides the builder: the projection's system messages, turns done."""

    def __init__(self) -> None:
        self.system: list[JsonDict] = []
        self.patches = 0


def _system(b: Builder, state: Pi16State, fields: JsonDict) -> None:
    entry = b.message("system", {"content": fields.pop("content", ""), **fields}, gap=(2, 40))
    state.system.append(entry["message"])


def prelude(b: Builder, state: Pi16State) -> None:
    """The first request's system message: every section and tool."""
    _system(b, state, {"content": "", "sections": dict(_SECTIONS),
                       "toolsAdded": [_TOOLS[n] for n in ("read", "bash", "edit", "write")]})


def _elide_old_result(b: Builder) -> None:
    """A ``context_edit`` replacing the bulkiest tool result outside the newest 40 entries."""
    old = b.path[:-40]
    sizes = [(old[i].ctx - old[i - 1].ctx, old[i]) for i in range(1, len(old)) if old[i].kind == "toolResult"]
    size, node = max(sizes, default=(0, None), key=lambda pair: pair[0])
    if node is None or size < 1_500:
        return
    text = f"[tool output elided by the example: {size} characters]"
    b.add("context_edit", {"targetId": node.id, "replacement": {"content": [{"type": "text", "text": text}]}},
          ctx=b.ctx - size + len(text), gap=(5, 60))


def _recovery(b: Builder) -> None:
    """An answer cut off at its token limit, its tool result, and the two omissions Pi writes."""
    call = b.call("read", {"path": f"{b.cwd}/src/generated/schema.ts"})
    answer = b.assistant([{"type": "text", "text": "Reading the generated schema"}, call], "length")
    result = b.tool_result(call, "export const schema = {\n" + "  field: string;\n" * 120)
    before = b.path[-3].ctx
    for target in (answer, result):
        b.add("context_edit", {"targetId": target["id"], "replacement": None}, ctx=before, gap=(1, 20))


def _usage(b: Builder) -> None:
    b.add("usage", {"kind": "summary", "provider": b.model.provider, "model": b.model.id,
                    "usage": b.usage(900, b.rng.random()), "note": "title generation"}, gap=(50, 800))


def _checkpointed(b: Builder, state: Pi16State, *, retain_none: bool) -> None:
    """Turn the compaction just added into what 1.6.0's ``appendCompaction`` writes."""
    entry = b.out[-1]
    if retain_none:
        entry["firstKeptEntryId"] = entry["id"]
        b.path[-1].ctx = len(entry["summary"])
    usage = b.usage(len(entry["summary"]), b.rng.random())
    rebuilt = {k: v for k, v in entry.items() if k != "fromHook"} | {"usage": usage, "fromHook": False}
    checkpoint = current_system_message(state.system)
    if checkpoint is not None:
        stamp = datetime.fromisoformat(entry["timestamp"].replace("Z", "+00:00"))
        rebuilt["systemMessage"] = {**checkpoint, "timestamp": int(stamp.timestamp() * 1000)}
        state.system = [rebuilt["systemMessage"]]
    entry.clear()
    entry.update(rebuilt)


def extras(b: Builder, state: Pi16State, every: int) -> Callable[[int], None]:
    """What the shape adds after each turn of the chain."""
    def after(turn: int) -> None:
        roll = b.rng.random()
        if turn % 4 == 0 and state.patches < len(_PATCHES):
            _system(b, state, dict(_PATCHES[state.patches]))
            state.patches += 1
        elif roll < 0.25:
            _elide_old_result(b)
        elif roll < 0.32:
            _recovery(b)
        elif roll < 0.4:
            _usage(b)
        if b.count - b.compacted_at >= every:
            compactions = sum(1 for n in b.path if n.kind == "compaction")
            before = len(b.out)
            b.compact()
            if len(b.out) > before:
                _checkpointed(b, state, retain_none=compactions == 1)

    return after
