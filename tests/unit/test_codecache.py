"""The generated code kept across starts (:mod:`pi_sessiond.rpc.codecache`): same classes, only our own files."""

from __future__ import annotations
import __future__

import os
from collections.abc import Iterator
from pathlib import Path

import attr._make
import attrs
import cattrs
import pytest

from pi_sessiond.rpc import codecache


def make() -> tuple[type, dict[str, object]]:
    """A class attrs generates methods for (a ``__hash__`` too) and one cattrs structure function run."""

    @attrs.define(frozen=True)
    class Point:
        x: int
        tags: tuple[str, ...] = ()

    return Point, {"structured": cattrs.Converter().structure({"x": 1, "tags": ["a"]}, Point)}


@pytest.fixture
def kept(tmp_path: Path) -> Iterator[Path]:
    """The cache file's path; the generators get the builtin ``compile`` back whatever the test does."""
    try:
        yield tmp_path / "generated-code" / "test.code"
    finally:
        codecache.finish()


def counted(path: Path) -> tuple[type, dict[str, int]]:
    """One start: install, make the classes, finish; the class and what was reused and compiled."""
    before = dict(codecache.STATS)
    codecache.install(path)
    cls, done = make()
    assert done["structured"] == cls(1, ("a",))
    codecache.finish()
    return cls, {name: codecache.STATS[name] - before[name] for name in before}


def test_kept_code_makes_the_same_classes(kept: Path) -> None:
    plain, _ = make()
    cold, first = counted(kept)
    warm, second = counted(kept)
    assert first["compiled"] >= 2 and second == {"reused": first["compiled"], "compiled": 0}
    for name in ("__init__", "__repr__", "__eq__", "__hash__"):
        codes = [getattr(cls, name).__code__ for cls in (plain, cold, warm)]
        assert codes[0] == codes[1] == codes[2], name
        assert len({code.co_flags for code in codes}) == 1, name
    assert warm(2) == warm(2) and hash(warm(2)) == hash(warm(2)) and repr(warm(2)) == repr(plain(2))
    assert "compile" not in vars(attr._make)  # the builtin again


def test_the_file_is_private(kept: Path) -> None:
    counted(kept)
    assert kept.stat().st_mode & 0o777 == 0o600 and kept.parent.stat().st_mode & 0o777 == 0o700


def test_the_generators_future_imports_are_kept() -> None:
    """The builtin inherits the caller's ``from __future__`` flags: the generator's, not this module's."""
    annotations = __future__.annotations.compiler_flag
    assert codecache._inherited_flags(attr._make) & annotations
    source = "def f(x: not_defined_anywhere) -> None: pass"
    exec(codecache._compiler(annotations)(source, "<t>", "exec"), {})
    with pytest.raises(NameError):
        exec(codecache._compiler(0)(source, "<t>", "exec"), {})


def damage(path: Path, how: str) -> None:
    if how == "garbage":
        path.write_bytes(codecache.HEADER + b"\xff not marshal")
    elif how == "other header":
        path.write_bytes(b"x" + path.read_bytes())
    elif how == "not a table":
        import marshal

        path.write_bytes(codecache.HEADER + marshal.dumps([1, 2]))
    elif how == "others may write":
        path.chmod(0o664)
    elif how == "symlink":
        target = path.with_name("elsewhere.code")
        path.rename(target)
        path.symlink_to(target)
    elif how == "open folder":
        path.parent.chmod(0o755)


@pytest.mark.parametrize("how", ["garbage", "other header", "not a table", "others may write", "symlink"])
def test_a_file_that_is_not_ours_or_damaged_is_not_used_and_is_replaced(kept: Path, how: str) -> None:
    counted(kept)
    damage(kept, how)
    _, second = counted(kept)
    assert second["reused"] == 0 and second["compiled"] >= 2
    assert not kept.is_symlink() and kept.stat().st_mode & 0o777 == 0o600
    _, third = counted(kept)
    assert third == {"reused": second["compiled"], "compiled": 0}


def test_a_folder_others_may_enter_is_neither_read_nor_written(kept: Path) -> None:
    counted(kept)
    damage(kept, "open folder")
    written = os.stat(kept).st_mtime_ns
    _, second = counted(kept)
    assert second["reused"] == 0 and os.stat(kept).st_mtime_ns == written
