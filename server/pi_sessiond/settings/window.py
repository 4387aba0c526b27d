"""Token budgets that follow ``contextWindow``, and the budgets that cannot work in it.

Rules (pure; applied by :func:`pi_sessiond.settings.layers.resolve`):

- When ``contextWindow`` is set and no layer sets ``compaction.reserveTokens``,
  ``compaction.keepRecentTokens``, ``compaction.masking.minTokens`` or
  ``compaction.masking.olderThanTokens``, each unset one is Pi's default capped
  by a share of the window: reserve 1/6, keep 1/5, masking's age 1/5 and its
  minimum size 1/50. Pi's values stay unchanged for windows of 100,000 tokens
  or more (the 128k and 200k class).
- ``reserveTokens + keepRecentTokens >= contextWindow`` can never compact into
  the window: it is reported as an issue naming both keys (nothing is dropped).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pi_protocol.base import JsonDict
from pi_protocol.settings import Settings, SettingsIssue

_ADVICE = "lower one of them"

#: (section path, key, the share of the window that caps Pi's default)
SCALED: tuple[tuple[tuple[str, ...], str, int], ...] = (
    (("compaction",), "reserveTokens", 6),
    (("compaction",), "keepRecentTokens", 5),
    (("compaction", "masking"), "olderThanTokens", 5),
    (("compaction", "masking"), "minTokens", 50),
)


def scale_to_window(merged: JsonDict, layers: Sequence[Mapping[str, Any]]) -> JsonDict:
    """``merged`` with every budget no layer of ``layers`` (the non-default ones) sets scaled to ``contextWindow``."""
    window = merged.get("contextWindow")
    if not isinstance(window, int) or isinstance(window, bool) or window <= 0:
        return merged
    for path, key, share in SCALED:
        if any(_has(layer, (*path, key)) for layer in layers):
            continue
        section = _section(merged, path)
        default = section.get(key)
        if isinstance(default, int):
            section[key] = min(default, window // share)
    return merged


def contradictions(settings: Settings, file: str) -> list[SettingsIssue]:
    """The issue of a reserve and a kept tail that together fill ``contextWindow`` (none without a window)."""
    window = settings.context_window
    compaction = settings.compaction
    if window is None or compaction.reserve_tokens + compaction.keep_recent_tokens < window:
        return []
    message = (f"compaction.reserveTokens ({compaction.reserve_tokens}) + compaction.keepRecentTokens "
               f"({compaction.keep_recent_tokens}) >= contextWindow ({window}): a compaction cannot bring the "
               f"context under the threshold; {_ADVICE}")
    return [SettingsIssue(file=file, key="compaction.reserveTokens", message=message)]


def is_contradiction(issue: SettingsIssue) -> bool:
    """Whether ``issue`` is one :func:`contradictions` reports (a warning: no value was dropped)."""
    return issue.key == "compaction.reserveTokens" and issue.message.endswith(_ADVICE)


def _has(layer: Mapping[str, Any], path: Sequence[str]) -> bool:
    node: Any = layer
    for part in path:
        if not isinstance(node, Mapping) or part not in node:
            return False
        node = node[part]
    return True


def _section(merged: JsonDict, path: Sequence[str]) -> JsonDict:
    node = merged
    for part in path:
        node = node.setdefault(part, {})
    return node
