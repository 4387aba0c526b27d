"""The settings tree: every key, its default and its allowed values, once.

SETTINGS has the shape of Pi's ``settings.json`` plus our additions: snake_case
here, camelCase in the files and on the wire through the one converter. Each
section is a frozen attrs class; each leaf is one field line. The field's type
says what is allowed (``Literal`` for a choice, ``X | None`` where ``null`` is
a value; ``dict[str, Any]`` is raw JSON that merges key by key), and
:func:`setting` adds numeric bounds as field metadata (``minimum``,
``exclusiveMinimum``, as JSON Schema names them). Adding a key is adding one
field to its section; a new section is a class plus one field in
:class:`Settings`.

``pi_sessiond.settings`` checks every key of every layer against this tree
(an attrs-typed field is a section, any other field a leaf) and structures the
merged layers into :class:`Settings`; nothing else spells a default or a
choice. Imports attrs only.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Literal

import attrs

from pi_protocol.base import JsonDict, extra_field

MINIMUM = "minimum"
EXCLUSIVE_MINIMUM = "exclusiveMinimum"

Tokenizer = Literal["pi", "cl100k", "calibrated"]
Provider = Literal["offline", "openai", "anthropic"]
Fsync = Literal["always", "never"]
CacheReuse = Literal["off", "auto"]


#: A header whose name matches carries a secret: its value is never shown, logged or echoed.
SENSITIVE_HEADER = re.compile(r"auth|key|token|secret|cookie|password", re.IGNORECASE)
REDACTED = "***"


def redact_headers(headers: Mapping[str, Any]) -> dict[str, Any]:
    """``headers`` with the value of every :data:`SENSITIVE_HEADER` name replaced by :data:`REDACTED`."""
    return {name: REDACTED if SENSITIVE_HEADER.search(name) else value for name, value in headers.items()}


def setting(default: Any, *, minimum: float | None = None, above: float | None = None, doc: str | None = None) -> Any:
    """A leaf field: ``default``, and ``value >= minimum`` / ``value > above`` when given.

    ``doc``: a note shown beside the key in ``docs/protocol.md``.

    ``null`` is kept on the wire (``pi/getSettings`` shows every key), and a
    ``null`` read from a layer is a value, checked against the field's type.
    """
    metadata: dict[str, Any] = {"keep_null": True}
    if minimum is not None:
        metadata[MINIMUM] = minimum
    if above is not None:
        metadata[EXCLUSIVE_MINIMUM] = above
    if doc is not None:
        metadata["doc"] = doc
    return attrs.field(default=default, metadata=metadata)


def section(cls: type[Any]) -> Any:
    """A field holding a whole section (an object that merges key by key)."""
    return attrs.field(factory=cls)


@attrs.frozen(kw_only=True)
class ModelOverride:
    """One ``compaction.modelOverrides["provider/model"]`` value: each field, when set, wins for that model."""

    reserve_tokens: int | None = setting(None, minimum=0)
    keep_recent_tokens: int | None = setting(None, minimum=0)


MASKED_TOOLS = ("read", "bash", "grep", "find", "ls")


@attrs.frozen(kw_only=True)
class MaskingSettings:
    """``compaction.masking.*``: the masking tier (off by default; threshold and overflow only).

    A tool result of one of ``tools``, of at least ``min_tokens``, with at least
    ``older_than_tokens`` of context after it, is replaced through a
    ``context_edit`` by a short placeholder (the original stays in the file).
    """

    enabled: bool = setting(False)
    tools: list[str] = attrs.field(factory=lambda: list(MASKED_TOOLS), metadata={"keep_null": True})
    min_tokens: int = setting(500, minimum=0)
    older_than_tokens: int = setting(40000, minimum=0)


@attrs.frozen(kw_only=True)
class CompactionSettings:
    """``compaction.*`` (Pi's ``DEFAULT_COMPACTION_SETTINGS``); the pure compaction code takes this.

    ``reserve_tokens`` only sets the trigger (Pi 1.6.0); the summary's output
    limit is the summarizer's. ``model_overrides`` maps ``"provider/model"`` to
    per-field values, resolved for the session's model by
    ``pi_sessiond.settings.compaction_for`` (a map of sections: each entry is
    checked field by field, so an invalid field falls back alone).
    ``prepare_at`` (``null``: off): once the context passes that fraction of the
    threshold (``contextWindow - reserveTokens``), a compaction draft is made in
    the background, and committed when the threshold is reached (a value of 1
    or more never prepares early).
    ``auto_per_turn``: automatic compactions allowed per user turn (``0``: no
    limit); ``null`` keeps Pi's rule (one per turn, checked on an assistant
    message's own usage) for sessions whose newest answer Pi wrote (it carries
    Pi's ``api`` and ``usage``) and sets no limit for the others, where the
    context's own count is checked on every append. Either way, after an automatic
    compaction that failed (one that would free nothing is refused), the next waits until
    the context grew by a tenth of the window or a user message came.
    """

    enabled: bool = setting(True)
    reserve_tokens: int = setting(16384, minimum=0)
    keep_recent_tokens: int = setting(20000, minimum=0)
    model_overrides: dict[str, ModelOverride] = attrs.field(factory=dict)
    masking: MaskingSettings = section(MaskingSettings)
    prepare_at: float | None = setting(None, above=0)
    auto_per_turn: int | None = setting(None, minimum=0)


@attrs.frozen(kw_only=True)
class BranchSummarySettings:
    """``branchSummary.*``."""

    reserve_tokens: int = setting(16384, minimum=0)


@attrs.frozen(kw_only=True)
class SummarizerSection:
    """``summarizer.*``: how to reach the summarizer model (the key itself is never a setting)."""

    provider: Provider = setting("offline")
    base_url: str | None = setting(None)
    model: str | None = setting(None)
    api_key_env: str | None = setting(None)
    context_window: int = setting(128000, above=0)
    max_tokens: int | None = setting(None, above=0)
    headers: dict[str, str] = attrs.field(factory=dict)
    timeout_seconds: float = setting(120, above=0)
    parallel_split_turn: bool = setting(False)
    cache_reuse: CacheReuse = setting(
        "auto", doc="`auto`: a compaction replays the agent's last request (recorded by `pi/recordRequest`) plus "
        "one summary instruction when that is the agent's own model, its prompt cache is still warm and the priced "
        "estimate is below the serialized request's; `off`: always Pi 1.6.0's serialized request")
    prices: dict[str, Any] = attrs.field(factory=dict, metadata={
        "keep_null": True, "doc": '`{"<provider>/<model>": {input, output, cacheRead, cacheWrite}}` in $ per million '
        "tokens, for `usage.cost` where Pi's `models.json` and the built-in table have no price"})


@attrs.frozen(kw_only=True)
class RetrySettings:
    """``retry.*``: the one retry layer of summarizer calls (transient errors only).

    The n-th retry waits ``base_delay_ms * 2**(n-1)``, or the server's
    ``Retry-After``, and never more than ``max_agent_delay_ms``.
    """

    enabled: bool = setting(True)
    max_retries: int = setting(3, minimum=0)
    base_delay_ms: int = setting(2000, minimum=0)
    max_agent_delay_ms: int = setting(60000, minimum=0)


@attrs.frozen(kw_only=True)
class DaemonSettings:
    """``daemon.*``: limits and durability of the daemon itself (global-only: a project file cannot set them).

    ``max_batch_items`` caps the items of one JSON-RPC batch; the replies of a
    batch together stay under ``max_message_bytes``. ``max_connections`` and
    ``idle_connection_seconds`` are read by the TCP, WebSocket and Unix listeners.
    ``open_index``: keep an index of each large session file (20,000 lines or
    more) in ``$XDG_CACHE_HOME/pi-sessiond/open-index/`` so the next daemon
    reopens it reading only what it needs (``store/openindex.py``; Pi has no such setting).
    ``tail_open_bytes``: a file at least this large is opened from its end
    (``store/tailopen.py``, ``service/sessions/loading.py``; not in Pi either).
    """

    hook_timeout_seconds: float | None = setting(30, above=0)
    review_timeout_seconds: float | None = setting(None, above=0)
    fsync: Fsync = setting("always")
    max_message_bytes: int = setting(64 * 1024 * 1024, above=0)
    max_concurrent_summaries: int = setting(4, above=0)
    live_writer_seconds: float = setting(30, minimum=0)
    lock_idle_seconds: float | None = setting(60, above=0)
    max_batch_items: int = setting(1000, above=0)
    max_connections: int = setting(64, above=0)
    idle_connection_seconds: float = setting(600, above=0)
    max_session_bytes: int = setting(4 * 1024**3, above=0)
    open_index: bool = setting(True, doc="keep an index of each session file of 20,000 lines or more in "
                               "`$XDG_CACHE_HOME/pi-sessiond/open-index/`, so a reopen reads only what it needs "
                               "(a pi-sessiond addition)")
    tail_open_bytes: int = setting(32 * 1024 * 1024, minimum=0,
                                   doc="open a session file of at least this many bytes from its end: "
                                   "`pi/getContext` of its leaf is answered before the whole file is read "
                                   "(SESSION `loading: true`, then `pi/sessionLoaded`); 0 turns it off "
                                   "(a pi-sessiond addition)")


@attrs.frozen(kw_only=True)
class SecuritySettings:
    """``security.*`` (global-only, like ``daemon.*``).

    ``allow_wire_api_key_env``: over a network transport (TCP, WebSocket) a client
    may set ``summarizer.apiKeyEnv``, ``baseUrl`` and ``headers`` only when this is
    true in the global settings file; stdio clients always may.
    """

    allow_project_summarizer_settings: bool = setting(False)
    allow_wire_api_key_env: bool = setting(False)


@attrs.frozen(kw_only=True)
class Settings:
    """The whole tree, as merged from every layer (``pi/getSettings`` shows it unstructured)."""

    compaction: CompactionSettings = section(CompactionSettings)
    branch_summary: BranchSummarySettings = section(BranchSummarySettings)
    context_window: int | None = setting(None, above=0)
    models: dict[str, Any] = attrs.field(factory=dict)
    summarizer: SummarizerSection = section(SummarizerSection)
    retry: RetrySettings = section(RetrySettings)
    tokenizer: Tokenizer = setting("pi")
    daemon: DaemonSettings = section(DaemonSettings)
    security: SecuritySettings = section(SecuritySettings)


DEFAULT_SETTINGS = Settings()


@attrs.define(kw_only=True)
class SettingsIssue:
    """A settings value that was not applied: ``file`` (a path) and the dotted ``key`` in it."""

    file: str
    key: str
    message: str


@attrs.define(kw_only=True)
class InitializationOptions:
    """``initializationOptions`` of ``initialize``.

    ``secret``: the daemon's secret, required on TCP and WebSocket (the transport
    checks it and removes it before anything else sees it).
    """

    settings: dict[str, Any] | None = None
    sessions_dir: str | None = None
    secret: str | None = None
    extra: JsonDict = extra_field()
