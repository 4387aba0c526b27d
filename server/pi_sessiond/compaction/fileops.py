"""File operations that compaction and branch summaries carry forward.

Invariants:

* ``toolCall`` blocks of ``assistant`` messages count, and so do the calls a
  codemode script made, recorded on its tool result's ``nestedCalls.calls``
  (Pi 1.6.0 counts both); each only when
  ``arguments.path`` is a non-empty string: ``read`` -> read, ``write`` ->
  written, ``edit`` -> edited. Other tools and argument keys are ignored (a
  nested call with only ``argumentsBytes`` has no path).
* Details of an earlier summary entry are folded in only when the entry is
  not ``fromHook`` and has truthy ``details``: ``readFiles`` -> read,
  ``modifiedFiles`` -> edited.
* ``compute_file_lists``: modified = edited | written, read-only = read -
  modified, both sorted in JavaScript's default order (UTF-16 code units).
* ``format_file_operations`` is ``""`` without files, else ``"\\n\\n"`` plus
  the non-empty ``<read-files>`` / ``<modified-files>`` blocks joined by a
  blank line.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import attrs

from pi_protocol.base import JsonDict
from pi_sessiond.compaction.text import js_sorted, js_truthy


@attrs.frozen
class FileOperations:
    """Pi's ``FileOperations`` sets, frozen."""

    read: frozenset[str] = frozenset()
    written: frozenset[str] = frozenset()
    edited: frozenset[str] = frozenset()


@attrs.frozen
class FileLists:
    """``computeFileLists`` result: read-only files and modified files, sorted."""

    read_files: tuple[str, ...]
    modified_files: tuple[str, ...]


@attrs.define
class FileOpsCollector:
    """Mutable accumulator used while scanning; ``freeze()`` gives the result."""

    read: set[str] = attrs.field(factory=set)
    written: set[str] = attrs.field(factory=set)
    edited: set[str] = attrs.field(factory=set)

    def add_message(self, message: JsonDict | None) -> None:
        """Pi's ``extractFileOpsFromMessage``."""
        if message is not None:
            self.add_messages((message,))

    def add_messages(self, messages: Iterable[JsonDict]) -> None:
        """``extractFileOpsFromMessage`` of each message."""
        targets = {"read": self.read, "write": self.written, "edit": self.edited}
        for tool, path in file_op_paths(messages):
            targets[tool].add(path)

    def add_details(self, entry_data: JsonDict) -> None:
        """Fold in a summary entry's ``details`` unless it came from a hook."""
        if js_truthy(entry_data.get("fromHook")):
            return
        details = entry_data.get("details")
        if not js_truthy(details) or not isinstance(details, dict):
            return
        self.read.update(_strings(details.get("readFiles")))
        self.edited.update(_strings(details.get("modifiedFiles")))

    def freeze(self) -> FileOperations:
        """The collected sets as an immutable value."""
        return FileOperations(frozenset(self.read), frozenset(self.written), frozenset(self.edited))


_FILE_TOOLS = frozenset(("read", "write", "edit"))


def file_op_paths(messages: Iterable[JsonDict]) -> Iterator[tuple[str, str]]:
    """``(tool, path)`` of every file operation in ``messages``, in order (tool: read, write or edit).

    Hot (every message of a compacted range), so kept flat.
    """
    for message in messages:
        role = message.get("role")
        if role == "assistant":
            blocks = message.get("content")
            wanted: str | None = "toolCall"
        elif role == "toolResult":
            nested = message.get("nestedCalls")
            if nested is None:
                continue
            blocks = nested.get("calls") if type(nested) is dict else None
            wanted = None
        else:
            continue
        if type(blocks) is not list:
            continue
        for block in blocks:
            if type(block) is not dict or (wanted is not None and block.get("type") != wanted):
                continue
            args = block.get("arguments")
            path = args.get("path") if type(args) is dict else None
            tool = block.get("name")
            if type(path) is str and path and type(tool) is str and tool in _FILE_TOOLS:
                yield tool, path


def _strings(values: Any) -> Iterable[str]:
    if not isinstance(values, list):
        return ()
    return (v for v in values if isinstance(v, str))


def compute_file_lists(ops: FileOperations) -> FileLists:
    """Read-only and modified files, each sorted the way JavaScript sorts strings."""
    modified = ops.edited | ops.written
    read_only = ops.read - modified
    return FileLists(tuple(js_sorted(read_only)), tuple(js_sorted(modified)))


def format_file_operations(read_files: Iterable[str], modified_files: Iterable[str]) -> str:
    """The ``<read-files>`` / ``<modified-files>`` suffix Pi appends to a summary."""
    read = list(read_files)
    modified = list(modified_files)
    sections = []
    if read:
        sections.append("<read-files>\n" + "\n".join(read) + "\n</read-files>")
    if modified:
        sections.append("<modified-files>\n" + "\n".join(modified) + "\n</modified-files>")
    return "\n\n" + "\n\n".join(sections) if sections else ""
