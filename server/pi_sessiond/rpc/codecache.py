"""The code attrs and cattrs generate for classes, compiled once and kept across daemon starts.

attrs writes the methods of every class it makes as source text and compiles it
(lsprotocol's ~700 types, the wire's classes, the services'), and cattrs does the
same for its (un)structure functions: compiling those snippets is about half the
time of importing ``lsprotocol.types``, which every pygls server pays before it
can answer ``initialize``. ``pi-sessiond serve`` calls :func:`install` before
pygls is imported: the ``compile`` of those code generators (:data:`GENERATORS`)
then answers from the code objects an earlier start kept and compiles only what
it has not seen. :func:`finish`, once the connection's daemon exists, writes what
this start used back (only when something new was compiled) and gives the
generators the builtin ``compile`` again.

Rules:

* a code object is reused only for the same source text, file name and compiler
  flags (the generator module's ``__future__`` imports, as the builtin inherits
  them), on the interpreter that made it: the file is named by the bytecode magic
  number and the optimization level. ``compile`` is a function of exactly those,
  so every class is the same with or without the cache;
* the file is ``$XDG_CACHE_HOME/pi-sessiond/generated-code/<tag>.code``, a regular
  0600 file of ours in a 0700 folder of ours (``store.layout.private_dir``);
  anything else, or a file that does not load as a table of code objects, is not
  used: everything compiles as without it, and :func:`finish` replaces it;
* it holds what the last start that compiled something used, so it does not
  grow across upgrades of attrs, cattrs or lsprotocol. A class with a generated
  ``__hash__`` compiles at every start (its source holds the process's string
  hash of the class name), so a start writes the file again;
* reading it (a few ms) is the only work on the way to the ``initialize`` reply;
  it is written after the reply, to a temporary file renamed over the old one.

``STATS`` counts code objects reused and compiled (``debug/stats``).
"""

from __future__ import annotations
import __future__

import builtins
import contextlib
import hashlib
import importlib
import logging
import marshal
import os
import stat
import sys
from collections.abc import Callable
from importlib.util import MAGIC_NUMBER
from pathlib import Path
from types import CodeType, ModuleType
from typing import Any

from pi_sessiond.store import layout

logger = logging.getLogger(__name__)

GENERATORS = ("attr._make", "cattrs.gen", "cattrs.gen.typeddicts")
"""The modules whose ``compile`` calls make the classes' generated code."""

HEADER = b"pi-sessiond generated code 1\n"

STATS = {"reused": 0, "compiled": 0}

_known: dict[bytes, CodeType] = {}
_used: dict[bytes, CodeType] = {}
_patched: list[tuple[ModuleType, Callable[..., Any]]] = []
_path: Path | None = None
_compiled_before = 0  # STATS["compiled"] when the cache was installed


def cache_file() -> Path:
    """This interpreter's file in ``$XDG_CACHE_HOME/pi-sessiond/generated-code``."""
    tag = f"{sys.implementation.cache_tag}-{MAGIC_NUMBER.hex()}-O{sys.flags.optimize}"
    return layout.cache_root() / "generated-code" / f"{tag}.code"


def install(path: Path | None = None) -> None:
    """Read the kept code (``path`` defaults to :func:`cache_file`) and give the generators the caching ``compile``."""
    if _patched:
        return
    global _path, _compiled_before
    try:
        _path, _compiled_before = path or cache_file(), STATS["compiled"]
    except RuntimeError:  # no home folder to find the cache in: every start compiles
        return
    _known.update(_read(_path))
    for name in GENERATORS:
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        compile_cached = _compiler(_inherited_flags(module))
        _patched.append((module, compile_cached))
        module.compile = compile_cached  # type: ignore[attr-defined]  # a module global shadows the builtin


def finish() -> None:
    """Write what this start used (when it compiled anything) and give the generators the builtin back."""
    if not _patched:
        return
    for module, compile_cached in _patched:
        if module.__dict__.get("compile") is compile_cached:
            del module.compile
    _patched.clear()
    used = dict(_used)
    _known.clear()
    _used.clear()
    if _path is not None and STATS["compiled"] > _compiled_before:
        _write(_path, used)


def _compiler(inherited: int) -> Callable[..., Any]:
    def compile_cached(source: Any, filename: Any, mode: str, flags: int = 0, dont_inherit: bool = False,
                       optimize: int = -1, **rest: Any) -> Any:
        if not dont_inherit:  # what the builtin would inherit from the generator's module
            flags |= inherited
        if mode != "exec" or optimize != -1 or rest or not isinstance(source, str) or not isinstance(filename, str):
            return builtins.compile(source, filename, mode, flags, True, optimize, **rest)
        key = _key(source, filename, flags)
        code = _known.get(key)
        if type(code) is CodeType:
            STATS["reused"] += 1
        else:
            code = builtins.compile(source, filename, mode, flags, True)
            STATS["compiled"] += 1
        _used[key] = code
        return code

    return compile_cached


def _inherited_flags(module: ModuleType) -> int:
    """The compiler flags of ``module``'s ``from __future__`` imports."""
    flags, features = 0, vars(__future__)
    for name in __future__.all_feature_names:
        if name in module.__dict__ and module.__dict__[name] is features[name]:
            flags |= features[name].compiler_flag
    return flags


def _key(source: str, filename: str, flags: int) -> bytes:
    digest = hashlib.blake2b(f"{flags}\0{filename}\0".encode("utf-8", "surrogatepass"), digest_size=20)
    digest.update(source.encode("utf-8", "surrogatepass"))
    return digest.digest()


def _read(path: Path) -> dict[bytes, CodeType]:
    if not layout.private_dir(path.parent, create=False):
        return {}
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return {}
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o077:
            logger.debug("generated code %s is not a 0600 file of ours: not used", path)
            return {}
        with open(fd, "rb", closefd=False) as fh:
            blob = fh.read()
    except OSError:
        return {}
    finally:
        os.close(fd)
    if not blob.startswith(HEADER):
        return {}
    try:
        table = marshal.loads(memoryview(blob)[len(HEADER):])
    except (EOFError, ValueError, TypeError) as exc:
        logger.debug("generated code %s not used: %s", path, exc)
        return {}
    return table if isinstance(table, dict) else {}


def _write(path: Path, used: dict[bytes, CodeType]) -> None:
    import tempfile  # only here: its import (~2 ms) would count in every start's way to the reply

    try:
        if not layout.private_dir(path.parent, create=True):
            logger.debug("generated-code folder %s is not a 0700 folder of ours: not written", path.parent)
            return
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".code")  # 0600, O_EXCL
        try:
            with open(fd, "wb") as fh:
                fh.write(HEADER + marshal.dumps(used))
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
    except (OSError, ValueError) as exc:
        logger.debug("generated code not kept: %s", exc)
