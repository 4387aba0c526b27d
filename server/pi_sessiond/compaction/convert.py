"""Message shapes: session entries to agent messages, agent messages to LLM messages.

Messages are plain dicts in Pi's JSON shape (camelCase keys).

Invariants:

* ``convert_to_llm`` (Pi 1.6.0's ``convertToLlm``) returns only ``system``,
  ``user``, ``assistant`` and ``toolResult`` messages, in input order;
  ``bashExecution`` with ``excludeFromContext`` and unknown roles disappear;
  the wrapper strings are byte-identical to Pi's.
* ``system``/``user``/``assistant``/``toolResult`` messages are passed through
  as the same objects (never copied or changed).
* ``entry_message`` maps an unedited entry as Pi's branch summarization does:
  ``message`` -> the stored message, ``custom_message`` -> role ``custom``,
  ``branch_summary`` -> role ``branchSummary`` (even with an empty summary),
  ``compaction`` -> role ``compactionSummary`` only when asked for.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pi_protocol.base import JsonDict
from pi_sessiond.compaction.text import UNDEFINED, js_template, js_truthy
from pi_sessiond.store.entry import Entry
from pi_sessiond.store.kinds import compaction_message, entry_messages, js_time

COMPACTION_SUMMARY_PREFIX = (
    "The conversation history before this point was compacted into the following summary:\n\n<summary>\n"
)
COMPACTION_SUMMARY_SUFFIX = "\n</summary>"
BRANCH_SUMMARY_PREFIX = "The following is a summary of a branch that this conversation came back from:\n\n<summary>\n"
BRANCH_SUMMARY_SUFFIX = "</summary>"

_PASS_THROUGH = frozenset({"system", "user", "assistant", "toolResult"})


def bash_execution_text(msg: JsonDict) -> str:
    """The user-message text Pi sends for a ``bashExecution`` message."""
    text = f"Ran `{js_template(msg.get('command', UNDEFINED))}`\n"
    output = msg.get("output", UNDEFINED)
    text += f"```\n{js_template(output)}\n```" if js_truthy(output) else "(no output)"
    exit_code = msg.get("exitCode")
    if js_truthy(msg.get("cancelled")):
        text += "\n\n(command cancelled)"
    elif exit_code is not None and not _is_zero(exit_code):
        text += f"\n\nCommand exited with code {js_template(exit_code)}"
    if js_truthy(msg.get("truncated")) and js_truthy(msg.get("fullOutputPath")):
        text += f"\n\n[Output truncated. Full output: {js_template(msg['fullOutputPath'])}]"
    return text


def _is_zero(value: Any) -> bool:
    """``value === 0`` in JavaScript (booleans are not numbers there)."""
    return isinstance(value, int | float) and not isinstance(value, bool) and value == 0


def _user(content: Any, msg: JsonDict) -> JsonDict:
    return {"role": "user", "content": content, "timestamp": msg.get("timestamp")}


def _text_block(text: str) -> list[JsonDict]:
    return [{"type": "text", "text": text}]


def _convert_one(msg: JsonDict) -> JsonDict | None:
    role = msg.get("role")
    if role in _PASS_THROUGH:
        return msg
    if role == "bashExecution":
        if js_truthy(msg.get("excludeFromContext")):
            return None
        return _user(_text_block(bash_execution_text(msg)), msg)
    if role == "custom":
        content = msg.get("content")
        return _user(_text_block(content) if isinstance(content, str) else content, msg)
    if role == "branchSummary":
        text = BRANCH_SUMMARY_PREFIX + js_template(msg.get("summary", UNDEFINED))
        return _user(_text_block(text + BRANCH_SUMMARY_SUFFIX), msg)
    if role == "compactionSummary":
        text = COMPACTION_SUMMARY_PREFIX + js_template(msg.get("summary", UNDEFINED))
        return _user(_text_block(text + COMPACTION_SUMMARY_SUFFIX), msg)
    return None


def convert_to_llm(messages: Sequence[JsonDict]) -> list[JsonDict]:
    """Pi's ``convertToLlm``: agent messages to what a provider (or the serializer) sees."""
    converted = (_convert_one(m) for m in messages)
    return [m for m in converted if m is not None]


def branch_summary_message(entry: Entry) -> JsonDict:
    """The ``branchSummary`` message of a ``branch_summary`` entry, even an empty one."""
    data = entry.data
    msg: JsonDict = {"role": "branchSummary"}
    for key in ("summary", "fromId"):
        if data.get(key) is not None:
            msg[key] = data[key]
    msg["timestamp"] = js_time(entry.timestamp)
    return msg


def entry_message(entry: Entry, *, include_compaction: bool) -> JsonDict | None:
    """The agent message an entry contributes to summarization input, if any."""
    kind = entry.type
    if kind == "message":
        return entry.message
    if kind == "branch_summary":
        return branch_summary_message(entry)
    if kind == "compaction":
        return compaction_message(entry) if include_compaction else None
    messages = entry_messages(entry)
    return messages[0] if messages else None
