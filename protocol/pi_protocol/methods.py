"""Method and notification names (PROTOCOL.md). Other tools rely on these strings."""

from __future__ import annotations

from typing import Final

CREATE_SESSION: Final = "pi/createSession"
OPEN_SESSION: Final = "pi/openSession"
CLOSE_SESSION: Final = "pi/closeSession"
LIST_SESSIONS: Final = "pi/listSessions"
APPEND: Final = "pi/append"
GET_CONTEXT: Final = "pi/getContext"
GET_TREE: Final = "pi/getTree"
GET_ENTRIES: Final = "pi/getEntries"
SET_LABEL: Final = "pi/setLabel"
FORK: Final = "pi/fork"
GET_STATS: Final = "pi/getStats"
ESTIMATE_TOKENS: Final = "pi/estimateTokens"
COMPACT: Final = "pi/compact"
NAVIGATE_TREE: Final = "pi/navigateTree"
REPORT_OVERFLOW: Final = "pi/reportOverflow"
GET_SETTINGS: Final = "pi/getSettings"
UPDATE_SETTINGS: Final = "pi/updateSettings"

# daemon -> client notifications
COMPACTION_STARTED: Final = "pi/compactionStarted"
COMPACTION_ENDED: Final = "pi/compactionEnded"
COMPACTED: Final = "pi/compacted"
TREE_NAVIGATED: Final = "pi/treeNavigated"
SESSION_CHANGED: Final = "pi/sessionChanged"

# daemon -> client requests (hooks), only when declared at initialize
BEFORE_COMPACT: Final = "pi/beforeCompact"
BEFORE_TREE: Final = "pi/beforeTree"
REVIEW_SUMMARY: Final = "pi/reviewSummary"
HOOK_NAMES: Final = ("beforeCompact", "beforeTree", "reviewSummary")
